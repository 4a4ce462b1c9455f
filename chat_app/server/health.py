"""What load balancers and scripts ask of the server itself: `GET /api/health`, and a JSON
answer for an `/api/…` address nothing here serves.

`GET /api/health` needs no identity (a load balancer has none) and says nothing about anyone:
`{"status": "ok"}` with 200 when the app's database and its ledger answer, `{"status":
"unavailable", "error": …}` with 503 when one does not (nothing can be decided then), naming
only the kind of error (the log has its words). Without a desk there is no database to ask.

An unknown `/api/…` path is a 404 `{"error": …, "code": "unknown"}`, and a known one asked with
another method a 405 naming the methods it takes, as JSON like every other answer of the API
(behind Reflex, its page for an unknown address would answer instead).

Owns `health_routes` and `api_fallback`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Receive, Scope, Send

from chat_app.trust.ledger import Ledger

__all__ = ["HEALTH_SECONDS", "api_fallback", "health_routes"]

#: How long a health check waits for the database (a load balancer's own timeout is ~5 s).
HEALTH_SECONDS = 3.0

_log = logging.getLogger(__name__)


def health_routes(database: Engine | None, ledger: Ledger | None) -> list[Route]:
    """`GET /api/health`, asking `database` (the desk's) and `ledger` whether they answer."""
    # (what is asked, how it is named, the errors that mean it did not answer, whether the
    # answer names the error's kind: the ledger's are its store's, which say little more)
    probes: list[tuple[_OneAtATime, str, tuple[type[Exception], ...], bool]] = []
    if ledger is not None:
        probes.append((_OneAtATime(ledger.check), "The ledger", (Exception,), False))
    if database is not None:
        probes.append(
            (_OneAtATime(partial(_ask, database)), "The app's database", (SQLAlchemyError,), True)
        )

    async def health(_: Request) -> Response:
        for ask, what, errors, named in probes:
            try:
                await ask()
            except TimeoutError:  # a store that takes no calls: the checker hears it now
                return _unavailable(f"{what} did not answer within {HEALTH_SECONDS:g} s.")
            except errors as error:  # its words, which may name its address: logged only
                _log.warning("Health check: %s did not answer: %s", what, error)
                kind = f" ({type(error).__name__})" if named else ""
                return _unavailable(f"{what} did not answer{kind}.")
        return JSONResponse({"status": "ok"})

    return [Route("/api/health", health, methods=["GET"])]


class _OneAtATime:
    """`check` in a worker thread, waited for at most `HEALTH_SECONDS`; while one is still
    running (a store that has gone silent), later callers wait for that one rather than
    start another: a load balancer asking every few seconds would otherwise hold a thread
    each time, and the threads are the app's (token sign-in, the desk, the ledger)."""

    def __init__(self, check: Callable[[], object]) -> None:
        self._check = check
        self._running: asyncio.Future[object] | None = None

    async def __call__(self) -> None:
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(asyncio.to_thread(self._check))
            # Its error is read by whoever waits in time; one that comes later is not lost
            # to asyncio's "never retrieved" warning.
            self._running.add_done_callback(lambda done: done.cancelled() or done.exception())
        await asyncio.wait_for(asyncio.shield(self._running), HEALTH_SECONDS)


def _unavailable(reason: str) -> Response:
    return JSONResponse({"status": "unavailable", "error": reason}, status_code=503)


def _ask(database: Engine) -> None:
    with database.connect() as connection:
        connection.execute(text("SELECT 1"))


def api_fallback(routes: list[BaseRoute]) -> Route:
    """The last of `routes`: every `/api/…` request none of them took, whatever its method
    (TRACE and WebDAV's too: Starlette routes any method to an ASGI app given no methods,
    where a handler given a list would leave its own plain-text 405 for the rest)."""
    return Route("/api/{rest:path}", _Fallback(routes))


class _Fallback:
    """An ASGI app, not a handler function, so that Starlette leaves its methods open."""

    def __init__(self, routes: list[BaseRoute]) -> None:
        self._routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = self._answer(Request(scope, receive))
        await response(scope, receive, send)

    def _answer(self, request: Request) -> Response:
        allowed: set[str] = set()
        for route in self._routes:  # the path matched with any method: one it takes is a 405
            match, _ = route.matches({**request.scope, "method": "GET"})
            methods = getattr(route, "methods", None)
            if match is not Match.NONE and methods:
                allowed |= set(methods)
        path = request.url.path
        if allowed:
            methods_said = ", ".join(sorted(allowed - {"HEAD"}))
            return JSONResponse(
                {"error": f"{path} takes {methods_said}, not {request.method}.",
                 "code": "method"},
                status_code=405,
                headers={"Allow": ", ".join(sorted(allowed))},
            )  # fmt: skip
        return JSONResponse(
            {"error": f"There is nothing at {path}.", "code": "unknown"}, status_code=404
        )

"""HTTP: `POST /api/chat` (AG-UI `RunAgentInput` in, SSE out), `GET /api/tools`, the
audit trail (`GET /api/audit` as JSON with its chain check, `GET /api/audit.jsonl`), with
an `Authenticator` the sign-in routes (`signin.py`), and with a `Desk` the approval desk's
routes (`desk_routes.py`: stored conversations and the inbox).

With an authenticator, `POST /api/chat` and the audit trail need an identity (401 without
one), the audit trail the role `admin` or `auditor` (403), and the run is the verified
identity's; without one (library use), every request is anonymous, as before.

Owns `create_app`. A malformed request gets HTTP 400 (or 413 when too large) with a message
naming the field; nothing runs. A continuation the engine refuses is an in-stream `RUN_ERROR`
with HTTP 200, as in TanStack AI.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager

import orjson
from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from chat_app.agent import Agent, event_to_wire
from chat_app.desk import Desk
from chat_app.interrupts import SSE_HEADERS, encode_sse_event
from chat_app.interrupts.strict_json import MAX_NESTING, has_long_digit_run, strict_loads
from chat_app.server._body import read_body
from chat_app.server._coalesce import HEARTBEAT_SECONDS, send_coalesced
from chat_app.server.desk_routes import desk_routes
from chat_app.server.health import api_fallback, health_routes
from chat_app.server.metrics import MetricsSource, metrics_routes
from chat_app.server.run_input import (
    TooDeep,
    UnreadableAnswers,
    check_answers_of,
    read_run_input,
    read_run_input_json,
)
from chat_app.server.signin import identify, identity_json, signin_routes, unauthorized
from chat_app.trust import ANONYMOUS, Identity, LedgerUnavailable, audit_report
from chat_app.trust.authn import Authenticator, AuthFailure
from chat_app.trust.identity import AUDIT_ROLES

MAX_BODY_BYTES = 4 * 1024 * 1024

_log = logging.getLogger(__name__)


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def create_app(
    agent: Agent,
    *,
    authenticator: Authenticator | None = None,
    roles: Callable[[Identity], frozenset[str]] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    desk: Desk | None = None,
    recover: bool = True,
    metrics: MetricsSource | None = None,
    background: Sequence[Callable[[], Awaitable[None]]] = (),
    heartbeat_seconds: float | None = HEARTBEAT_SECONDS,
) -> Starlette:
    """A Starlette app serving `agent`; mount it on any ASGI server or on Reflex's backend.

    `authenticator` decides who each request is from (`None`, or its mode `none`: everyone is
    anonymous and may do anything); `roles` gives an identity's roles (default: the ones it
    carries; a policy adds its own). With a `desk`, its routes are served too (each request
    as the same identity the chat route sees), and while the app runs (its lifespan) the desk
    looks for runs a dead worker left behind (`Desk.keep_recovering`), unless `recover` is
    off (a host that runs it itself, as the Reflex app does in its own lifespan). With
    `metrics`, `GET /metrics` serves its figures (`metrics.py`). `background` tasks (the
    desk's timers, the outbox's deliverer) run from start to shutdown too. A run's stream
    that is quiet for `heartbeat_seconds` (a model thinking) sends an SSE comment, so that
    clients and proxies do not take it for a dead one (`None`: never).
    """
    if heartbeat_seconds is not None and not heartbeat_seconds > 0:
        raise ValueError(f"heartbeat_seconds must be above 0 (or None), not {heartbeat_seconds!r}.")
    roles_of = roles if roles is not None else _own_roles
    # `none` is open, as without an authenticator: anyone may read the trail.
    guarded = authenticator is not None and authenticator.mode != "none"

    async def who(request: Request) -> Identity | AuthFailure:
        if authenticator is None:
            return ANONYMOUS
        return await identify(authenticator, request)

    async def chat(request: Request) -> Response:
        identity = await who(request)
        if isinstance(identity, AuthFailure):
            return unauthorized(identity)
        try:
            run_input = await _read_run_input(request, max_body_bytes)
        except BadRequest as error:
            return JSONResponse({"error": str(error)}, status_code=error.status)
        return EventStream(
            _stream(agent, run_input, identity), headers=SSE_HEADERS, heartbeat=heartbeat_seconds
        )

    async def tools(_: Request) -> Response:
        return JSONResponse({"tools": agent.tool_manifest()})

    async def audit(request: Request) -> Response:
        identity = await who(request)
        if isinstance(identity, AuthFailure):
            return unauthorized(identity)
        if guarded and not roles_of(identity) & AUDIT_ROLES:
            return JSONResponse(
                {"error": "The audit trail is for the roles admin and auditor."},
                status_code=403,
            )
        if agent.ledger is None:
            return JSONResponse({"error": "This server keeps no ledger."}, status_code=404)
        try:
            records = await asyncio.to_thread(agent.ledger.records)
        except LedgerUnavailable as error:  # its address is for the log
            _log.warning("The audit trail could not be read: %s", error)
            return JSONResponse(
                {"error": "The audit trail cannot be read just now: the ledger does not answer.",
                 "code": "unavailable"},
                status_code=503,
            )  # fmt: skip
        if request.url.path.endswith(".jsonl"):
            lines = "".join(record.to_json() + "\n" for record in records)
            return Response(
                lines,
                media_type="application/jsonl",
                headers={"Content-Disposition": 'attachment; filename="audit.jsonl"'},
            )
        return JSONResponse(audit_report(records))

    async def me(_: Request) -> Response:
        return JSONResponse(identity_json(ANONYMOUS, ANONYMOUS.roles))

    account_routes = (
        signin_routes(authenticator, roles_of)
        if authenticator is not None
        else [Route("/api/me", me, methods=["GET"])]
    )
    routes: list[BaseRoute] = [
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/tools", tools, methods=["GET"]),
        Route("/api/audit", audit, methods=["GET"]),
        Route("/api/audit.jsonl", audit, methods=["GET"]),
        *account_routes,
        *(desk_routes(desk, who) if desk is not None else ()),
        *(metrics_routes(metrics, who, roles_of, unguarded=not guarded) if metrics else ()),
        *health_routes(desk.store.engine if desk is not None else None, agent.ledger),
    ]
    return Starlette(
        routes=[*routes, api_fallback(routes)],
        lifespan=_background(
            [*([desk.keep_recovering] if desk is not None and recover else []), *background]
        ),
    )


def _background(
    tasks: Sequence[Callable[[], Awaitable[None]]],
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]] | None:
    """A lifespan that runs `tasks` in the background from start to shutdown (the desk's
    look for interrupted runs, its timers, the outbox's deliverer). At shutdown each is
    cancelled and given `STOP_SECONDS` to finish what it does as it stops (the deliverer
    giving back its sends), as Reflex gives the app's own."""
    if not tasks:
        return None

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        running = [asyncio.ensure_future(task()) for task in tasks]

        def failed(task: asyncio.Task[None]) -> None:
            if not task.cancelled() and task.exception() is not None:
                _log.error("A background task of the app stopped", exc_info=task.exception())

        for task in running:
            task.add_done_callback(failed)
        try:
            yield
        finally:
            for task in running:
                task.cancel()
            # Waited for, not awaited: one that failed long ago must not stop the others'.
            stuck = (await asyncio.wait(running, timeout=STOP_SECONDS))[1]
            if stuck:
                _log.warning("%d background tasks did not stop within %g s of shutdown",
                             len(stuck), STOP_SECONDS)  # fmt: skip

    return lifespan


#: How long shutdown waits for each background task to stop once cancelled.
STOP_SECONDS = 5.0


def _own_roles(identity: Identity) -> frozenset[str]:
    return identity.roles


class EventStream(StreamingResponse):
    """The chat route's `text/event-stream` response; a client that leaves stops the run.

    Starlette's `StreamingResponse`, but events produced back to back go out in one write
    (`_coalesce`: 12-25 % less server CPU per cycle), and it hears the client leave with a
    plain asyncio task. For ASGI servers below spec 2.4 (uvicorn, granian) Starlette runs an
    anyio task group per response for that, which cost a sixth of the server's CPU per request
    (measured).
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streaming = asyncio.current_task()
        assert streaming is not None
        done = False
        cancelled_by_us = False

        def client_left(listener: asyncio.Future[None]) -> None:
            nonlocal cancelled_by_us
            if done or listener.cancelled():
                return
            listener.exception()  # a broken connection counts as gone (and is not logged)
            cancelled_by_us = True
            streaming.cancel()

        listener = asyncio.ensure_future(self.listen_for_disconnect(receive))
        listener.add_done_callback(client_left)
        try:
            await self.stream_response(send)
        except asyncio.CancelledError:
            # Ours alone: stop quietly. Anyone else's (a shutdown, a timeout) goes on up.
            if not cancelled_by_us or streaming.uncancel() > 0:
                raise
            return
        finally:
            done = True
            listener.cancel()
            if isinstance(self.body_iterator, AsyncGenerator):
                await self.body_iterator.aclose()  # the run's own cleanup, now
        if self.background is not None:
            await self.background()

    def __init__(
        self,
        content: AsyncIterator[str],
        *,
        headers: Mapping[str, str] | None = None,
        heartbeat: float | None = HEARTBEAT_SECONDS,
    ) -> None:
        super().__init__(content, headers=headers)
        #: Seconds of quiet after which an SSE comment says the run goes on (`None`: never).
        self.heartbeat = heartbeat

    async def stream_response(self, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code,
                 "headers": self.raw_headers}  # fmt: skip
        await send_coalesced(
            start, self.body_iterator, send, self.charset, heartbeat=self.heartbeat
        )


async def _stream(agent: Agent, run_input: RunAgentInput, identity: Identity) -> AsyncIterator[str]:
    async for event in agent.run(run_input, identity=identity):
        yield encode_sse_event(event_to_wire(event))


async def _read_run_input(request: Request, limit: int) -> RunAgentInput:
    body = await read_body(request, limit)
    if body is None:
        raise BadRequest(f"Request body is larger than {limit} bytes.", 413)
    return parse_run_input(body)


def parse_run_input(body: bytes) -> RunAgentInput:
    """A request body as a `RunAgentInput`, or `BadRequest` naming what is wrong with it."""
    # Messages are read into views and built only when read (`chat_app.server.run_input`);
    # a body in the usual shape in one pass, any other as JSON first.
    try:
        run_input = read_run_input_json(body, depth_limit=MAX_NESTING)
        if run_input is not None:
            return run_input
        with _collector_paused(len(body)):
            run_input = _validate(_parse_json(body))
        if run_input.resume:
            # The answers again, strictly: the readers above keep a repeated key's last
            # value (the usual shape's answers are read strictly as the body is read).
            check_answers_of(body)
    except UnreadableAnswers as error:
        raise BadRequest(str(error)) from None
    return run_input


#: From this many bytes, reading a body as JSON pauses the cyclic garbage collector.
_LARGE_BODY_BYTES = 64 * 1024


@contextmanager
def _collector_paused(size: int) -> Iterator[None]:
    """Pause the collector while a body of `size` bytes (if large) is read as JSON.

    A body not in the usual shape becomes dicts and lists (~10 objects per 100 bytes, none in
    a cycle), which would set off collections, full ones included, over the whole heap. Read
    with the collector on, the continuation benchmark's 1.1 MB bodies (N = 10,000 messages,
    `benchmarks/bench_continuation.py`) given one unknown key take a median 22-28 ms instead
    of 10-11 ms (2.1-2.3x; in-process, CPU time, 21 interleaved rounds) with the heap not
    frozen, 1.05x with it frozen, both at CPython's default thresholds. The servers collect
    less often (`collector.tune_collector`), but such a body (~110,000 objects) still sets
    off collections there. Within noise at 123 KiB and below, and on the usual path (views
    the collector does not track, 0.96-1.01x at every size), which is why it is paused here
    only.
    """
    enabled = gc.isenabled()
    if enabled and size >= _LARGE_BODY_BYTES:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _validate(data: object) -> RunAgentInput:
    if not isinstance(data, dict):
        raise BadRequest("Request body must be a JSON object (an AG-UI RunAgentInput).")
    # AG-UI 1.0 makes tools, context and state optional; TanStack's client always sends them.
    try:
        return read_run_input(data, depth_limit=MAX_NESTING)
    except TooDeep:
        raise BadRequest("Request body is nested too deeply.") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise BadRequest(f"Invalid AG-UI RunAgentInput: {where}: {first['msg']}.") from None


def _parse_json(body: bytes) -> object:
    """orjson when it reads the body as the exact reader would; the exact reader otherwise.

    orjson refuses NaN, Infinity and numbers past 1.8e308 as the exact reader does, but reads
    integers past 64 bits as floats (`has_long_digit_run`), and refuses some texts the exact
    reader takes (lone surrogates, UTF-16, a BOM): those, and every refusal (for its wording),
    go to the exact reader.
    """
    if not has_long_digit_run(body):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return _parse_json_exactly(body)


def _parse_json_exactly(body: bytes) -> object:
    try:
        return strict_loads(body)
    except RecursionError:
        raise BadRequest("Request body is nested too deeply.") from None
    except ValueError as error:  # also UnicodeDecodeError and the numbers refused
        raise BadRequest(f"Request body is not valid JSON: {error}.") from None

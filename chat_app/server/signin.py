"""Signing in and out over HTTP: `POST /api/signin`, `POST /api/signin/demo`,
`POST /api/signout`, `GET /api/me`, and the answers every guarded route gives without an
identity (401) or without the role (403).

Who a request is from is the `Authenticator`'s decision (`chat_app.trust.authn`); this module
turns it into HTTP: it reads the sign-in form, throttles it through the accounts, and sets and
clears the session cookie. Imports `trust`, never the engine or the UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qs, quote, urlencode

import orjson
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chat_app.observe import Seldom
from chat_app.server._body import read_body
from chat_app.server.origin import CROSS_SITE, from_elsewhere
from chat_app.trust.accounts import SignInWait
from chat_app.trust.authn import (
    BROWSER_CARRIED,
    ROUTINE_REFUSALS,
    Authenticator,
    AuthFailure,
    names_api_token,
    safe_next,
)
from chat_app.trust.identity import Directory, Identity
from chat_app.trust.sessions import SESSION_COOKIE, SessionSigner
from chat_app.trust.store import database_trouble, not_answering

__all__ = [
    "SignInAccounts",
    "client_host",
    "identify",
    "identity_json",
    "signin_routes",
    "unauthorized",
]

WRONG_PASSWORD = "Wrong email or password."
MISSING_FIELDS = "Enter your email and password."
TOKEN_SIGN_OUT = (
    "An API token does not sign out: it works until it is revoked "
    "(python -m chat_app tokens revoke NAME [--user EMAIL])."
)
#: How a held sign-in waits (a test records the waits instead of waiting them).
_hold = asyncio.sleep
#: A sign-in form is small; anything bigger is not one.
MAX_FORM_BYTES = 64 * 1024

RolesOf = Callable[[Identity], frozenset[str]]

_log = logging.getLogger(__name__)


@runtime_checkable
class SignInAccounts(Directory, Protocol):
    """A directory that also throttles password sign-in (`chat_app.trust.accounts.Accounts`)."""

    def sign_in_wait(self, email: str, client: str) -> SignInWait:
        """How this attempt must wait (grows with recent failures)."""
        ...

    def record_failure(self, email: str, client: str) -> None: ...

    def clear_failures(self, email: str) -> None: ...


CROSS_SITE_SIGN_IN = "Sign-in requests must come from this site's own pages."


def same_site_only(
    route: Callable[[Request], Awaitable[Response]], authenticator: Authenticator
) -> Callable[[Request], Awaitable[Response]]:
    """Refuse a browser's post from another page than this site's: it must not sign a visitor
    in (as the attacker, whose decisions would then be the visitor's) or out (`origin.py`).
    Scripts, which send none of a browser's headers, pass: they can only sign themselves in."""

    async def checked(request: Request) -> Response:
        if elsewhere(authenticator, request):
            return _error(CROSS_SITE_SIGN_IN, 403, "forbidden")
        return await route(request)

    return checked


def elsewhere(authenticator: Authenticator, request: Request) -> bool:
    """`origin.from_elsewhere` for `request`, a proxy's `X-Forwarded-Host` believed only
    from an address `authenticator` trusts."""
    return from_elsewhere(
        request.headers,
        request.method,
        via_proxy=lambda: authenticator.trusts(client_host(request)),
    )


def client_host(request: Request) -> str | None:
    """The connecting address from the ASGI scope (the proxy's, behind a proxy)."""
    return request.client.host if request.client is not None else None


async def identify(authenticator: Authenticator, request: Request) -> Identity | AuthFailure:
    """Who `request` is from. When that means asking the accounts database (an API token, or a
    password session's account), in a thread: the event loop does not wait on the database."""
    host = client_host(request)
    try:
        if authenticator.mode == "password" or "authorization" in request.headers:
            found = await asyncio.to_thread(authenticator.authenticate, request.headers, host)
        else:
            found = authenticator.authenticate(request.headers, host)
    except OperationalError as error:  # not reached: a client can tell it from a refusal
        _log.warning("Could not check who a request is from: %s", error)
        return AuthFailure(not_answering(error), status=503, code="unavailable")
    if (
        isinstance(found, Identity)
        and found.method in BROWSER_CARRIED
        and elsewhere(authenticator, request)
    ):
        found = AuthFailure(CROSS_SITE, status=403)
    if isinstance(found, AuthFailure) and found.message not in ROUTINE_REFUSALS:
        # A token that is not (or no longer) valid, headers from outside the proxy, another
        # site's request: worth an operator's look, with where it came from (once a minute
        # for the same: a script polling with a revoked token is one line, not one a poll).
        where = host or "an unknown address"
        if _now_and_then.first((found.message, request.url.path, where)):
            _log.warning("Refused %s %s from %s: %s", request.method,
                         _shown(request.url.path), where, found.message)  # fmt: skip
    return found


#: A refusal repeated (a revoked token polled) is written once a minute.
_now_and_then = Seldom(every=60.0)


def _shown(typed: str) -> str:
    """What a client typed or sent, as a log line holds it: one line (control and other
    non-ASCII characters escaped), at most 254 characters (an email's longest)."""
    return typed[:254].encode("unicode_escape").decode("ascii")


def unauthorized(failure: AuthFailure) -> Response:
    """The failure's status (401, or 403) with its message as `{"error": ...}`."""
    challenge = {"WWW-Authenticate": "Bearer"} if failure.status == 401 else None
    body = {"error": failure.message} | ({"code": failure.code} if failure.code else {})
    return JSONResponse(body, status_code=failure.status, headers=challenge)


def identity_json(identity: Identity, roles: frozenset[str]) -> dict[str, object]:
    """What `GET /api/me` says about the signed-in person."""
    return {
        "email": identity.email,
        "name": identity.name,
        "roles": sorted(roles),
        "method": identity.method,
        "demo": identity.method == "demo",
    }


def signin_routes(authenticator: Authenticator, roles: RolesOf) -> list[Route]:
    """The sign-in routes for `authenticator`'s mode (each answers 404 in the other modes)."""
    config = authenticator.config
    locks = _KeyedLocks()

    def cookie(value: str, max_age: int, request: Request) -> str:
        flags = f"{SESSION_COOKIE}={value}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age}"
        return flags + "; Secure" if _came_over_https(request, authenticator) else flags

    refused = partial(_refused, authenticator.signer)

    def signed_in(identity: Identity, target: str, request: Request) -> Response:
        """The session's cookie, with who signed in (a JSON request, as `/api/me` says it)
        or the way to `target` (a form's)."""
        value = authenticator.signer.issue(identity)
        session = cookie(value, int(config.session_ttl_seconds), request)
        if _is_json(request):
            body = identity_json(identity, roles(identity))
            return JSONResponse(body, headers={"Set-Cookie": session})
        return Response(status_code=303, headers={"Location": target, "Set-Cookie": session})

    async def signin(request: Request) -> Response:
        accounts = authenticator.directory
        if config.mode != "password" or not isinstance(accounts, SignInAccounts):
            return _not_here(f"This server does not sign in with passwords ({config.mode}).")
        form = await _read_form(request)
        if isinstance(form, Response):
            return form
        email = form.get("email", "").strip().lower()
        password = form.get("password", "")
        target = safe_next(form.get("next", ""))
        as_json = _is_json(request)
        if not email or not password:
            return refused(MISSING_FIELDS, target, as_json, email, status=400, code="invalid")
        client = client_host(request) or ""
        # One attempt per email at a time in this process: parallel guesses queue up, and
        # each finds the failures before it counted.
        try:
            async with locks.hold(email):
                wait = await asyncio.to_thread(accounts.sign_in_wait, email, client)
                if wait.refuse > 0:  # said at once, unchecked: nothing is learned by trying
                    too_many = _too_many(wait.refuse)
                    if _now_and_then.first(("too-many", email, client)):
                        _log.warning("Sign-in refused for %s from %s: %s", _shown(email),
                                     client or "an unknown address", too_many)  # fmt: skip
                    return refused(too_many, target, as_json, email, status=429,
                                    code="too-many")  # fmt: skip
                if wait.hold > 0:  # failures from elsewhere: slowed down, never locked out
                    await _hold(wait.hold)
                identity = await asyncio.to_thread(accounts.check_password, email, password)
                if identity is None:
                    await asyncio.to_thread(accounts.record_failure, email, client)
                    _log.warning("Sign-in refused for %s from %s: wrong email or password",
                                 _shown(email), client or "an unknown address")  # fmt: skip
                    return refused(WRONG_PASSWORD, target, as_json, email)
                await asyncio.to_thread(accounts.clear_failures, email)
        except OperationalError as error:
            # The accounts' database is away: said as the other routes say it (503), and to
            # a browser on the sign-in form, the email kept, not as a server error's page.
            _log.warning("Sign-in could not read the accounts: %s", database_trouble(error))
            return refused(not_answering(error), target, as_json, email, status=503,
                            code="unavailable")  # fmt: skip
        _log.info("Signed in: %s (password) from %s", _shown(email),
                  client or "an unknown address")  # fmt: skip
        return signed_in(replace(identity, method="password"), target, request)

    async def signin_demo(request: Request) -> Response:
        if config.mode != "demo":
            return _not_here(f"This server has no demo people ({config.mode}).")
        form = await _read_form(request)
        if isinstance(form, Response):
            return form
        email = form.get("email", "")
        if not email.strip():
            return _error("Say who to be: send the demo person's email as `email`.", 400, "invalid")
        person = authenticator.demo_person(email)
        if person is None:
            return _error(f"{email.strip()} is not a demo person.", 400, "invalid")
        return signed_in(person, safe_next(form.get("next", "")), request)

    async def signout(request: Request) -> Response:
        # Ends the person's sessions on the server too: a tab still open elsewhere, or a
        # copy of the cookie, no longer acts as them. The cookie goes in any case, the
        # accounts' database answering or not.
        if any(names_api_token(value) for value in request.headers.getlist("authorization")):
            # Valid or not, a token has no session to end, and a sign-out that answered as
            # a browser's would leave the script believing its token gone.
            return _error(TOKEN_SIGN_OUT, 400, "token")
        who = await identify(authenticator, request)
        if isinstance(who, Identity):
            try:
                await asyncio.to_thread(authenticator.sign_out, who)
            except SQLAlchemyError as error:
                _log.warning("Signing out could not end the sessions on the server: %s", error)
        target = "/signin" if config.mode == "password" else "/"
        return Response(
            status_code=303, headers={"Location": target, "Set-Cookie": cookie("", 0, request)}
        )

    async def me(request: Request) -> Response:
        who = await identify(authenticator, request)
        if isinstance(who, AuthFailure):
            return unauthorized(who)
        return JSONResponse(identity_json(who, roles(who)))

    return [
        Route("/api/signin", same_site_only(signin, authenticator), methods=["POST"]),
        Route("/api/signin/demo", same_site_only(signin_demo, authenticator), methods=["POST"]),
        Route("/api/signout", same_site_only(signout, authenticator), methods=["POST"]),
        Route("/api/me", me, methods=["GET"]),
    ]


def _came_over_https(request: Request, authenticator: Authenticator) -> bool:
    if request.url.scheme == "https":
        return True
    forwarded = request.headers.get("x-forwarded-proto", "")
    return forwarded.split(",")[0].strip().lower() == "https" and authenticator.trusts(
        client_host(request)
    )


def _is_json(request: Request) -> bool:
    return (
        request.headers.get("content-type", "")
        .split(";")[0]
        .strip()
        .lower()
        .endswith(("/json", "+json"))
    )


def _error(message: str, status: int, code: str) -> Response:
    """A refusal as the API words them all: `{"error", "code"}` (`desk_routes.py`)."""
    return JSONResponse({"error": message, "code": code}, status_code=status)


def _refused(
    signer: SessionSigner,
    message: str,
    target: str,
    as_json: bool,
    email: str = "",
    *,
    status: int = 401,
    code: str = "refused",
) -> Response:
    """A refused sign-in: the form comes back with the message (sealed: the page shows no
    other) and the email typed (never the password) so only the password needs typing
    again; a script's gets `_error`."""
    if as_json:
        return _error(message, status, code)
    fields = {"error": message, "seal": signer.seal_note(message), "next": target}
    fields |= {"email": email} if email else {}
    query = urlencode(fields, quote_via=quote)
    return Response(status_code=303, headers={"Location": f"/signin?{query}"})


def _too_many(wait: float) -> str:
    """The refusal of an attempt made `wait` seconds too early after failed ones."""
    seconds = max(1, math.ceil(wait))
    plural = "s" if seconds != 1 else ""
    return f"Too many failed sign-ins: try again in {seconds} second{plural}."


def _not_here(message: str) -> Response:
    return _error(message, 404, "unknown")


async def _read_form(request: Request) -> dict[str, str] | Response:
    """The fields of a URL-encoded or multipart form (`curl -d`, `curl -F`) or a JSON
    object (strings only)."""
    body = await read_body(request, MAX_FORM_BYTES)
    if body is None:
        return _error("The sign-in form is too large.", 413, "invalid")
    if request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        return await _multipart_fields(request, body)
    if _is_json(request):
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            return _error("Send a JSON object.", 400, "invalid")
        return {key: value for key, value in data.items() if isinstance(value, str)}
    try:
        fields = parse_qs(body.decode(), keep_blank_values=True)
    except UnicodeDecodeError:
        return _error("The form is not UTF-8.", 400, "invalid")
    return {key: values[0] for key, values in fields.items()}


async def _multipart_fields(request: Request, body: bytes) -> dict[str, str] | Response:
    """A multipart form's text fields (Starlette's parser, over the body read already)."""

    async def chunks() -> AsyncGenerator[bytes, None]:
        yield body

    try:
        form = await MultiPartParser(request.headers, chunks()).parse()
    except MultiPartException as error:
        return _error(f"The form could not be read: {error.message}", 400, "invalid")
    try:
        return {key: value for key, value in form.multi_items() if isinstance(value, str)}
    finally:
        await form.close()


class _KeyedLocks:
    """An asyncio lock per key, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

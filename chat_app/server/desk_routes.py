"""The approval desk over HTTP (`docs/protocol.md` §10): stored conversations and the inbox,
for scripts, bots and the headless client (`chat_app.client.DeskClient`).

| route | what |
| --- | --- |
| `POST /api/conversations` | `{"message": …}`: a new conversation as the caller; 201 |
| `GET /api/conversations` | the caller's conversations, newest first |
| `GET /api/conversations/{threadId}` | its messages, status and pending decisions |
| `POST /api/conversations/{threadId}/messages` | `{"message": …}`: the next message; 202 |
| `POST /api/conversations/{threadId}/retry` | run again what failed; 202 |
| `GET /api/inbox` | the caller's pending decisions (`?tool=&requester=&all=1&limit=`) |
| `POST /api/inbox/{decisionId}` | an answer; 200 `decided` or `waiting` (quorum) |
| `GET /api/decided` | what the caller decided or approved, newest first (`?limit=`) |

Owns `desk_routes`. Who asks is the request's identity alone (the session cookie, the proxy's
headers or an API token, through the same function the chat route uses; 401 without one);
nothing in a body names a person. Without sign-in (`CHAT_APP_AUTH=none`: everyone anonymous)
every route is a 403 saying so: the inbox decides as a known person, and a conversation started
here for nobody could be decided by nobody.
Every refusal is `{"error": <message>, "code": <code>,
…details}` with the `DeskError`'s status: 400 `invalid`, 403 `forbidden`, 404 `unknown`, 409
`already-decided` or `busy`, 410 `expired`, 413 too large, 503 `unavailable` (the database is
not answering, or the ledger a retry must write to: nothing was decided or sent). Bodies are
read with the size limit of `_body.py` and as strict JSON (`chat_app.interrupts.strict_json`).

A route that sets a run going (a new conversation, a message, a retry, the decision that
completes a pause) answers once the run has stored its first step (at most
`STARTED_WAIT_SECONDS`): a read right after it shows `running`, or already the result, never
the conversation as it was before.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sqlalchemy.exc import OperationalError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chat_app.desk import ADMIN_ROLE, Answer, Desk, DeskError, InboxQuery, thread_topic
from chat_app.interrupts.strict_json import is_text, strict_loads, too_deep
from chat_app.server._body import read_body
from chat_app.server.signin import unauthorized
from chat_app.trust import Identity
from chat_app.trust.authn import AuthFailure
from chat_app.trust.store import database_trouble

__all__ = [
    "DEFAULT_INBOX_LIMIT",
    "MAX_DESK_BODY_BYTES",
    "MAX_INBOX_LIMIT",
    "NO_SIGN_IN",
    "REST_WAIT_SECONDS",
    "STARTED_WAIT_SECONDS",
    "Who",
    "desk_routes",
    "messages_json",
]

_log = logging.getLogger(__name__)

#: Who a request is from: the identity the authenticator verified, or why there is none.
Who = Callable[[Request], Awaitable[Identity | AuthFailure]]
#: A desk body is a message or one answer (edited arguments included): small.
MAX_DESK_BODY_BYTES = 1024 * 1024
DEFAULT_INBOX_LIMIT = 50
MAX_INBOX_LIMIT = 200
#: How long a route that sets a run going waits for the run's first stored step.
STARTED_WAIT_SECONDS = 5.0
#: How long such a route waits first for the run before it to let go of the conversation
#: (milliseconds, normally; a lease left by a database that went away lasts until it lapses).
REST_WAIT_SECONDS = 1.0

_Handler = Callable[[Request, Identity], Awaitable[Response]]


#: What the desk's routes answer on a server without sign-in (`CHAT_APP_AUTH=none`).
NO_SIGN_IN = (
    "The approval desk records who asked and who decided, so it needs sign-in, and this "
    "server has none (CHAT_APP_AUTH=none): start it with CHAT_APP_AUTH=password, proxy or "
    "demo, or use POST /api/chat, which needs none."
)  # the app's own page, without sign-in, answers in the chat itself, not through these


def desk_routes(desk: Desk, who: Who, *, max_body_bytes: int = MAX_DESK_BODY_BYTES) -> list[Route]:
    """The desk's routes over `desk`, each acting as `who(request)` says."""

    def guarded(handler: _Handler) -> Callable[[Request], Awaitable[Response]]:
        async def route(request: Request) -> Response:
            try:
                identity = await who(request)
                if isinstance(identity, AuthFailure):
                    return unauthorized(identity)
                if identity.anonymous:  # nobody could ever decide what it stored
                    raise DeskError("forbidden", NO_SIGN_IN)
                return await handler(request, identity)
            except DeskError as error:
                return _refused(error)
            except OperationalError as error:  # the accounts (an API token) or a direct read
                return _refused(_unavailable(error))

        return route

    async def start(request: Request, identity: Identity) -> Response:
        text = _message_of(await _json_body(request, max_body_bytes))
        thread_id = await desk.start(identity, text)
        await _started(desk, thread_id, since=1)  # a new conversation is stored at version 1
        return JSONResponse(
            {"threadId": thread_id},
            status_code=201,
            headers={"Location": f"/api/conversations/{thread_id}"},
        )

    async def conversations(_: Request, identity: Identity) -> Response:
        found = await desk.conversations(identity)
        return JSONResponse({"conversations": [summary.to_json() for summary in found]})

    async def conversation(request: Request, identity: Identity) -> Response:
        view = await desk.view(request.path_params["thread_id"], identity)
        shown = view.to_json(
            messages_json(view.state), desk.answer_schemas(view), desk.refusals(view),
            desk.current(view),
        )  # fmt: skip
        return JSONResponse(shown)

    async def post(request: Request, identity: Identity) -> Response:
        thread_id = request.path_params["thread_id"]
        text = _message_of(await _json_body(request, max_body_bytes))
        since = await _version_at_rest(desk, thread_id)
        await desk.post(thread_id, identity, text)
        await _started(desk, thread_id, since)
        return JSONResponse({"threadId": thread_id}, status_code=202)

    async def retry(request: Request, identity: Identity) -> Response:
        thread_id = request.path_params["thread_id"]
        since = await _version_at_rest(desk, thread_id)
        await desk.retry(thread_id, identity)
        await _started(desk, thread_id, since)
        return JSONResponse({"threadId": thread_id}, status_code=202)

    async def inbox(request: Request, identity: Identity) -> Response:
        asked = InboxQuery.read(request.query_params)
        if asked.everyone and ADMIN_ROLE not in _roles(desk, identity):
            raise DeskError("forbidden", "all=1 lists everyone's decisions: it is for admins.")
        items, total = await desk.inbox(
            identity,
            tool=asked.tool or None,
            requester=asked.requester or None,
            everyone=asked.everyone,
            limit=_limit(request.query_params.get("limit")),
        )
        return JSONResponse({"items": [item.to_json() for item in items], "total": total})

    async def decided(request: Request, identity: Identity) -> Response:
        found = await desk.decided(identity, limit=_limit(request.query_params.get("limit")))
        return JSONResponse({"items": [past.to_json() for past in found]})

    async def decide(request: Request, identity: Identity) -> Response:
        answer = Answer.read(await _json_body(request, max_body_bytes))
        decision_id = request.path_params["decision_id"]
        found = await desk.decision(decision_id)
        since = await _version_at_rest(desk, found.thread_id) if found is not None else 0
        result = await desk.decide(decision_id, identity, answer)
        if result.status == "decided":  # the continuation, unless the pause has more to decide
            await _started(desk, result.item.thread_id, since, unless_pending=True)
        return JSONResponse(result.to_json())

    return [
        Route("/api/conversations", guarded(start), methods=["POST"]),
        Route("/api/conversations", guarded(conversations), methods=["GET"]),
        Route("/api/conversations/{thread_id}", guarded(conversation), methods=["GET"]),
        Route("/api/conversations/{thread_id}/messages", guarded(post), methods=["POST"]),
        Route("/api/conversations/{thread_id}/retry", guarded(retry), methods=["POST"]),
        Route("/api/inbox", guarded(inbox), methods=["GET"]),
        Route("/api/inbox/{decision_id}", guarded(decide), methods=["POST"]),
        Route("/api/decided", guarded(decided), methods=["GET"]),
    ]


def messages_json(state: str) -> list[dict[str, Any]]:
    """A stored conversation's messages (its client state, JSON) as the desk API shows them:

        {"id", "role", "text", "createdAt",
         "toolCalls": [{"id", "name", "status", "args", "result", "hasResult", "error",
                        "decision", "decidedByRule", "interruptId"}]}

    `status` is the call's lifecycle (`awaiting-approval`, `approved`, `rejected`,
    `cancelled`, `expired`, `running`, `done`, `error`, `streaming`, `stopped`: its run
    failed before its result came, and `abandoned`: a later message went on without it);
    `result` is the parsed result once `hasResult`; `error` the failure or the rejection's
    reason; `decision` what a person decided (`approved`, `rejected`, `cancelled`; `expired`
    when nobody did in time), `decidedByRule` the policy rule that decided it alone. Tool
    results are folded into their call; messages the client keeps verbatim
    (reasoning, multimodal) show their role and any plain text content.
    """
    data = json.loads(state)
    messages = data.get("messages") if isinstance(data, Mapping) else None
    return [_message_json(message) for message in messages or () if isinstance(message, Mapping)]


def _message_json(message: Mapping[str, Any]) -> dict[str, Any]:
    parts = [part for part in message.get("parts") or () if isinstance(part, Mapping)]
    text = "".join(str(p.get("content", "")) for p in parts if p.get("kind") == "text")
    raw = message.get("raw")
    if not parts and isinstance(raw, Mapping) and isinstance(raw.get("content"), str):
        text = raw["content"]
    return {
        "id": message.get("id"),
        "role": message.get("role"),
        "text": text,
        "createdAt": message.get("created_at"),
        "toolCalls": [_call_json(p) for p in parts if p.get("kind") == "tool-call"],
    }


def _call_json(part: Mapping[str, Any]) -> dict[str, Any]:
    args = part.get("input")
    if args is None and part.get("arguments"):
        try:
            args = json.loads(str(part["arguments"]))
        except ValueError:
            args = part["arguments"]  # still streaming, or not JSON: the text as it came
    has_result = bool(part.get("has_output"))
    return {
        "id": part.get("id"),
        "name": part.get("name"),
        "status": part.get("status"),
        "args": args,
        "result": part.get("output") if has_result else None,
        "hasResult": has_result,
        "error": part.get("error"),
        "decision": part.get("decision"),
        "decidedByRule": part.get("decided_by_rule"),
        "interruptId": part.get("approval_id"),
    }


async def _json_body(request: Request, limit: int) -> Any:
    """The body as strict JSON, or a refusal: 413 too large, 400 not JSON."""
    body = await read_body(request, limit)
    if body is None:
        raise _TooLarge(limit)
    if not body.strip():
        raise DeskError("invalid", "The request has no body: send a JSON object.")
    try:
        data = strict_loads(body, unique_keys=True)
    except RecursionError:
        raise DeskError("invalid", "The body is nested too deeply.") from None
    except ValueError as error:  # also UnicodeDecodeError, the numbers and keys refused
        raise DeskError("invalid", f"The body is not valid JSON: {error}.") from None
    if isinstance(data, dict | list) and too_deep(data):
        raise DeskError("invalid", "The body is nested too deeply.")
    if not is_text(data):
        raise DeskError("invalid", "The body holds text that is not Unicode (a lone "
                                   "surrogate escape such as \\ud800).")  # fmt: skip
    return data


def _message_of(body: Any) -> str:
    if not isinstance(body, dict) or "message" not in body:
        raise DeskError("invalid", 'Send {"message": "…"} and nothing else.')
    if unknown := sorted(set(body) - {"message"}):
        raise DeskError("invalid", f'Unknown field(s): {", ".join(unknown)}; send '
                                   '{"message": "…"} and nothing else.')  # fmt: skip
    text = body["message"]
    if not isinstance(text, str):
        raise DeskError("invalid", "The message must be a string.")
    return text


def _limit(text: str | None) -> int:
    if text is None or not text.strip():
        return DEFAULT_INBOX_LIMIT
    value = text.strip()
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_INBOX_LIMIT:
        raise DeskError("invalid", f"limit must be a whole number from 1 to {MAX_INBOX_LIMIT}.")
    return int(value)


async def _version(desk: Desk, thread_id: str) -> int:
    found: int = await asyncio.to_thread(desk.store.version, thread_id)
    return found


async def _version_at_rest(desk: Desk, thread_id: str) -> int:
    """The conversation's version once no run holds it (waiting `REST_WAIT_SECONDS` at most):
    a run that has stored its last step may hold its lease a moment longer, and store that
    step once more, which `_started` must not take for the next run's first step. A
    conversation that is running is not waited for (the desk refuses what would start
    another run), nor one whose lease has lapsed."""
    deadline = time.monotonic() + REST_WAIT_SECONDS
    while True:
        row = await asyncio.to_thread(desk.store.load, thread_id)
        if row is None:
            return 0
        held = row.runner is not None and row.runner_until is not None
        if (
            not held
            or row.status == "running"
            or row.runner_until <= desk.clock()
            or time.monotonic() >= deadline
        ):
            return int(row.version)
        await asyncio.sleep(0.01)


async def _still_pending(desk: Desk, thread_id: str) -> bool:
    """Whether the conversation's pause still has a decision to make (no continuation yet)."""
    items = await asyncio.to_thread(desk.store.decisions_of, thread_id)
    return any(item.status == "pending" for item in items)


async def _started(
    desk: Desk, thread_id: str, since: int, *, unless_pending: bool = False
) -> None:
    """Wait until the conversation's stored version passes `since` (the run stored its first
    step), or `STARTED_WAIT_SECONDS` pass; with `unless_pending`, not at all while the pause
    still has a decision to make. Reads the database at each of the desk's notices for it,
    and at least every quarter second (a notice may come before this listens).

    What was asked for is stored already: a database that stops answering now ends the wait,
    not the request."""
    deadline = time.monotonic() + STARTED_WAIT_SECONDS
    try:
        if unless_pending and await _still_pending(desk, thread_id):
            return
        while await _version(desk, thread_id) <= since:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await desk.fanout.wait([thread_topic(thread_id)], min(left, 0.25))
    except OperationalError as error:
        _log.warning("Not waiting for conversation %s to start: %s", thread_id, error)


def _roles(desk: Desk, identity: Identity) -> frozenset[str]:
    return desk.policy.roles_of(identity) if desk.policy is not None else identity.roles


class _TooLarge(DeskError):
    def __init__(self, limit: int) -> None:
        super().__init__("invalid", f"The body is larger than {limit} bytes.")

    @property
    def http_status(self) -> int:
        return 413


def _unavailable(error: OperationalError) -> DeskError:
    _log.warning("The database did not answer: %s", database_trouble(error))
    return DeskError.unavailable(error)


def _refused(error: DeskError) -> Response:
    return JSONResponse(error.to_json(), status_code=error.http_status)

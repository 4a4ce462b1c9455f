"""HTTP: `POST /api/chat` (AG-UI `RunAgentInput` in, SSE out), `GET /api/tools`, and the
audit trail (`GET /api/audit` as JSON with its chain check, `GET /api/audit.jsonl`).

Owns `create_app`. A malformed request gets HTTP 400 (or 413 when too large) with a message
naming the field; nothing runs. A continuation the engine refuses is an in-stream `RUN_ERROR`
with HTTP 200, as in TanStack AI.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator

import orjson
from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from chat_app.agent import Agent, event_to_wire
from chat_app.interrupts import SSE_HEADERS, collector_paused, encode_sse_event
from chat_app.interrupts.strict_json import MAX_NESTING, has_long_digit_run, strict_loads
from chat_app.server.run_input import TooDeep, read_run_input, read_run_input_json
from chat_app.trust import audit_report

MAX_BODY_BYTES = 4 * 1024 * 1024
#: When set, `GET /api/audit[.jsonl]` needs `Authorization: Bearer <token>`.
AUDIT_TOKEN_ENV = "CHAT_APP_AUDIT_TOKEN"


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def create_app(agent: Agent, *, max_body_bytes: int = MAX_BODY_BYTES) -> Starlette:
    """A Starlette app serving `agent`; mount it on any ASGI server or on Reflex's backend."""

    async def chat(request: Request) -> Response:
        try:
            run_input = await _read_run_input(request, max_body_bytes)
        except BadRequest as error:
            return JSONResponse({"error": str(error)}, status_code=error.status)
        return EventStream(_stream(agent, run_input), headers=SSE_HEADERS)

    async def tools(_: Request) -> Response:
        return JSONResponse({"tools": agent.tool_manifest()})

    async def audit(request: Request) -> Response:
        if agent.ledger is None:
            return JSONResponse({"error": "This server keeps no ledger."}, status_code=404)
        token = os.environ.get(AUDIT_TOKEN_ENV)
        if token and request.headers.get("authorization") != f"Bearer {token}":
            return JSONResponse(
                {"error": "The audit trail needs the audit token."}, status_code=401
            )
        records = await asyncio.to_thread(agent.ledger.records)
        if request.url.path.endswith(".jsonl"):
            lines = "".join(record.to_json() + "\n" for record in records)
            return Response(
                lines,
                media_type="application/jsonl",
                headers={"Content-Disposition": 'attachment; filename="audit.jsonl"'},
            )
        return JSONResponse(audit_report(records))

    return Starlette(
        routes=[
            Route("/api/chat", chat, methods=["POST"]),
            Route("/api/tools", tools, methods=["GET"]),
            Route("/api/audit", audit, methods=["GET"]),
            Route("/api/audit.jsonl", audit, methods=["GET"]),
        ]
    )


class EventStream(StreamingResponse):
    """The chat route's `text/event-stream` response; a client that leaves stops the run.

    Starlette's `StreamingResponse`, sent as it sends it, but it hears the client leave with a
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


async def _stream(agent: Agent, run_input: RunAgentInput) -> AsyncIterator[str]:
    async for event in agent.run(run_input):
        yield encode_sse_event(event_to_wire(event))


async def _read_run_input(request: Request, limit: int) -> RunAgentInput:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(f"Request body is larger than {limit} bytes.", 413)
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            raise BadRequest(f"Request body is larger than {limit} bytes.", 413)
    return parse_run_input(bytes(body))


def parse_run_input(body: bytes) -> RunAgentInput:
    """A request body as a `RunAgentInput`, or `BadRequest` naming what is wrong with it."""
    with collector_paused(len(body)):
        # Messages are read into views and built only when read (`chat_app.server.run_input`);
        # a body in the usual shape in one pass, any other as JSON first.
        run_input = read_run_input_json(body, depth_limit=MAX_NESTING)
        if run_input is not None:
            return run_input
        return _validate(_parse_json(body))


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

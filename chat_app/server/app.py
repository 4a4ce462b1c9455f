"""HTTP: `POST /api/chat` (AG-UI `RunAgentInput` in, SSE out) and `GET /api/tools`.

Owns `create_app`. A malformed request gets HTTP 400 (or 413 when too large) with a message
naming the field; nothing runs. A continuation the engine refuses is an in-stream `RUN_ERROR`
with HTTP 200, as in TanStack AI.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from chat_app.agent import Agent, event_to_wire
from chat_app.interrupts import SSE_HEADERS, encode_sse_event

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_NESTING = 200


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
        return StreamingResponse(_stream(agent, run_input), headers=SSE_HEADERS)

    async def tools(_: Request) -> Response:
        return JSONResponse({"tools": agent.tool_manifest()})

    return Starlette(
        routes=[
            Route("/api/chat", chat, methods=["POST"]),
            Route("/api/tools", tools, methods=["GET"]),
        ]
    )


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
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BadRequest(f"Request body is not valid JSON: {error}.") from None
    except RecursionError:
        raise BadRequest("Request body is nested too deeply.") from None
    if not isinstance(data, dict):
        raise BadRequest("Request body must be a JSON object (an AG-UI RunAgentInput).")
    if _depth(data) > MAX_NESTING:
        raise BadRequest("Request body is nested too deeply.")
    # AG-UI 1.0 makes tools, context and state optional; TanStack's client always sends them.
    try:
        return RunAgentInput.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise BadRequest(f"Invalid AG-UI RunAgentInput: {where}: {first['msg']}.") from None


def _depth(value: object) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            return deepest
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest

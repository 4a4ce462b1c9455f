"""Reading a request body with a size limit (the chat route's and the sign-in form's)."""

from __future__ import annotations

from starlette.requests import Request


async def read_body(request: Request, limit: int) -> bytes | None:
    """The body, or `None` once it is larger than `limit` bytes: a declared length over the
    limit is refused before anything is read, and a stream that runs over it is cut short."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            return None
    return bytes(body)

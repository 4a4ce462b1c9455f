"""How an HTTP failure reads to a person: the words of `SSEConnection` and `fetch_manifest`.

Owns `status_words` (a status with what its body says: `server_message`, the wire's) and
`network_reason` (an `httpx` network error without its errno). Pure functions over bytes and
strings; no I/O.
"""

from __future__ import annotations

import os
import re
from http import HTTPStatus

import httpx

from chat_app.interrupts.http_answers import server_message, trim

__all__ = ["network_reason", "seconds", "server_message", "status_words", "trim"]

_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")


def status_words(status: int, body: bytes, content_type: str = "") -> str:
    """`HTTP 500: database is down`, or `HTTP 404 (Not Found)` when the body says nothing."""
    said = server_message(body, content_type)
    if said:
        return f"HTTP {status}: {said}"
    try:
        return f"HTTP {status} ({HTTPStatus(status).phrase})"
    except ValueError:
        return f"HTTP {status}"


def network_reason(error: httpx.HTTPError) -> str:
    """An `httpx` error's reason without `[Errno 111]`, starting lower case: `connection
    refused`; its class name when it says nothing. The system's words for the first error
    number found among its causes come first (the async client says only "All connection
    attempts failed" and keeps the refusal as a cause)."""
    text = ""
    cause: BaseException | None = error
    while cause is not None and not text:
        if isinstance(cause, OSError) and isinstance(cause.errno, int) and cause.errno:
            # An errno's own words ("Connection refused"), else the resolver's ("Name or
            # service not known" has a negative number os.strerror does not know).
            text = os.strerror(cause.errno) if cause.errno > 0 else str(cause.strerror or "")
        cause = cause.__cause__ or cause.__context__
    text = text or _ERRNO.sub("", str(error)).strip() or type(error).__name__
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return trim(text).rstrip(".")


def seconds(value: float | None) -> str:
    """`0.5 s`, `30 s`."""
    return "no limit" if value is None else f"{value:g} s"

"""How an HTTP failure reads to a person: the words of `SSEConnection` and `fetch_manifest`.

Owns `server_message` (what an error body says: a JSON `{"error": …}`'s message, else the
text, trimmed; an HTML page's title) and `network_reason` (an `httpx` network error without
its errno). Pure functions over bytes and strings; no I/O.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping
from http import HTTPStatus

import httpx

#: At most this many characters of what a server said go into a message.
MESSAGE_LIMIT = 300

_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_INVISIBLE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def trim(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` on one line, cut to `limit` characters (with an ellipsis when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def server_message(body: bytes, content_type: str = "") -> str:
    """What an error answer says, for a person: "" when it says nothing.

    A JSON object's `error` (a string, or an object with a `message`), else its `message` or
    `detail`; an HTML page's title, else its text without tags; any other text as it is.
    """
    text = body.decode("utf-8", "replace").strip()
    if not text:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, Mapping):
        for key in ("error", "message", "detail"):
            said = _said(data.get(key))
            if said:
                return trim(said)
    if "html" in content_type.lower() or text.startswith("<"):
        title = _TITLE.search(text)
        text = title.group(1) if title else _TAG.sub(" ", _INVISIBLE.sub(" ", text))
        text = html.unescape(text)
    return trim(text)


def _said(value: object) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, Mapping):
        for key in ("message", "detail", "error"):
            if isinstance(value.get(key), str):
                return str(value[key]).strip()
    return ""


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

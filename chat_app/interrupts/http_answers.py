"""What an HTTP error answer says, for a person: a JSON `{"error": …}`'s message, else the
text, trimmed; an HTML page's title. Read alike by the client (an agent's or the desk's
failures) and by the notifications (a webhook's receiver that refused). Pure functions over
bytes and strings; no I/O.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping

#: At most this many characters of what a server said go into a message.
MESSAGE_LIMIT = 300

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

"""A deterministic, offline model driven by a Python function: the demo's and tests' model."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chat_app.interrupts import js_json_dumps

from ._history import text_of
from .base import Model, ModelEvent, ModelRequest, TextDelta, ToolCallDelta

_TOKEN = re.compile(r"\s*\S+|\s+")


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ScriptedTurn:
    """What the model says in one turn: text, then tool calls."""

    text: str = ""
    calls: Sequence[ScriptedCall] = field(default_factory=tuple)


Script = Callable[[ModelRequest], ScriptedTurn]


class ScriptedModel(Model):
    """Streams the turn `script(request)` returns, word by word.

    Example::

        model = ScriptedModel(lambda request: ScriptedTurn(text="Hello!"), token_delay=0)
    """

    name = "scripted"

    def __init__(self, script: Script, *, token_delay: float = 0.0) -> None:
        self._script = script
        self._token_delay = token_delay
        self._calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        turn = self._script(request)
        for token in _TOKEN.findall(turn.text):
            if self._token_delay:
                await asyncio.sleep(self._token_delay)
            else:
                await asyncio.sleep(0)  # let a Stop or a disconnect get through
            yield TextDelta(token)
        for call in turn.calls:
            self._calls += 1
            call_id = call.id or f"call_{self._calls}_{_short_id()}"
            yield ToolCallDelta(id=call_id, name=call.name, arguments=js_json_dumps(call.arguments))


def _short_id() -> str:
    import secrets

    return secrets.token_hex(4)


def last_user_text(request: ModelRequest) -> str:
    """The text of the latest user message (helper for scripts): its text parts joined when
    it is given as parts (an image or a file says nothing here)."""
    for message in reversed(request.messages):
        if getattr(message, "role", None) == "user":
            return text_of(message.content)
    return ""

"""Server-sent events framing for AG-UI streams (`docs/protocol.md` §1.7).

Owns `encode_sse_event` (what `toServerSentEventsResponse` writes: `data: <json>\\n\\n`, no
`event:` lines, no `[DONE]`) and `SSEDecoder`, which reads what `@tanstack/ai-client` reads:
`data:` lines or bare JSON lines, `:` comments, `event:`/`retry:` lines, `id:` offsets, and a
`data: [DONE]` sentinel that stands for a finished run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ._canonical import js_json_dumps
from ._json import tanstack_metadata

SSE_HEADERS: dict[str, str] = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
}


class SSEDecodeError(ValueError):
    """A data line that is not JSON, or a stream cut in the middle of a line."""


def encode_sse_event(event: Mapping[str, object]) -> str:
    """One SSE frame for one event dict (already in camelCase wire form)."""
    return f"data: {js_json_dumps(event)}\n\n"


@dataclass(slots=True)
class SSEDecoder:
    """Incremental, tolerant SSE decoder: feed text chunks, get event dicts.

    Example::

        decoder = SSEDecoder()
        for chunk in response.iter_text():
            for event in decoder.feed(chunk):
                handle(event)
        decoder.close()  # raises if the stream was cut mid-line
    """

    _buffer: str = ""
    _pending_id: str | None = None
    _last_thread_id: str = ""
    _last_run_id: str = ""
    _last_model: str | None = None
    done: bool = False
    #: The `id:` offset of the last event that had one (durable streams resume from it).
    last_event_id: str | None = None

    def feed(self, chunk: str) -> Iterator[dict[str, object]]:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split("\n")
        for line in lines:
            event = self._line(line)
            if event is not None:
                yield event

    def close(self) -> None:
        if self._buffer.strip() and not self.done:
            raise SSEDecodeError("The event stream ended in the middle of a line.")

    def _line(self, line: str) -> dict[str, object] | None:
        if self.done:
            return None
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip():
            return None
        if line == "id" or line.startswith("id:"):
            raw = line[3:]
            self._pending_id = raw[1:] if raw.startswith(" ") else raw
            return None
        if line.startswith((":", "event:", "retry:")):
            return None
        data = line
        if line.startswith("data:"):
            data = line[6:] if line.startswith("data: ") else line[5:]
        if data == "[DONE]":
            self.done = True
            metadata: dict[str, object] = {"finishReason": "stop"}
            if self._last_model is not None:
                metadata["model"] = self._last_model
            return {
                "type": "RUN_FINISHED",
                "threadId": self._last_thread_id,
                "runId": self._last_run_id,
                "timestamp": int(time.time() * 1000),
                "metadata": {"tanstack": metadata},
            }
        try:
            event = json.loads(data)
        except json.JSONDecodeError as error:
            raise SSEDecodeError(f"Event data is not JSON: {error.msg}.") from None
        if not isinstance(event, dict):
            raise SSEDecodeError("Event data must be a JSON object.")
        self._remember(event)
        return event

    def _remember(self, event: dict[str, object]) -> None:
        if isinstance(event.get("threadId"), str):
            self._last_thread_id = str(event["threadId"])
        if isinstance(event.get("runId"), str):
            self._last_run_id = str(event["runId"])
        model = tanstack_metadata(event).get("model")
        if isinstance(model, str):
            self._last_model = model
        if self._pending_id is not None:
            self.last_event_id, self._pending_id = self._pending_id, None

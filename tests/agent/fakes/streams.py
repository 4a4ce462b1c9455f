"""Streaming response bodies in the providers' documented formats, for the fake provider.

OpenAI: `data: {chat.completion.chunk}` frames with `choices[0].delta` (`content`, or
`tool_calls[]` addressed by `index`, the first piece of a call carrying `id`, `type` and
`function.name`), a last chunk with `finish_reason`, then `data: [DONE]`.

Anthropic: named events `message_start`, `content_block_start` (`text` / `tool_use`),
`content_block_delta` (`text_delta` / `input_json_delta`), `content_block_stop`,
`message_delta` (`stop_reason`), `message_stop`, with a `ping` after the first block opens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.agent.fakes.provider import Reply

OPENAI_MODEL = "gpt-4o-mini-2024-07-18"
ANTHROPIC_MODEL = "claude-sonnet-4-6"


@dataclass(frozen=True)
class Call:
    """A tool call the fake model makes; `arguments` is sent as `pieces` fragments."""

    id: str
    name: str
    arguments: str
    pieces: int = 3

    def fragments(self) -> list[str]:
        size = max(1, -(-len(self.arguments) // self.pieces))
        return [self.arguments[i : i + size] for i in range(0, len(self.arguments), size)]


def call(call_id: str, name: str, args: dict[str, Any], *, pieces: int = 3) -> Call:
    return Call(call_id, name, json.dumps(args), pieces)


def words(text: str) -> list[str]:
    """`text` in word-sized pieces, the way tokens arrive."""
    pieces: list[str] = []
    for index, word in enumerate(text.split(" ")):
        pieces.append(word if index == 0 else " " + word)
    return pieces


# --- OpenAI chat completions ---------------------------------------------------------------


def openai_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    data = {
        "id": "chatcmpl-BVZ4TfPl8GJ4mJ3bVtKcA1bX5y6Tm",
        "object": "chat.completion.chunk",
        "created": 1746717101,
        "model": OPENAI_MODEL,
        "service_tier": "default",
        "system_fingerprint": "fp_0392822090",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(data)}\n\n"


def openai_stream(
    text: str = "", calls: Sequence[Call] = (), *, interleave: bool = False
) -> list[str]:
    """A whole streamed turn: text first, then the tool calls (interleaved by index if asked)."""
    frames = [openai_chunk({"role": "assistant", "content": "", "refusal": None})]
    frames += [openai_chunk({"content": piece}) for piece in words(text) if text]
    per_call: list[list[str]] = []
    for index, item in enumerate(calls):
        first = {
            "index": index,
            "id": item.id,
            "type": "function",
            "function": {"name": item.name, "arguments": ""},
        }
        pieces = [openai_chunk({"tool_calls": [first]})]
        pieces += [
            openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            for fragment in item.fragments()
        ]
        per_call.append(pieces)
    if interleave:
        longest = max((len(pieces) for pieces in per_call), default=0)
        frames += [pieces[i] for i in range(longest) for pieces in per_call if i < len(pieces)]
    else:
        frames += [frame for pieces in per_call for frame in pieces]
    frames.append(openai_chunk({}, "tool_calls" if calls else "stop"))
    frames.append("data: [DONE]\n\n")
    return frames


def openai_reply(text: str = "", *calls: Call, interleave: bool = False) -> Reply:
    return Reply(frames=openai_stream(text, calls, interleave=interleave))


def openai_error(status: int, message: str, kind: str, code: str | None = None) -> Reply:
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    headers = {"retry-after-ms": "10"} if status == 429 else {}
    return Reply(status=status, body=body, headers=headers)


def openai_stream_error(message: str) -> str:
    return f"data: {json.dumps({'error': {'message': message, 'type': 'server_error'}})}\n\n"


# --- Anthropic messages ---------------------------------------------------------------------


def anthropic_event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def anthropic_stream(text: str = "", calls: Sequence[Call] = ()) -> list[str]:
    """A whole streamed turn: a text block (if any), then one `tool_use` block per call."""
    frames = [
        anthropic_event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                    "type": "message",
                    "role": "assistant",
                    "model": ANTHROPIC_MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 472, "output_tokens": 2},
                },
            }
        )
    ]
    index = 0
    if text:
        frames.append(
            anthropic_event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
        )
        frames.append(anthropic_event({"type": "ping"}))
        frames += [
            anthropic_event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
            )
            for piece in words(text)
        ]
        frames.append(anthropic_event({"type": "content_block_stop", "index": index}))
        index += 1
    for item in calls:
        frames.append(
            anthropic_event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": item.id, "name": item.name,
                                      "input": {}},
                }
            )
        )  # fmt: skip
        frames += [
            anthropic_event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": fragment},
                }
            )
            for fragment in ["", *item.fragments()]
        ]
        frames.append(anthropic_event({"type": "content_block_stop", "index": index}))
        index += 1
    frames.append(
        anthropic_event(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 89},
            }
        )
    )
    frames.append(anthropic_event({"type": "message_stop"}))
    return frames


def anthropic_reply(text: str = "", *calls: Call) -> Reply:
    return Reply(frames=anthropic_stream(text, calls))


def anthropic_error(status: int, kind: str, message: str) -> Reply:
    body = {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }
    headers = {"retry-after-ms": "10"} if status in (429, 529) else {}
    return Reply(status=status, body=body, headers=headers)


def anthropic_stream_error(kind: str, message: str) -> str:
    return anthropic_event({"type": "error", "error": {"type": kind, "message": message}})

"""Chat messages with parts, and their AG-UI wire form.

Owns `ChatMessage`, the part types and the two conversions: `to_wire_messages` (what a
request carries, as `uiMessagesToWire` writes it: anchors plus one `role:"tool"` message
per tool result, no parts) and `from_wire_messages` (a `MESSAGES_SNAPSHOT` folded back into
parts, reconciled with what the client already knew). Pure functions, no I/O; `WireMessages`
is `to_wire_messages` with each message's wire form kept between requests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, Literal, TypeAlias

from pydantic import Discriminator

from chat_app.interrupts import (
    CANCELLED_RESULT,
    DEFAULT_DENIED_RESULT,
    TOOL_MESSAGE_ID_PREFIX,
    is_expired_result,
    tool_result_text,
)

__all__ = [
    "ChatMessage",
    "MessagePart",
    "TextPart",
    "ToolCallPart",
    "ToolCallStatus",
    "ToolDecision",
    "ToolResultPart",
    "WireMessages",
    "from_wire_messages",
    "parse_tool_arguments",
    "to_wire_messages",
]

ToolCallStatus: TypeAlias = Literal[
    "streaming",  # arguments are arriving
    "running",  # arguments complete, no result yet (the server or this client runs it)
    "awaiting-approval",  # a person must approve, reject or cancel it
    "approved",  # approved; the result is on its way
    "rejected",  # a person rejected it; `error` holds the reason the model reads
    "cancelled",  # abandoned without an answer
    "expired",  # nobody decided in time; it did not run; `error` says so
    "done",  # the result arrived
    "error",  # the tool failed; `error` holds why
    "abandoned",  # a later user message went on without its result; `error` says so
    "stopped",  # the run ended in an error before its result came (the run's error says why)
]
#: `expired`: closed unanswered once its time was up (sent as a cancellation).
ToolDecision: TypeAlias = Literal["approved", "rejected", "cancelled", "expired"]


@dataclass(frozen=True, kw_only=True, slots=True)
class TextPart:
    kind: Literal["text"] = "text"
    content: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallPart:
    """A tool call of an assistant message, with its lifecycle and result."""

    kind: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    #: The raw JSON arguments text, as streamed.
    arguments: str = ""
    status: ToolCallStatus = "streaming"
    #: The parsed arguments once complete.
    input: object = None
    #: The approval interrupt that asked about this call, if any.
    approval_id: str | None = None
    #: What the person decided (set when the decision is submitted), or the policy.
    decision: ToolDecision | None = None
    #: The policy rule that decided this call by itself, when one did (nobody was asked).
    decided_by_rule: str | None = None
    #: The parsed result, once `has_output`.
    output: object = None
    has_output: bool = False
    #: Why it failed, or the rejection reason.
    error: str | None = None
    metadata: dict[str, object] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultPart:
    """The result of a tool call as it goes into the history (`role:"tool"` on the wire)."""

    kind: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    content: str
    #: The wire message id (`tool-<toolCallId>` when absent).
    id: str | None = None
    error: str | None = None
    metadata: dict[str, object] | None = None


MessagePart: TypeAlias = Annotated[TextPart | ToolCallPart | ToolResultPart, Discriminator("kind")]


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatMessage:
    """One message of the conversation.

    `raw` holds messages the client does not model (reasoning, activity, multimodal user
    content, orphan tool results): they are kept and sent back verbatim.
    """

    id: str
    role: str
    parts: tuple[MessagePart, ...] = ()
    name: str | None = None
    metadata: dict[str, object] | None = None
    #: ISO timestamp of a message created by this client (`metadata.tanstack.createdAt`).
    created_at: str | None = None
    raw: dict[str, object] | None = None

    @property
    def text(self) -> str:
        return "".join(part.content for part in self.parts if isinstance(part, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(part for part in self.parts if isinstance(part, ToolCallPart))


def parse_tool_arguments(text: str) -> object:
    """`JSON.parse(arguments.trim() || "{}")`; unparseable text stays `None`."""
    try:
        return json.loads(text.strip() or "{}")
    except json.JSONDecodeError:
        return None


def parse_content(content: str) -> object:
    try:
        return json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return content


def error_text(output: object) -> str:
    """The message of a failed result (`{"error": "..."}`, a string, or a generic text)."""
    if isinstance(output, Mapping) and isinstance(output.get("error"), str):
        return str(output["error"])
    if isinstance(output, str):
        return output
    return "Tool execution failed"


def rejection_reason(output: object) -> str:
    """What the model read about a rejection: its `reason`, `error` or `message`, or the payload."""
    if isinstance(output, Mapping):
        for key in ("reason", "error", "message"):
            if isinstance(output.get(key), str):
                return str(output[key])
    return tool_result_text(output)


def status_after_result(part: ToolCallPart, output: object, failed: bool) -> ToolCallStatus:
    # The server's word first: a call closed as cancelled here may have expired there.
    if is_expired_result(output):
        return "expired"
    if part.decision in ("cancelled", "rejected", "expired"):
        return part.decision
    if not failed:
        return "done"
    if output == CANCELLED_RESULT:
        return "cancelled"
    if output == DEFAULT_DENIED_RESULT:
        return "rejected"
    return "error"


def with_result(
    part: ToolCallPart, output: object, failed: bool, error: str | None = None
) -> ToolCallPart:
    """`part` once its result arrived."""
    status = status_after_result(part, output, failed)
    reason: str | None = None
    if status == "rejected":
        reason = rejection_reason(output)
    elif status == "expired":
        reason = error_text(output) if is_expired_result(output) else part.error
    elif failed:
        reason = error or error_text(output)
    return replace(part, status=status, output=output, has_output=True, error=reason)


def find_call(messages: Sequence[ChatMessage], call_id: str) -> tuple[int, int] | None:
    """`(message index, part index)` of a tool call, searching from the latest message."""
    for position in range(len(messages) - 1, -1, -1):
        for index, part in enumerate(messages[position].parts):
            if isinstance(part, ToolCallPart) and part.id == call_id:
                return position, index
    return None


def with_tool_result(
    message: ChatMessage,
    index: int,
    output: object,
    result: ToolResultPart,
    reason: str | None = None,
) -> ChatMessage:
    """`message` once the tool call at `index` got `result` (which replaces any earlier one)."""
    part = message.parts[index]
    assert isinstance(part, ToolCallPart)
    parts = list(message.parts)
    parts[index] = with_result(part, output, result.error is not None, reason)
    parts = [
        p for p in parts
        if not (isinstance(p, ToolResultPart) and p.tool_call_id == result.tool_call_id)
    ]  # fmt: skip
    parts.append(result)
    return replace(message, parts=tuple(parts))


# --- to the wire ---------------------------------------------------------------------------


def to_wire_messages(messages: Sequence[ChatMessage]) -> list[dict[str, object]]:
    """The history as AG-UI wire messages (what `@tanstack/ai-client` sends)."""
    wire: list[dict[str, object]] = []
    for message in messages:
        wire.extend(_wire_of(message))
    return wire


class WireMessages:
    """`to_wire_messages`, with each message's wire dicts kept between calls.

    Every request carries the whole history: rebuilt from scratch, its wire form cost ~5 ms
    per 1,000 messages on each request. A `ChatMessage` is a frozen value (a change is a new
    one), so its wire dicts are kept by identity; the list returned is new each time, its
    dicts shared with earlier calls' (a connection reads a request body, never changes it).
    """

    def __init__(self) -> None:
        self._kept: dict[int, tuple[ChatMessage, list[dict[str, object]]]] = {}

    def __call__(self, messages: Sequence[ChatMessage]) -> list[dict[str, object]]:
        wire: list[dict[str, object]] = []
        kept = self._kept
        for message in messages:
            found = kept.get(id(message))
            if found is None or found[0] is not message:
                found = kept[id(message)] = (message, _wire_of(message))
            wire.extend(found[1])
        if len(kept) > 2 * len(messages) + 64:  # forget those no longer in the history
            self._kept = {id(message): kept[id(message)] for message in messages}
        return wire


def _wire_of(message: ChatMessage) -> list[dict[str, object]]:
    """One message's wire form: its anchor, then one `role:"tool"` message per result."""
    if message.raw is not None:
        return [dict(message.raw)]
    wire: list[dict[str, object]] = []
    anchor: dict[str, object] = {"id": message.id, "role": message.role}
    if message.name is not None:
        anchor["name"] = message.name
    metadata = _wire_metadata(message)
    if message.role == "assistant":
        text = message.text
        if text:
            anchor["content"] = text
        calls = [_wire_tool_call(part) for part in message.tool_calls]
        if calls:
            anchor["toolCalls"] = calls
    else:
        anchor["content"] = message.text
    if metadata is not None:
        anchor["metadata"] = metadata
    wire.append(anchor)
    # Decisions are not written into the history (`docs/protocol.md` §3.1).
    # @tanstack/ai-client 0.33 adds a placeholder tool message per decision; a TanStack
    # server then takes it for the result and the model never reads a rejection's
    # reason, so we do not.
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            wire.append(_wire_tool_result(part))
    return wire


def _tool_result_metadata(metadata: Mapping[str, object] | None) -> dict[str, object]:
    """`rebuiltToolMetadata`: the result's metadata with `tanstack.toolResult` ensured."""
    source = dict(metadata or {})
    tanstack = source.get("tanstack")
    merged = dict(tanstack) if isinstance(tanstack, Mapping) else {}
    merged.pop("uiResources", None)
    tool_result = merged.get("toolResult")
    merged["toolResult"] = dict(tool_result) if isinstance(tool_result, Mapping) else {}
    source["tanstack"] = merged
    return source


def _wire_metadata(message: ChatMessage) -> dict[str, object] | None:
    if message.created_at is None:
        return dict(message.metadata) if message.metadata is not None else None
    metadata = dict(message.metadata or {})
    tanstack = metadata.get("tanstack")
    merged = dict(tanstack) if isinstance(tanstack, Mapping) else {}
    merged["createdAt"] = message.created_at
    metadata["tanstack"] = merged
    return metadata


def _wire_tool_call(part: ToolCallPart) -> dict[str, object]:
    call: dict[str, object] = {
        "id": part.id,
        "type": "function",
        "function": {"name": part.name, "arguments": part.arguments},
    }
    if part.metadata is not None:
        call["metadata"] = part.metadata
    return call


def _wire_tool_result(part: ToolResultPart) -> dict[str, object]:
    message: dict[str, object] = {
        "role": "tool",
        "id": part.id or TOOL_MESSAGE_ID_PREFIX + part.tool_call_id,
        "toolCallId": part.tool_call_id,
        "content": part.content,
    }
    if part.error is not None:
        message["error"] = part.error
    message["metadata"] = _tool_result_metadata(part.metadata)
    return message


# --- from the wire ------------------------------------------------------------------------


def from_wire_messages(
    wire: Sequence[object], previous: Sequence[ChatMessage] = ()
) -> tuple[ChatMessage, ...]:
    """Fold a `MESSAGES_SNAPSHOT` into messages with parts.

    Tool results are anchored into the assistant message that made the call. What the wire
    cannot carry is taken from `previous`: message metadata, and each tool call's approval
    id and decision (so a rejected call stays `rejected`).

    A message equal (`==`) to the one of its id in `previous` is returned as that object, so
    what is kept by identity (the request's wire dicts, the page's views and JSON) stays
    valid across a pause. Equal is Python's: parsed values that differ only in spelling
    (`1` and `1.0`, key order) keep the earlier spelling; the arguments and result texts
    they were parsed from are compared as text.
    """
    known_calls = {
        part.id: part for message in previous for part in message.tool_calls
    }  # fmt: skip
    known = {message.id: message for message in previous}
    result: list[ChatMessage] = []
    for index, item in enumerate(wire):
        if not isinstance(item, Mapping):
            continue
        raw = {str(key): value for key, value in item.items()}
        message_id = raw.get("id")
        role = raw.get("role")
        if not isinstance(message_id, str) or not isinstance(role, str):
            continue
        if role == "tool":
            if not _anchor_result(result, raw):
                result.append(ChatMessage(id=message_id, role=role, raw=raw))
            continue
        message = _message_from_wire(message_id, role, raw, known_calls, index)
        before = known.get(message_id)
        if before is not None and message.metadata is None and message.raw is None:
            message = replace(message, metadata=before.metadata, created_at=before.created_at)
        elif before is not None and message.created_at is None and before.created_at:
            # Echoed with metadata of the server's own, without the stamp: it stays.
            message = replace(message, created_at=before.created_at)
        result.append(message)
    # At 2,000 messages the comparisons cost ~5 ms here and save ~16 ms after it: the page's
    # JSON and the next request's wire dicts are then looked up, not made again
    # (`benchmarks/FINDINGS.md`).
    return tuple(_kept(message, known) for message in result)


def _kept(message: ChatMessage, known: Mapping[str, ChatMessage]) -> ChatMessage:
    before = known.get(message.id)
    return before if before is not None and before == message else message


def _message_from_wire(
    message_id: str,
    role: str,
    raw: dict[str, object],
    known_calls: Mapping[str, ToolCallPart],
    index: int,
) -> ChatMessage:
    content = raw.get("content")
    raw_name = raw.get("name")
    name = raw_name if isinstance(raw_name, str) else None
    metadata = raw.get("metadata")
    meta = dict(metadata) if isinstance(metadata, Mapping) else None
    if role in ("user", "system", "developer") and isinstance(content, str):
        parts: tuple[MessagePart, ...] = (TextPart(content=content),)
        return ChatMessage(
            id=message_id, role=role, parts=parts, name=name, metadata=meta,
            created_at=_created_at(meta),
        )  # fmt: skip
    if role != "assistant":
        return ChatMessage(id=message_id, role=role, raw=raw)
    built: list[MessagePart] = []
    if isinstance(content, str) and content:
        built.append(TextPart(content=content))
    calls = raw.get("toolCalls")
    for call in calls if isinstance(calls, list) else []:
        part = _tool_call_from_wire(call, known_calls)
        if part is not None:
            built.append(part)
    return ChatMessage(
        id=message_id, role=role, parts=tuple(built), name=name,
        metadata=meta,
    )  # fmt: skip


def _created_at(metadata: Mapping[str, object] | None) -> str | None:
    """When a message was made, as the client that made it stamped it
    (`metadata.tanstack.createdAt`, which the server hands back with the message)."""
    tanstack = metadata.get("tanstack") if metadata is not None else None
    stamp = tanstack.get("createdAt") if isinstance(tanstack, Mapping) else None
    if not isinstance(stamp, str):
        return None
    try:
        datetime.fromisoformat(stamp)
    except ValueError:  # not a time: the API would hand it on as one
        return None
    return stamp


def _tool_call_from_wire(
    call: object, known_calls: Mapping[str, ToolCallPart]
) -> ToolCallPart | None:
    if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
        return None
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    arguments = function.get("arguments")
    arguments = arguments if isinstance(arguments, str) else ""
    metadata = call.get("metadata")
    call_id = str(call["id"])
    known = known_calls.get(call_id)
    return ToolCallPart(
        id=call_id,
        name=str(function.get("name") or ""),
        arguments=arguments,
        status=known.status if known is not None and known.status != "streaming" else "running",
        input=parse_tool_arguments(arguments),
        approval_id=known.approval_id if known else None,
        decision=known.decision if known else None,
        # What the client said of a call without a result ("abandoned", "expired") stays; a
        # result the snapshot carries sets its own.
        error=known.error if known else None,
        metadata=dict(metadata) if isinstance(metadata, Mapping) else None,
    )


def _anchor_result(messages: list[ChatMessage], raw: dict[str, object]) -> bool:
    call_id = raw.get("toolCallId")
    found = find_call(messages, call_id) if isinstance(call_id, str) else None
    if found is None:
        return False
    position, index = found
    text = tool_result_text(raw.get("content"))
    error = raw.get("error")
    metadata = raw.get("metadata")
    wire_id = raw.get("id")
    result = ToolResultPart(
        tool_call_id=str(call_id),
        content=text,
        id=wire_id if isinstance(wire_id, str) else None,
        error=str(error) if error is not None else None,
        metadata=dict(metadata) if isinstance(metadata, Mapping) else None,
    )
    messages[position] = with_tool_result(messages[position], index, parse_content(text), result)
    return True

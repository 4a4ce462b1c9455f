"""The stream processor: a pure fold of AG-UI events into messages with parts.

Owns `StreamState` and `StreamProcessor`. `apply(state, event) -> state` never mutates its
input and does no I/O, so it is tested event by event. It tolerates what real servers send:
TanStack's `TOOL_CALL_RESULT` before `RUN_STARTED`, a `RUN_ERROR` without `RUN_STARTED`,
events without message ids, and event types it does not know (ignored).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

import jsonpatch
import jsonpointer

from chat_app.interrupts import (
    LEGACY_APPROVAL_REASON,
    POLICY_DECISION_EVENT,
    js_json_dumps,
    tanstack_metadata,
    tool_result_text,
)

from ._messages import (
    ChatMessage,
    TextPart,
    ToolCallPart,
    ToolCallStatus,
    ToolDecision,
    ToolResultPart,
    error_text,
    find_call,
    from_wire_messages,
    parse_content,
    parse_tool_arguments,
    with_tool_result,
)
from ._state import REFUSAL_CODES

__all__ = [
    "RunStatus",
    "StreamProcessor",
    "StreamState",
    "new_message_id",
]

RunStatus: TypeAlias = Literal["idle", "running", "finished", "interrupted", "error"]

_log = logging.getLogger(__name__)


def new_message_id(prefix: str = "msg") -> str:
    """`<prefix>-<ms>-<random>`, the shape `@tanstack/ai-client` uses."""
    return f"{prefix}-{int(time.time() * 1000)}-{secrets.token_hex(4)[:7]}"


@dataclass(frozen=True, kw_only=True, slots=True)
class StreamState:
    """Everything the event stream has told the client so far."""

    messages: tuple[ChatMessage, ...] = ()
    #: The status of the run the latest events belong to.
    run_status: RunStatus = "idle"
    run_id: str | None = None
    #: The assistant message that text and tool calls without a message id go to.
    active_message_id: str | None = None
    #: The interrupt descriptors of the latest `RUN_FINISHED` with an interrupt outcome.
    interrupts: tuple[dict[str, object], ...] = ()
    finish_reason: str | None = None
    #: The `message` and `code` of the latest `RUN_ERROR`.
    error: str | None = None
    error_code: str | None = None
    #: The latest `STATE_SNAPSHOT`, with the `STATE_DELTA`s since applied.
    agent_state: object = None
    #: The last `RUN_ERROR` or `RUN_FINISHED` event as received.
    terminal: dict[str, object] | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class StreamProcessor:
    """Folds AG-UI wire events (camelCase dicts) into a `StreamState`.

    Example::

        processor = StreamProcessor()
        state = StreamState()
        for event in events:
            state = processor.apply(state, event)
    """

    new_id: Callable[[], str] = new_message_id

    def apply(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        kind = event.get("type")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        return handler(self, state, event) if handler is not None else state

    # --- local actions (not events) -----------------------------------------------------

    def add_user_message(
        self, state: StreamState, text: str, *, message_id: str | None = None
    ) -> StreamState:
        message = ChatMessage(
            id=message_id or self.new_id(),
            role="user",
            parts=(TextPart(content=text),),
            created_at=_iso_now(),
        )
        state = _mark_turns_calls(state, _UNFINISHED, status="abandoned", error=LEFT_BEHIND)
        return replace(state, messages=(*state.messages, message), active_message_id=None)

    def record_decision(
        self, state: StreamState, tool_call_id: str, decision: ToolDecision
    ) -> StreamState:
        """Mirror a submitted approval decision onto the tool call. An expired call stays
        expired when its cancellation is mirrored: that cancellation is how expiry is sent."""

        def mirror(part: ToolCallPart) -> ToolCallPart:
            if part.decision == "expired" and decision == "cancelled":
                return part
            return replace(part, decision=decision, status=decision)

        return _update_call(state, tool_call_id, mirror)

    def record_expiry(self, state: StreamState, tool_call_id: str, note: str) -> StreamState:
        """The call was closed unanswered once its time was up: it shows as expired, with
        `note` ("Expired: nobody decided within 1 day."), before the server's result."""
        return _update_call(
            state,
            tool_call_id,
            lambda part: part
            if part.has_output
            else replace(part, decision="expired", status="expired", error=note),
        )

    def forget_decision(self, state: StreamState, tool_call_id: str) -> StreamState:
        """The submitted decision did not stand (refused, or never arrived): the call awaits
        approval again, unless it has a result by now."""

        def forget(part: ToolCallPart) -> ToolCallPart:
            if part.has_output or part.decision is None:
                return part
            error = None if part.decision == "expired" else part.error
            return replace(part, decision=None, status="awaiting-approval", error=error)

        return _update_call(state, tool_call_id, forget)

    def add_tool_result(
        self, state: StreamState, tool_call_id: str, output: object, error: str | None = None
    ) -> StreamState:
        """Write a client tool's output (or failure) into the history."""
        return _set_result(state, tool_call_id, tool_result_text(output), output, error)

    def start_request(self, state: StreamState) -> StreamState:
        """Forget the previous run's outcome before a new request streams."""
        return replace(
            state, run_status="idle", active_message_id=None, interrupts=(), error=None,
            error_code=None, terminal=None, finish_reason=None,
        )  # fmt: skip

    # --- events -------------------------------------------------------------------------

    def _custom(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        """A policy decided a tool call alone: the call shows which rule, and how."""
        value = event.get("value")
        if event.get("name") != POLICY_DECISION_EVENT or not isinstance(value, Mapping):
            return state
        call_id, rule = _str(value.get("toolCallId")), _str(value.get("rule"))
        decision = value.get("decision")
        if call_id is None or rule is None or decision not in ("approved", "rejected"):
            return state
        decided: ToolDecision = "approved" if decision == "approved" else "rejected"
        return _update_call(
            state,
            call_id,
            lambda part: replace(part, decision=decided, status=decided, decided_by_rule=rule),
        )

    def _run_started(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        return replace(
            state, run_status="running", run_id=_str(event.get("runId")) or state.run_id,
            error=None, error_code=None, active_message_id=None,
        )  # fmt: skip

    def _text_start(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        state, _ = self._ensure_assistant(state, _str(event.get("messageId")))
        return state

    def _text_content(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        delta = event.get("delta")
        if not isinstance(delta, str) or not delta:
            return state
        state, message_id = self._ensure_assistant(state, _str(event.get("messageId")))

        def append(message: ChatMessage) -> ChatMessage:
            parts = list(message.parts)
            if parts and isinstance(parts[-1], TextPart):
                parts[-1] = TextPart(content=parts[-1].content + delta)
            else:
                parts.append(TextPart(content=delta))
            return replace(message, parts=tuple(parts))

        return _update_message(state, message_id, append)

    def _tool_start(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        call_id = _str(event.get("toolCallId"))
        # A call we hold already is restated, not new (a continuation starts its paused calls
        # again before their results): it keeps its one part, arguments and decision.
        if call_id is None or find_call(state.messages, call_id) is not None:
            return state
        state, message_id = self._ensure_assistant(state, _str(event.get("parentMessageId")))
        metadata = event.get("metadata")
        part = ToolCallPart(
            id=call_id,
            name=_str(event.get("toolCallName")) or "",
            metadata=dict(metadata) if isinstance(metadata, Mapping) else None,
        )
        return _update_message(
            state, message_id, lambda message: replace(message, parts=(*message.parts, part))
        )

    def _tool_args(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        call_id, delta = _str(event.get("toolCallId")), event.get("delta")
        if call_id is None or not isinstance(delta, str):
            return state
        # Only while the call streams: a restated call's arguments are the ones we hold (a
        # TanStack server sends them again after restating a call; appending would double them).
        return _update_call(
            state,
            call_id,
            lambda part: (
                replace(part, arguments=part.arguments + delta)
                if part.status == "streaming"
                else part
            ),
        )

    def _tool_end(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        call_id = _str(event.get("toolCallId"))
        if call_id is None:
            return state

        # The whole input may come with the end instead of as arguments: `input`, or on the
        # wire `metadata.tanstack.input` (where TanStack puts it, as we do on a restated call).
        tanstack = tanstack_metadata(event)
        given = "input" in event or "input" in tanstack
        value = event["input"] if "input" in event else tanstack.get("input")

        def complete(part: ToolCallPart) -> ToolCallPart:
            if part.status != "streaming":
                return part
            if given and not part.arguments:
                arguments = js_json_dumps(value)
                return replace(part, status="running", arguments=arguments, input=value)
            return replace(part, status="running", input=parse_tool_arguments(part.arguments))

        return _update_call(state, call_id, complete)

    def _tool_chunk(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        call_id = _str(event.get("toolCallId"))
        if call_id is not None and find_call(state.messages, call_id) is None:
            state = self._tool_start(state, event)
        return self._tool_args(state, event)

    def _tool_result(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        call_id, content = _str(event.get("toolCallId")), event.get("content")
        if call_id is None:
            return state
        text = tool_result_text(content)
        failed = "output-error" in (event.get("state"), tanstack_metadata(event).get("state"))
        output = parse_content(text)
        return _set_result(state, call_id, text, output, error_text(output) if failed else None)

    def _snapshot(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        messages = event.get("messages")
        if not isinstance(messages, list):
            return state
        return replace(
            state, messages=from_wire_messages(messages, state.messages), active_message_id=None
        )

    def _state_snapshot(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        return replace(state, agent_state=event.get("snapshot"))

    def _state_delta(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        """Apply the event's JSON Patch to the latest state (a new value; the old is kept).

        A patch that does not apply leaves the state as it was, as AG-UI's own client does:
        the next `STATE_SNAPSHOT` sets it right, and the run goes on.
        """
        delta = event.get("delta")
        if not isinstance(delta, list):
            _log.warning("STATE_DELTA not applied: its delta is not a list of operations")
            return state
        try:
            patched = jsonpatch.apply_patch(
                state.agent_state if state.agent_state is not None else {}, delta
            )
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError) as error:
            _log.warning("STATE_DELTA not applied: %s", error)
            return state
        return replace(state, agent_state=patched)

    def _run_finished(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        outcome = event.get("outcome")
        interrupts: tuple[dict[str, object], ...] = ()
        if isinstance(outcome, Mapping) and outcome.get("type") == "interrupt":
            raw = outcome.get("interrupts")
            interrupts = tuple(
                {str(k): v for k, v in item.items()}
                for item in (raw if isinstance(raw, list) else [])
                if isinstance(item, Mapping)
            )
        reason = tanstack_metadata(event).get("finishReason")
        state = _complete_streaming_calls(state)
        for descriptor in interrupts:
            state = _mark_approval(state, descriptor)
        return replace(
            state,
            run_status="interrupted" if interrupts else "finished",
            run_id=_str(event.get("runId")) or state.run_id,
            interrupts=interrupts,
            finish_reason=reason if isinstance(reason, str) else None,
            terminal=dict(event),
        )

    def _run_error(self, state: StreamState, event: Mapping[str, object]) -> StreamState:
        message = _str(event.get("message")) or "An error occurred"
        code = _str(event.get("code"))
        if code not in REFUSAL_CODES:  # a refused continuation's batch stands, to answer again
            state = _mark_turns_calls(state, _IN_FLIGHT, status="stopped", error=None)
        return replace(
            state, run_status="error", error=message, error_code=code,
            terminal=dict(event),
        )  # fmt: skip

    def _ensure_assistant(
        self, state: StreamState, message_id: str | None
    ) -> tuple[StreamState, str]:
        target = message_id or state.active_message_id
        if target is not None and any(m.id == target for m in state.messages):
            return replace(state, active_message_id=target), target
        target = target or self.new_id()
        message = ChatMessage(id=target, role="assistant")
        return replace(state, messages=(*state.messages, message), active_message_id=target), target


_Handler = Callable[[StreamProcessor, StreamState, Mapping[str, object]], StreamState]
_HANDLERS: dict[str, _Handler] = {
    "RUN_STARTED": StreamProcessor._run_started,
    "TEXT_MESSAGE_START": StreamProcessor._text_start,
    "TEXT_MESSAGE_CONTENT": StreamProcessor._text_content,
    "TEXT_MESSAGE_CHUNK": StreamProcessor._text_content,
    "TOOL_CALL_START": StreamProcessor._tool_start,
    "TOOL_CALL_ARGS": StreamProcessor._tool_args,
    "TOOL_CALL_END": StreamProcessor._tool_end,
    "TOOL_CALL_CHUNK": StreamProcessor._tool_chunk,
    "TOOL_CALL_RESULT": StreamProcessor._tool_result,
    "MESSAGES_SNAPSHOT": StreamProcessor._snapshot,
    "STATE_SNAPSHOT": StreamProcessor._state_snapshot,
    "STATE_DELTA": StreamProcessor._state_delta,
    "RUN_FINISHED": StreamProcessor._run_finished,
    "RUN_ERROR": StreamProcessor._run_error,
    "CUSTOM": StreamProcessor._custom,
}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _iso_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


def _update_message(
    state: StreamState, message_id: str, change: Callable[[ChatMessage], ChatMessage]
) -> StreamState:
    messages = tuple(change(m) if m.id == message_id else m for m in state.messages)
    return replace(state, messages=messages)


def _update_call(
    state: StreamState, call_id: str, change: Callable[[ToolCallPart], ToolCallPart]
) -> StreamState:
    found = find_call(state.messages, call_id)
    if found is None:
        return state
    position, index = found
    message = state.messages[position]
    parts = list(message.parts)
    part = parts[index]
    assert isinstance(part, ToolCallPart)
    parts[index] = change(part)
    messages = list(state.messages)
    messages[position] = replace(message, parts=tuple(parts))
    return replace(state, messages=tuple(messages))


def _set_result(
    state: StreamState, call_id: str, content: str, output: object, error: str | None
) -> StreamState:
    found = find_call(state.messages, call_id)
    if found is None:  # a result for a call we never saw: nothing to attach it to
        return state
    position, index = found
    result = ToolResultPart(tool_call_id=call_id, content=content, error=error)
    messages = list(state.messages)
    messages[position] = with_tool_result(messages[position], index, output, result, error)
    return replace(state, messages=tuple(messages))


def _complete_streaming_calls(state: StreamState) -> StreamState:
    if not any(p.status == "streaming" for m in state.messages for p in m.tool_calls):
        return state

    def complete(message: ChatMessage) -> ChatMessage:
        parts = tuple(
            replace(p, status="running", input=parse_tool_arguments(p.arguments))
            if isinstance(p, ToolCallPart) and p.status == "streaming"
            else p
            for p in message.parts
        )
        return replace(message, parts=parts)

    return replace(state, messages=tuple(complete(m) for m in state.messages))


#: A call in one of these states when the person sends a new message never gets its result:
#: the engine leaves it out of any later batch, and the model reads it as without one. A
#: rejection or cancellation keeps its word: nothing ran either way.
_UNFINISHED = frozenset({"streaming", "running", "awaiting-approval", "approved"})
LEFT_BEHIND = "The conversation went on without its result."
#: A call in one of these states when its run ends in an error never gets its result from
#: that run (an approval's answer, held by a failed send, is the batch's to show).
_IN_FLIGHT = frozenset({"streaming", "running"})


def _mark_turns_calls(
    state: StreamState, statuses: frozenset[str], *, status: ToolCallStatus, error: str | None
) -> StreamState:
    """The turn's calls in one of `statuses`, given `status` and `error`. Only the turn
    since the last user message can hold one: earlier turns were marked when it was sent."""
    messages = list(state.messages)
    changed = False
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.role == "user":
            break
        if not any(part.status in statuses for part in message.tool_calls):
            continue
        messages[position] = replace(
            message,
            parts=tuple(
                replace(part, status=status, error=error)
                if isinstance(part, ToolCallPart) and part.status in statuses
                else part
                for part in message.parts
            ),
        )
        changed = True
    return replace(state, messages=tuple(messages)) if changed else state


def _mark_approval(state: StreamState, descriptor: Mapping[str, object]) -> StreamState:
    call_id = _str(descriptor.get("toolCallId"))
    metadata = descriptor.get("metadata")
    kind = metadata.get("kind") if isinstance(metadata, Mapping) else None
    if call_id is None or not (
        kind == "approval" or descriptor.get("reason") == LEGACY_APPROVAL_REASON
    ):
        return state
    approval_id = _str(descriptor.get("id"))
    return _update_call(
        state,
        call_id,
        lambda part: replace(
            part, status="awaiting-approval", approval_id=approval_id, decision=None
        ),
    )

"""Reading and extending the message history (AG-UI messages).

Owns argument parsing, finding pending tool calls, and building tool-result messages. Linear
in the history: one pass to index results, one to collect calls. The scans read a `History`'s
fields, so they build no message model.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain, compress, repeat
from typing import Any, cast

from ag_ui.core import AssistantMessage, Message, ToolMessage

from chat_app.interrupts import TOOL_MESSAGE_ID_PREFIX, tool_result_text

from .messages import History


def parse_arguments(text: str | None) -> dict[str, Any]:
    """`JSON.parse(arguments.trim() || "{}")`; anything but an object becomes `{}`."""
    try:
        value = json.loads((text or "").strip() or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def arguments_are_valid_json(text: str | None) -> bool:
    try:
        return isinstance(json.loads((text or "").strip() or "{}"), dict)
    except json.JSONDecodeError:
        return False


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRef:
    """A tool call found in the history, with the assistant message that made it."""

    message_id: str
    id: str
    name: str
    arguments: str
    has_result: bool

    @property
    def args(self) -> dict[str, Any]:
        return parse_arguments(self.arguments)


def _is_result(message: ToolMessage) -> bool:
    # A tool message that only marks a pending execution is not a result.
    content = message.content
    if not isinstance(content, str):
        return True  # content parts: never the marker
    if "pendingExecution" not in content and "\\u" not in content:
        return True  # no such key, however the JSON is written: nothing to parse
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return True
    return not (isinstance(value, dict) and value.get("pendingExecution") is True)


def tool_calls(
    messages: Sequence[Message], *, reopened: Container[str] | None = None
) -> list[ToolCallRef]:
    """Every tool call in the history, in order, marked with whether it has a result.

    With `reopened`, a call that has a result is left out unless its id is in `reopened`
    (what a continuation needs: the calls still pending, and those it answers again), and so
    is one without a result that was left behind: by a later user message (its batch ended
    without it, answers the ledger held already, say, and the person went on), or by a later
    turn of the model's that called tools (a run started again from the history as it was,
    in which the model read it as without a result, and whose pause did not ask about it).
    """
    # The per-message work runs in C (a history can hold tens of thousands of messages): the
    # messages are sorted by kind, then only tool results and asking turns are looked at, in
    # their views (see `History.views`), so no message model is built.
    history = _as_history(messages)
    kinds, views = history.kinds(), history.views()
    results = list(cast(Iterable[ToolMessage], compress(views, map(_IS_TOOL, kinds))))
    answered = {message.tool_call_id for message in results if _is_result(message)}
    # For a continuation, where the person went on (the last user message) and where its
    # batch begins (`_batch_start`): a call without a result before the one was left behind,
    # and so was one between the two that nothing answered (a call marked as running on the
    # client, `pendingExecution`, is still under way).
    went_on = history.last_user() + 1 if reopened is not None else 0
    batch = _batch_start(kinds, views, went_on - 1) if reopened is not None else 0
    marked = {message.tool_call_id for message in results} if went_on < batch else set()
    found: list[ToolCallRef] = []
    for message, before in chain(
        zip(_asking(views[:went_on], kinds[:went_on]), repeat("person")),
        zip(_asking(views[went_on:batch], kinds[went_on:batch]), repeat("turn")),
        zip(_asking(views[batch:], kinds[batch:]), repeat("")),
    ):
        for call in message.tool_calls or ():
            has_result = call.id in answered
            if has_result and reopened is not None and call.id not in reopened:
                continue
            if before == "person" and not has_result:
                continue
            if before == "turn" and call.id not in marked:
                continue
            if call.metadata and call.metadata.get("providerExecuted") is True:
                continue
            found.append(
                ToolCallRef(
                    message_id=message.id,
                    id=call.id,
                    name=call.function.name,
                    arguments=call.function.arguments,
                    has_result=has_result,
                )
            )
    return found


def _batch_start(kinds: Sequence[type | None], views: Sequence[Any], last_user: int) -> int:
    """Where a continuation's batch begins: the last assistant message since `last_user`
    that calls tools (one pause asks about the calls of one model turn), read from the end;
    else just after `last_user`."""
    for index in range(len(views) - 1, last_user, -1):
        if kinds[index] is AssistantMessage and views[index].tool_calls:
            return index
    return last_user + 1


def _asking(views: Sequence[Any], kinds: Sequence[type | None]) -> Iterable[AssistantMessage]:
    """The assistant messages among `views` that call tools."""
    turns = list(compress(views, map(_IS_ASSISTANT, kinds)))
    return cast(Iterable[AssistantMessage], compress(turns, map(_TOOL_CALLS, turns)))


def tool_result_positions(messages: Sequence[Message]) -> dict[str, int]:
    """The index of the first tool message answering each call id, in one pass over kinds."""
    history = _as_history(messages)
    tools = cast(Sequence[ToolMessage], history.views())  # read only where the kind says so
    positions: dict[str, int] = {}
    for index in compress(range(len(tools)), map(_IS_TOOL, history.kinds())):
        positions.setdefault(tools[index].tool_call_id, index)
    return positions


def answers_at(messages: Sequence[Message], index: int, call_id: str) -> bool:
    """Whether the message at `index` is still the tool result for `call_id`."""
    history = _as_history(messages)
    if index >= len(history) or history.kinds()[index] is not ToolMessage:
        return False
    return bool(history.views()[index].tool_call_id == call_id)


def _as_history(messages: Sequence[Message]) -> History:
    # A plain list (a caller's own) is wrapped: its messages are built already.
    return messages if isinstance(messages, History) else History(messages)


_IS_TOOL = partial(operator.is_, ToolMessage)
_IS_ASSISTANT = partial(operator.is_, AssistantMessage)
_TOOL_CALLS = operator.attrgetter("tool_calls")


def tool_message(call_id: str, content: Any, *, error: bool = False) -> ToolMessage:
    """The history entry for a tool result (`id` = `tool-<toolCallId>`, as TanStack writes)."""
    return ToolMessage(
        id=TOOL_MESSAGE_ID_PREFIX + call_id,
        role="tool",
        tool_call_id=call_id,
        content=tool_result_text(content),
        error="error" if error else None,
    )

"""What the provider adapters share: the history put in provider order, tool schemas, notes.

Providers insist that every tool call is answered right after the assistant turn that made it
(OpenAI: a `tool` message per call; Anthropic: a `tool_result` block in the next user turn).
AG-UI histories do not promise that (a client may append results late, or keep a placeholder),
so `paired` rebuilds the order. Imports `ag_ui.core` and the stdlib, never a provider SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ag_ui.core import (
    ActivityMessage,
    AssistantMessage,
    ReasoningMessage,
    TextPart,
    ToolMessage,
)

if TYPE_CHECKING:
    from ..tools import Tool

MISSING_RESULT = "No result was recorded for this tool call."
EMPTY_OBJECT_SCHEMA: dict[str, object] = {"type": "object", "properties": {}}


def missing_extra(package: str, provider: str) -> str:
    """The message for an adapter whose SDK (an optional extra) is not installed."""
    return (
        f"The {provider} model adapter needs the {package!r} package, an optional extra. "
        "Install the extras with: pip install -r requirements-models.txt"
    )


def paired(messages: Sequence[Any]) -> list[Any]:
    """The messages with each call's result right after its assistant message, in call order.

    A call with no result gets an error result saying so; a result whose call is not in the
    history is dropped; activity and reasoning messages are left out (no provider reads them).
    """
    results: dict[str, ToolMessage] = {}
    for message in messages:
        if isinstance(message, ToolMessage):
            results[message.tool_call_id] = message  # the latest one wins
    ordered: list[Any] = []
    placed: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage | ActivityMessage | ReasoningMessage):
            continue
        ordered.append(message)
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls or ():
            if call.id in placed:
                continue
            placed.add(call.id)
            ordered.append(
                results.get(call.id)
                or ToolMessage(
                    id=f"tool-{call.id}",
                    role="tool",
                    tool_call_id=call.id,
                    content=MISSING_RESULT,
                    error="error",
                )
            )
    return ordered


def text_of(content: object) -> str:
    """A message's text: the string itself, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.text for part in content if isinstance(part, TextPart))
    return ""


def system_text(instructions: str | None, system: Sequence[str], notes: Sequence[str]) -> str:
    """Instructions, the history's own system messages, then this run's middleware notes."""
    return "\n\n".join(part for part in (instructions, *system, *notes) if part and part.strip())


def parameters(tool: Tool) -> dict[str, object]:
    """The tool's input schema as an object schema (a tool without one takes `{}`)."""
    schema = tool.input_schema
    if not schema:
        return dict(EMPTY_OBJECT_SCHEMA)
    return dict(schema)

"""Anthropic's Messages API, streamed.

Owns `AnthropicModel`, `AnthropicModelSettings` and `AnthropicStreamedResponse`. Needs the
`anthropic` SDK, an optional extra (`requirements-models.txt`); nothing imports this module
unless that provider is chosen. The system prompt travels apart from the messages, tool calls
are `tool_use` blocks answered by `tool_result` blocks (`is_error` for failures, rejections and
cancellations) in the next user turn, and consecutive turns of one role are merged, as the API
requires. Never sees AG-UI events.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from ag_ui.core import (
    AssistantMessage,
    DataSource,
    DeveloperMessage,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolMessage,
    UrlSource,
    UserMessage,
)

from ..history import parse_arguments
from ._history import missing_extra, paired, parameters, system_text, text_of
from .base import Model, ModelEvent, ModelRequest, TextDelta, ToolCallDelta
from .errors import (
    connection_error,
    error_detail,
    status_error,
    stream_error,
    timeout_error,
)

try:
    import anthropic
    import httpx2
    from anthropic.types import (
        ContentBlockParam,
        ImageBlockParam,
        MessageParam,
        RawMessageStreamEvent,
        TextBlockParam,
        ToolParam,
    )
except ImportError as error:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(missing_extra("anthropic", "Anthropic")) from error

if TYPE_CHECKING:
    from ..tools import Tool

DEFAULT_MAX_TOKENS = 4096
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_ImageType = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]


class AnthropicModelSettings(TypedDict, total=False):
    """Settings for `AnthropicModel`; every key is optional."""

    max_tokens: int
    """The most tokens one turn may produce (the API requires it; default 4096)."""
    temperature: float
    timeout: float
    """Seconds to wait for the response to start, and then for each event (default 60)."""
    max_retries: int
    """Retries of 408/409/429/5xx/529, timeouts and connection errors, with exponential
    backoff that honours `retry-after` (the SDK's; default 2)."""


class AnthropicModel(Model):
    """A Claude model through the Messages API, streamed.

    Example::

        model = AnthropicModel("claude-sonnet-4-5")  # ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        provider_name: str = "Anthropic",
        instructions: str | None = None,
        settings: AnthropicModelSettings | None = None,
        client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        self.name = model_name
        self.model_name = model_name
        self.provider_name = provider_name
        self.instructions = instructions
        self.settings: AnthropicModelSettings = settings or {}
        self.timeout = float(self.settings.get("timeout", DEFAULT_TIMEOUT))
        self.max_retries = int(self.settings.get("max_retries", DEFAULT_MAX_RETRIES))
        self.client = client or anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        system, messages = self._conversation(request)
        options: dict[str, Any] = {}
        if system:
            options["system"] = system
        if request.tools:
            options["tools"] = [_tool(item) for item in request.tools]
        if "temperature" in self.settings:
            options["temperature"] = self.settings["temperature"]
        response = AnthropicStreamedResponse()
        started = False
        try:
            events = await self.client.messages.create(
                model=self.model_name,
                max_tokens=self.settings.get("max_tokens", DEFAULT_MAX_TOKENS),
                messages=messages,
                stream=True,
                **options,
            )
            started = True
            async with events:
                async for event in events:
                    for delta in response.feed(event):
                        yield delta
        except anthropic.APIStatusError as error:
            detail = error_detail(error.body, error.message)
            if started:  # an `error` event inside the stream (e.g. overloaded_error)
                raise stream_error(self.provider_name, detail) from error
            raise status_error(
                self.provider_name,
                error.status_code,
                detail,
                model=self.model_name,
                retries=self.max_retries,
            ) from error
        except (anthropic.APITimeoutError, httpx2.TimeoutException) as error:
            attempts = None if started else self.max_retries + 1
            raise timeout_error(self.provider_name, self.timeout, attempts=attempts) from error
        except (anthropic.APIConnectionError, httpx2.TransportError) as error:
            if started:
                detail = f"the connection broke: {error.__cause__ or error}"
                raise stream_error(self.provider_name, detail) from error
            raise connection_error(self.provider_name, str(self.client.base_url), error) from error
        except anthropic.APIError as error:
            detail = error_detail(error.body, error.message)
            raise stream_error(self.provider_name, detail) from error

    def _conversation(self, request: ModelRequest) -> tuple[str, list[MessageParam]]:
        system: list[str] = []
        turns: list[tuple[Literal["user", "assistant"], list[ContentBlockParam]]] = []

        def add(role: Literal["user", "assistant"], blocks: list[ContentBlockParam]) -> None:
            if not blocks:
                return
            if turns and turns[-1][0] == role:
                turns[-1][1].extend(blocks)  # the API wants roles to alternate
            else:
                turns.append((role, blocks))

        for message in paired(request.messages):
            if isinstance(message, SystemMessage | DeveloperMessage):
                system.append(message.content)
            elif isinstance(message, UserMessage):
                add("user", _user_blocks(message.content))
            elif isinstance(message, AssistantMessage):
                blocks: list[ContentBlockParam] = []
                if message.content and message.content.strip():
                    blocks.append({"type": "text", "text": message.content})
                for call in message.tool_calls or ():
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": call.id,
                            "name": call.function.name,
                            "input": parse_arguments(call.function.arguments),
                        }
                    )
                add("assistant", blocks)
            elif isinstance(message, ToolMessage):
                add(
                    "user",
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": message.tool_call_id,
                            "content": _result_content(message.content),
                            "is_error": bool(message.error),
                        }
                    ],
                )
        if turns and turns[0][0] == "assistant":  # the conversation must open with the user
            turns.insert(0, ("user", [{"type": "text", "text": "(conversation start)"}]))
        messages = [_message(role, blocks) for role, blocks in turns]
        return system_text(self.instructions, system, request.notes), messages


class AnthropicStreamedResponse:
    """Turns Messages API stream events into our deltas.

    Content blocks arrive one after another (`content_block_start`, deltas,
    `content_block_stop`), so text and `input_json_delta` pieces go out as they arrive.

    Example::

        response = AnthropicStreamedResponse()
        deltas = [d for event in events for d in response.feed(event)]
    """

    def __init__(self) -> None:
        self._tool_ids: dict[int, str] = {}
        self._sent_input: set[int] = set()
        self._initial_input: dict[int, str] = {}

    def feed(self, event: RawMessageStreamEvent) -> list[ModelEvent]:
        if event.type == "content_block_start":
            block = event.content_block
            if block.type == "text":
                return [TextDelta(block.text)] if block.text else []
            if block.type == "tool_use":
                self._tool_ids[event.index] = block.id
                if isinstance(block.input, dict) and block.input:
                    self._initial_input[event.index] = json.dumps(block.input)
                return [ToolCallDelta(id=block.id, name=block.name)]
            return []  # thinking, server tools: nothing for the engine
        if event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return [TextDelta(delta.text)] if delta.text else []
            if delta.type == "input_json_delta" and event.index in self._tool_ids:
                if not delta.partial_json:
                    return []
                self._sent_input.add(event.index)
                return [ToolCallDelta(id=self._tool_ids[event.index], arguments=delta.partial_json)]
            return []
        if event.type == "content_block_stop" and event.index in self._tool_ids:
            if event.index in self._sent_input:
                return []
            # No input deltas: the input is the block's own (a tool without arguments: `{}`).
            arguments = self._initial_input.get(event.index, "{}")
            return [ToolCallDelta(id=self._tool_ids[event.index], arguments=arguments)]
        return []


def _message(role: Literal["user", "assistant"], blocks: list[ContentBlockParam]) -> MessageParam:
    if role == "user":
        return {"role": "user", "content": blocks}
    return {"role": "assistant", "content": blocks}


def _tool(item: Tool) -> ToolParam:
    tool: ToolParam = {"name": item.name, "input_schema": parameters(item)}
    if item.description:
        tool["description"] = item.description
    return tool


def _result_content(content: str | list[Any]) -> str | list[TextBlockParam | ImageBlockParam]:
    if isinstance(content, str):
        return content
    blocks: list[TextBlockParam | ImageBlockParam] = []
    for block in _user_blocks(content):
        if block["type"] in ("text", "image"):
            blocks.append(block)
    return blocks or text_of(content)


def _user_blocks(content: str | list[Any]) -> list[ContentBlockParam]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    blocks: list[ContentBlockParam] = []
    for part in content:
        if isinstance(part, TextPart):
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        elif (
            isinstance(part, ImagePart)
            and isinstance(part.source, DataSource)
            and part.source.mime_type in _IMAGE_TYPES
        ):
            media_type = cast(_ImageType, part.source.mime_type)
            blocks.append(
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": media_type,
                        "data": part.source.value,
                    },
                }
            )
        elif isinstance(part, ImagePart) and isinstance(part.source, UrlSource):
            blocks.append({"type": "image", "source": {"type": "url", "url": part.source.value}})
        else:
            blocks.append({"type": "text", "text": f"[a {part.type} attachment was left out]"})
    return blocks

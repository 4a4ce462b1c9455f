"""OpenAI-compatible chat completions: OpenAI, Azure OpenAI, Ollama, vLLM, LM Studio, OpenRouter.

Owns `OpenAIModel`, `OpenAIModelSettings` and `OpenAIStreamedResponse`. Needs the `openai` SDK,
an optional extra (`requirements-models.txt`); nothing imports this module unless that
provider is chosen. Translates AG-UI history into chat-completion messages and streamed
`chat.completion.chunk`s into `TextDelta` / `ToolCallDelta`; never sees AG-UI events.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

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

from ._history import missing_extra, paired, parameters, system_text, text_of
from .base import Model, ModelEvent, ModelRequest, TextDelta, ToolCallDelta
from .errors import (
    connection_error,
    error_detail,
    status_error,
    stream_error,
    timeout_error,
    unreadable_stream,
)

try:
    import openai
    from openai.types.chat import (
        ChatCompletionChunk,
        ChatCompletionContentPartParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
    )
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
    from openai.types.shared_params import FunctionDefinition
except ImportError as error:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(missing_extra("openai", "OpenAI")) from error

if TYPE_CHECKING:
    import httpx

    from ..tools import Tool

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2


class OpenAIModelSettings(TypedDict, total=False):
    """Settings for `OpenAIModel`; every key is optional."""

    temperature: float
    max_tokens: int
    parallel_tool_calls: bool
    timeout: float
    """Seconds to wait for the response to start, and then for each chunk (default 60)."""
    max_retries: int
    """Retries of 408/409/429/5xx, timeouts and connection errors, with exponential backoff
    that honours `retry-after` (the SDK's; default 2)."""


class OpenAIModel(Model):
    """A chat-completions model, streamed. Any OpenAI-compatible server works (`base_url`).

    Example::

        model = OpenAIModel("gpt-4o-mini")  # OPENAI_API_KEY, OPENAI_BASE_URL from the env
        local = OpenAIModel("llama3.1", base_url="http://localhost:11434/v1", api_key="ollama",
                            provider_name="Ollama")
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        provider_name: str = "OpenAI",
        instructions: str | None = None,
        settings: OpenAIModelSettings | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.name = model_name
        self.model_name = model_name
        self.provider_name = provider_name
        self.instructions = instructions
        self.settings: OpenAIModelSettings = settings or {}
        self.timeout = float(self.settings.get("timeout", DEFAULT_TIMEOUT))
        self.max_retries = int(self.settings.get("max_retries", DEFAULT_MAX_RETRIES))
        self.client = client or openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        response = OpenAIStreamedResponse()
        started = False
        try:
            chunks = await self.client.chat.completions.create(
                model=self.model_name,
                messages=self._messages(request),
                stream=True,
                **self._options(request),
            )
            started = True
            async with chunks:
                async for chunk in chunks:
                    for event in response.feed(chunk):
                        yield event
            if not response.finished:
                raise unreadable_stream(self.provider_name, _unfinished(chunks.response))
        except json.JSONDecodeError as error:  # the SDK reads each event's data as JSON
            detail = f"an event's data is not JSON ({error})."
            raise unreadable_stream(self.provider_name, detail) from error
        except openai.APIStatusError as error:
            raise status_error(
                self.provider_name,
                error.status_code,
                error_detail(error.body, error.message),
                model=self.model_name,
                retries=self.max_retries,
            ) from error
        except openai.APITimeoutError as error:
            attempts = None if started else self.max_retries + 1
            raise timeout_error(self.provider_name, self.timeout, attempts=attempts) from error
        except openai.APIConnectionError as error:
            if started:
                detail = f"the connection broke: {error.__cause__ or error}"
                raise stream_error(self.provider_name, detail) from error
            raise connection_error(self.provider_name, str(self.client.base_url), error) from error
        except openai.APIError as error:  # an error object inside the stream
            detail = error_detail(error.body, error.message)
            raise stream_error(self.provider_name, detail) from error
        for event in response.close():
            yield event

    def _options(self, request: ModelRequest) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if request.tools:
            options["tools"] = [_tool(item) for item in request.tools]
            if "parallel_tool_calls" in self.settings:
                options["parallel_tool_calls"] = self.settings["parallel_tool_calls"]
        if "temperature" in self.settings:
            options["temperature"] = self.settings["temperature"]
        if "max_tokens" in self.settings:
            options["max_tokens"] = self.settings["max_tokens"]
        return options

    def _messages(self, request: ModelRequest) -> list[ChatCompletionMessageParam]:
        messages: list[ChatCompletionMessageParam] = []
        system = system_text(self.instructions, (), request.notes)
        if system:
            messages.append({"role": "system", "content": system})
        for message in paired(request.messages):
            if isinstance(message, SystemMessage | DeveloperMessage):
                # "developer" is OpenAI-only; compatible servers all know "system".
                messages.append({"role": "system", "content": message.content})
            elif isinstance(message, UserMessage):
                messages.append({"role": "user", "content": _user_content(message.content)})
            elif isinstance(message, AssistantMessage):
                calls: list[ChatCompletionMessageFunctionToolCallParam] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": _sent_arguments(call.function.arguments),
                        },
                    }
                    for call in message.tool_calls or ()
                ]
                if calls:
                    content = message.content or None
                    messages.append({"role": "assistant", "content": content, "tool_calls": calls})
                elif message.content:
                    messages.append({"role": "assistant", "content": message.content})
            elif isinstance(message, ToolMessage):
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": message.tool_call_id,
                        "content": _result_text(message),
                    }
                )
        return messages


@dataclass(kw_only=True)
class _Call:
    id: str
    name: str
    arguments: str = ""
    unsent: str = ""
    started: bool = False
    done: bool = False


class OpenAIStreamedResponse:
    """Turns `chat.completion.chunk`s into our deltas, one tool call at a time.

    OpenAI streams parallel tool calls by `index`, and may interleave them; the engine wants
    each call whole before the next begins. The call being streamed goes out as it arrives;
    the others wait. A call is finished once its arguments parse and a later call has begun
    (or at the end), so sequential streams stay live and interleaved ones stay correct.

    Example::

        response = OpenAIStreamedResponse()
        events = [e for chunk in chunks for e in response.feed(chunk)] + response.close()
    """

    def __init__(self) -> None:
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._current: _Call | None = None
        #: A chunk said why the response ended (`finish_reason`): it is whole.
        self.finished = False

    def feed(self, chunk: ChatCompletionChunk) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        for choice in chunk.choices:
            if choice.index != 0:  # we never ask for n > 1
                continue
            if choice.finish_reason is not None:
                self.finished = True
            if choice.delta.content:
                events.append(TextDelta(choice.delta.content))
            for part in choice.delta.tool_calls or ():
                self._add(part)
            events.extend(self._pump())
        return events

    def close(self) -> list[ModelEvent]:
        """Everything still held back, in call order, once the stream has ended."""
        events: list[ModelEvent] = []
        for call in self._calls:
            if call.done:
                if call.unsent.strip():
                    logger.warning("dropped arguments after call %s was complete", call.id)
                continue
            if not call.started or call.unsent:
                events.append(self._send(call))
            call.done = True
        self._current = None
        return events

    def _add(self, part: ChoiceDeltaToolCall) -> None:
        function = part.function
        name = function.name if function is not None else None
        index = part.index if isinstance(part.index, int) else None  # some servers omit it
        call: _Call | None
        if index is not None:
            call = self._by_index.get(index)
            # A new id and name at a known index is a new call (some servers reuse index 0).
            if call is not None and part.id and name and call.id != part.id:
                call = None
        elif part.id:
            call = next((known for known in self._calls if known.id == part.id), None)
        else:
            call = self._calls[-1] if self._calls else None
        if call is None:
            call = _Call(id=part.id or f"call_{secrets.token_hex(8)}", name=name or "")
            self._calls.append(call)
            if index is not None:
                self._by_index[index] = call
        elif name and not call.name:
            call.name = name
        if function is not None and function.arguments:
            call.arguments += function.arguments
            call.unsent += function.arguments

    def _pump(self) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        while True:
            if self._current is None:
                self._current = next((c for c in self._calls if not c.done and c.name), None)
                if self._current is None:
                    return events
            call = self._current
            if not call.started or call.unsent:
                events.append(self._send(call))
            waiting = any(not other.done and other is not call for other in self._calls)
            if not (waiting and _is_json(call.arguments)):
                return events
            call.done = True
            self._current = None

    @staticmethod
    def _send(call: _Call) -> ToolCallDelta:
        delta = ToolCallDelta(
            id=call.id, name=None if call.started else call.name, arguments=call.unsent
        )
        call.started = True
        call.unsent = ""
        return delta


def _unfinished(response: httpx.Response) -> str:
    """Why a stream that ended without a `finish_reason` is not a whole response."""
    if "json" in response.headers.get("content-type", ""):
        return (
            "the server answered with one JSON document rather than a stream of events: "
            "it does not honour `stream: true`."
        )
    return (
        "it ended before the response was complete (no chunk said why it finished): the "
        "connection was cut, or the server stopped mid-answer."
    )


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _tool(item: Tool) -> ChatCompletionFunctionToolParam:
    function: FunctionDefinition = {"name": item.name, "parameters": parameters(item)}
    if item.description:
        function["description"] = item.description
    return {"type": "function", "function": function}


def _sent_arguments(arguments: str) -> str:
    # Compatible servers (Ollama among them) refuse history whose arguments are not JSON; the
    # model still reads the engine's error result for that call.
    try:
        return arguments if isinstance(json.loads(arguments or "{}"), dict) else "{}"
    except ValueError:
        return "{}"


def _result_text(message: ToolMessage) -> str:
    # Chat completions have no error flag on tool results, so the text says it.
    text = text_of(message.content)
    return f"Error: {text}" if message.error else text


def _user_content(content: str | list[Any]) -> str | list[ChatCompletionContentPartParam]:
    if isinstance(content, str):
        return content
    parts: list[ChatCompletionContentPartParam] = []
    for part in content:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart) and isinstance(part.source, DataSource):
            url = f"data:{part.source.mime_type};base64,{part.source.value}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif isinstance(part, ImagePart) and isinstance(part.source, UrlSource):
            parts.append({"type": "image_url", "image_url": {"url": part.source.value}})
        else:
            parts.append({"type": "text", "text": f"[a {part.type} attachment was left out]"})
    return parts

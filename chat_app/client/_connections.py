"""Connections: how a request reaches an agent and its events come back.

Owns `Connection` (the seam: one method, `stream(body)`), `InProcessConnection` (calls an
async callable given from outside, e.g. `Agent.run`, with the body read by another given
from outside, e.g. the server's `read_run_input`; no HTTP, and this layer never imports
the agent), `SSEConnection` (POST to any AG-UI endpoint over `httpx`, read SSE) and
`MockConnection` (scripted answers for tests). Every failure to deliver a complete stream
becomes a `TransportError` whose message a person can act on (which agent, what it answered,
what the server said); a stalled stream times out instead of hanging, and an SSE stream
must carry AG-UI events (`event_problem`).
"""

from __future__ import annotations

import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import httpx
from ag_ui.core import RunAgentInput
from pydantic import BaseModel, ValidationError

from chat_app.interrupts import RUN_ID_HEADER, SSEDecodeError, SSEDecoder, js_json_dumps

from ._agui import event_problem
from ._errors import TransportError
from ._http import network_reason, seconds, status_words

#: Request headers; a `bytes` value is sent as it is (UTF-8 text).
Headers = Mapping[str, str | bytes]

__all__ = [
    "Connection",
    "EventEncoder",
    "InProcessConnection",
    "MockConnection",
    "RunFunction",
    "RunInputReader",
    "SSEConnection",
]

_log = logging.getLogger(__name__)

WireEvent = dict[str, object]
#: `RunAgentInput -> AsyncIterator[event]`, such as `Agent.run`.
RunFunction = Callable[[RunAgentInput], AsyncIterator[Any]]
#: Reads a request body into a `RunAgentInput`, raising pydantic's `ValidationError` for one
#: that is not (as `RunAgentInput.model_validate` does; e.g. `chat_app.server.run_input.
#: read_run_input`, which checks the messages with msgspec and builds them only when read).
RunInputReader = Callable[[Mapping[str, Any]], RunAgentInput]
#: Turns whatever the run function yields into a wire dict (e.g. `event_to_wire`).
EventEncoder = Callable[[Any], Mapping[str, object]]


def bearer(token: str | None) -> dict[str, str]:
    """The `Authorization` header for an API token (none for `None`); an empty token is a
    mistake to say here, not a header the server would refuse as malformed."""
    if token is None:
        return {}
    if not token.strip():
        raise ValueError(
            "The API token is empty: pass one (python -m chat_app tokens create --user EMAIL "
            "--name NAME makes one), or none to send no Authorization."
        )
    return {"Authorization": f"Bearer {token.strip()}"}


class Connection(ABC):
    """Sends one AG-UI `RunAgentInput` body and yields the run's events as wire dicts."""

    @abstractmethod
    def stream(self, body: Mapping[str, object]) -> AsyncIterator[WireEvent]:
        """Yield events; raise `TransportError` when the stream cannot be completed."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources (nothing by default)."""


def default_encoder(event: object) -> Mapping[str, object]:
    """Pydantic AG-UI events as camelCase dicts without nulls; dicts as they are."""
    if isinstance(event, BaseModel):
        dumped: dict[str, object] = event.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped
    if isinstance(event, Mapping):
        return event
    raise TypeError(f"Cannot encode event of type {type(event).__name__}.")


class InProcessConnection(Connection):
    """Runs the agent in this process.

    Example::

        connection = InProcessConnection(agent.run, encode=event_to_wire, read=read_run_input)

    `read` reads each body (by default `RunAgentInput.model_validate`, which builds every
    message of the history: ~10 ms at 2,000 messages; the app gives the server's reader).
    """

    def __init__(
        self,
        run: RunFunction,
        *,
        encode: EventEncoder = default_encoder,
        read: RunInputReader = RunAgentInput.model_validate,
    ) -> None:
        self._run = run
        self._encode = encode
        self._read = read

    async def stream(self, body: Mapping[str, object]) -> AsyncIterator[WireEvent]:
        try:
            run_input = self._read(dict(body))
        except ValidationError as error:
            raise TransportError(f"The request is not a valid RunAgentInput: {error}") from error
        try:
            async for event in self._run(run_input):
                yield {str(k): v for k, v in self._encode(event).items()}
        except TransportError:
            raise
        except Exception as error:  # the agent crashed: the stream cannot be completed
            _log.exception("The in-process agent failed")  # its traceback, for whoever runs it
            reason = str(error) or type(error).__name__
            raise TransportError(f"The in-process agent failed: {reason}") from error


def _utf8(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


class SSEConnection(Connection):
    """POSTs the body to an AG-UI endpoint and reads `text/event-stream`.

    Example::

        connection = SSEConnection("http://127.0.0.1:8001/api/chat", timeout=30)

    Parameters:
        url: the endpoint.
        timeout: seconds allowed for connecting and for each read (a stalled stream fails).
        headers: extra request headers, or a function that gives them for each request (who
            the run acts for, say). A value may be `bytes` (UTF-8 text, as a name).
        token: an API token of the server (`python -m chat_app tokens create`), sent as
            `Authorization: Bearer <token>`: the run acts as the token's owner.
        transport: an `httpx` transport (e.g. `httpx.ASGITransport(app)` in tests).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 60.0,
        headers: Headers | Callable[[], Headers] | None = None,
        token: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url
        self._headers = headers if callable(headers) else dict(headers or {})
        self._token = bearer(token)
        self._timeout = timeout
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout), transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(self, body: Mapping[str, object]) -> AsyncIterator[WireEvent]:
        headers: dict[str, str | bytes] = {"Content-Type": "application/json"}
        headers["Accept"] = "text/event-stream"
        run_id = body.get("runId")
        if isinstance(run_id, str):
            headers[RUN_ID_HEADER] = run_id
        headers.update(self._headers() if callable(self._headers) else self._headers)
        headers.update(self._token)
        sent = [(name.encode("ascii"), _utf8(value)) for name, value in headers.items()]
        content = js_json_dumps(dict(body)).encode("utf-8")
        url, answered, events = self.url, False, 0
        try:
            request = self._client.stream("POST", url, content=content, headers=sent)
            async with request as response:
                answered = True
                content_type = response.headers.get("content-type", "")
                if response.status_code != 200:
                    said = status_words(response.status_code, await _head(response), content_type)
                    raise TransportError(
                        f"The agent at {url} answered {said}", status_code=response.status_code
                    )
                media = content_type.split(";")[0].strip().lower()
                if media and media != "text/event-stream":
                    raise TransportError(_not_a_stream(url, media), status_code=200)
                decoder = SSEDecoder()
                async for chunk in response.aiter_text():
                    for event in decoder.feed(chunk):
                        problem = event_problem(event)
                        if problem is not None:
                            raise TransportError(f"{NOT_AN_EVENT}: {problem}.")
                        events += 1
                        yield event
                try:
                    decoder.close()
                except SSEDecodeError:
                    raise TransportError(
                        f"The agent at {url} cut its stream off in the middle of an event."
                    ) from None
        except httpx.ConnectTimeout as error:
            raise TransportError(
                f"Could not connect to the agent at {url} within {seconds(self._timeout)}."
            ) from error
        except httpx.TimeoutException as error:
            raise TransportError(
                f"The agent at {url} did not answer in time: "
                + (
                    f"its stream stopped for {seconds(self._timeout)} in the middle of the run."
                    if events
                    else f"nothing came within {seconds(self._timeout)}."
                )
            ) from error
        except httpx.ConnectError as error:
            raise TransportError(
                f"Could not reach the agent at {url}: {network_reason(error)}."
            ) from error
        except (httpx.RemoteProtocolError, httpx.ReadError) as error:
            raise TransportError(
                f"The agent at {url} cut its stream off in the middle of the run "
                f"({network_reason(error)})."
                if answered
                else f"The agent at {url} closed the connection without answering "
                f"({network_reason(error)})."
            ) from error
        except httpx.HTTPError as error:
            raise TransportError(
                f"The request to the agent at {url} failed: {network_reason(error)}."
            ) from error
        except SSEDecodeError as error:
            reason = str(error).rstrip(".")
            raise TransportError(f"{NOT_AN_EVENT}: {reason[:1].lower()}{reason[1:]}.") from error


#: How a stream that carries something other than AG-UI events is reported.
NOT_AN_EVENT = "The agent sent something that is not an AG-UI event"

#: At most this much of an error answer's body is read.
_ERROR_BODY_LIMIT = 64 * 1024


async def _head(response: httpx.Response) -> bytes:
    """The start of an error answer's body (a server may stream an endless one)."""
    body = b""
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= _ERROR_BODY_LIMIT:
            break
    return body[:_ERROR_BODY_LIMIT]


def _not_a_stream(url: str, media: str) -> str:
    if "html" in media:
        return (
            f"The agent at {url} answered with a web page ({media}) instead of an event "
            f"stream: is that address its AG-UI endpoint?"
        )
    return f"The agent at {url} answered with {media} instead of an event stream."


class MockConnection(Connection):
    """A scripted connection for tests: `handler(body)` returns the events to stream.

    Every body sent is kept in `requests`. A handler may raise `TransportError`.
    """

    def __init__(self, handler: Callable[[Mapping[str, object]], object]) -> None:
        self._handler = handler
        self.requests: list[dict[str, object]] = []

    async def stream(self, body: Mapping[str, object]) -> AsyncIterator[WireEvent]:
        self.requests.append(dict(body))
        result = self._handler(body)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, AsyncIterator):
            async for event in result:
                yield _event(event)
            return
        if not isinstance(result, Iterable):
            raise TypeError("A MockConnection handler must return events.")
        for event in result:
            yield _event(event)


def _event(event: object) -> WireEvent:
    if not isinstance(event, Mapping):
        raise TypeError("Events must be mappings.")
    return {str(k): v for k, v in event.items()}

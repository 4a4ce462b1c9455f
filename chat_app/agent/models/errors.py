"""What a provider adapter raises when the provider call fails.

    ModelError                  one class, a closed set of codes
      code: "authentication"    the provider refused the credentials (401)
            "permission"        the credentials may not use this model (403)
            "not-found"         unknown model or wrong base URL (404)
            "bad-request"       the provider refused the request (400, 413, 422)
            "rate-limited"      429, still there after the SDK's bounded retries
            "timeout"           no answer (or no next chunk) within the timeout
            "connection"        the provider could not be reached
            "provider-error"    5xx / overloaded, or an error event in the stream

`Agent.run` turns any exception from `Model.stream` into one `RUN_ERROR`, whose message is
`str(error)`, so each message says what happened in plain words ("OpenAI rejected the API key
(401): …"). Imports only the stdlib.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

ModelErrorCode: TypeAlias = Literal[
    "authentication",
    "permission",
    "not-found",
    "bad-request",
    "rate-limited",
    "timeout",
    "connection",
    "provider-error",
]

_DETAIL_LIMIT = 300


class ModelError(Exception):
    """A provider call failed; the run ends with a `RUN_ERROR` carrying this message.

    Example::

        raise ModelError("OpenAI rejected the API key (401).", code="authentication",
                         provider="OpenAI", status=401)
    """

    def __init__(
        self,
        message: str,
        *,
        code: ModelErrorCode,
        provider: str,
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code: ModelErrorCode = code
        self.provider = provider
        self.status = status
        self.retryable = retryable

    def __repr__(self) -> str:
        return f"ModelError({self.message!r}, code={self.code!r}, status={self.status!r})"


def status_error(
    provider: str, status: int, detail: str, *, model: str, retries: int
) -> ModelError:
    """The error for an HTTP error status, worded for the person reading the run."""
    said = f": {detail}" if detail else "."
    if status == 401:
        return ModelError(
            f"{provider} rejected the API key ({status}){said}",
            code="authentication",
            provider=provider,
            status=status,
        )
    if status == 403:
        return ModelError(
            f"{provider} refused access to model {model!r} ({status}){said}",
            code="permission",
            provider=provider,
            status=status,
        )
    if status == 404:
        return ModelError(
            f"{provider} does not know model {model!r}, or the base URL is wrong ({status}){said}",
            code="not-found",
            provider=provider,
            status=status,
        )
    if status == 429:
        return ModelError(
            f"{provider} is rate limiting requests ({status}); gave up after {retries} "
            f"retries{said}",
            code="rate-limited",
            provider=provider,
            status=status,
            retryable=True,
        )
    if status >= 500:
        return ModelError(
            f"{provider} failed with HTTP {status} (after {retries} retries){said}",
            code="provider-error",
            provider=provider,
            status=status,
            retryable=True,
        )
    return ModelError(
        f"{provider} rejected the request ({status}){said}",
        code="bad-request",
        provider=provider,
        status=status,
    )


def timeout_error(provider: str, timeout: float, *, attempts: int | None) -> ModelError:
    """No response within `timeout` (`attempts` tries), or mid-stream (`attempts=None`)."""
    if attempts is None:
        message = (
            f"{provider} stopped sending its response: nothing arrived for {timeout:g} s "
            "(timed out)."
        )
    else:
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        message = f"{provider} did not answer within {timeout:g} s (timed out, {tries})."
    return ModelError(message, code="timeout", provider=provider, retryable=True)


def connection_error(provider: str, base_url: str, cause: BaseException) -> ModelError:
    reason = str(cause.__cause__ or cause) or type(cause).__name__
    return ModelError(
        f"Could not reach {provider} at {base_url}: {reason}",
        code="connection",
        provider=provider,
        retryable=True,
    )


def stream_error(provider: str, detail: str) -> ModelError:
    message = f"{provider} reported an error while streaming: {detail or 'no details'}"
    return ModelError(message, code="provider-error", provider=provider, retryable=True)


def unreadable_stream(provider: str, detail: str) -> ModelError:
    """A response that is not the stream a chat API sends (`detail` says how)."""
    message = f"{provider}'s response could not be read as a stream: {detail}"
    return ModelError(message, code="provider-error", provider=provider, retryable=True)


def error_detail(body: object, fallback: str = "") -> str:
    """The provider's own message from an error body (`{"error": {"message": …}}` and kin)."""
    found: object = None
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            found = inner.get("message")
        elif isinstance(inner, str):
            found = inner
        if found is None:
            found = body.get("message")
    elif isinstance(body, str):
        found = body
    text = found if isinstance(found, str) and found.strip() else fallback
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 1] + "…"

"""Errors of the client layer.

Tree::

    ClientError(Exception)          a run or a connection failed; carries `code`, `retryable`
        TransportError              network failure, non-200 answer, bad stream, timeout,
                                    a stream that ended without a terminal event (retryable)
        RunError                    the run ended with an AG-UI `RUN_ERROR` (not retryable)
    UsageError(RuntimeError)        the application misused the client (unknown interrupt,
                                    mutating while a submission is in flight, …)

Interrupt problems are not exceptions: they are `ItemInterruptError` / `BatchInterruptError`
values (from `chat_app.interrupts`) kept on the items and on the client's root error list.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["ClientError", "ClientErrorCode", "RunError", "TransportError", "UsageError"]

ClientErrorCode: TypeAlias = Literal["transport", "run-error"]


class ClientError(Exception):
    """A run or its connection failed."""

    code: ClientErrorCode = "transport"
    retryable: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class TransportError(ClientError):
    """The request could not be completed; sending the same request again may work."""

    code: ClientErrorCode = "transport"
    retryable = True

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class RunError(ClientError):
    """The server ended the run with `RUN_ERROR`."""

    code: ClientErrorCode = "run-error"
    retryable = False

    def __init__(self, message: str, *, run_code: str | None = None) -> None:
        super().__init__(message)
        #: The `code` field of the `RUN_ERROR` event, if any.
        self.run_code = run_code


class UsageError(RuntimeError):
    """A usage mistake by the application developer."""

"""Interrupt errors with TanStack's codes, fields and camelCase wire names.

Their wire form and every code, with when it is raised: `docs/protocol.md` §3.5 and §3.6.

Tree::

    ItemInterruptError      one resume item is wrong (scope "item")
    BatchInterruptError     the batch as a whole is wrong (scope "batch")
    InterruptResumeValidationError(Exception)
                            raised at a boundary with the list of both; becomes one RUN_ERROR
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, get_args

ItemInterruptErrorCode: TypeAlias = Literal[
    "invalid-payload",
    "invalid-edited-args",
    "invalid-tool-output",
    "invalid-response-schema",
    "unknown-interrupt",
    "expired",
    "stale",
    "conflict",
    "legacy-unsupported",
    # This project's: the answer comes from someone the policy does not allow to decide.
    "forbidden",
]
BatchInterruptErrorCode: TypeAlias = Literal[
    "incomplete-batch",
    "item-validation-failed",
    "unsupported-bulk-operation",
    "async-resolver",
    "inactive-transaction",
    "mixed-provenance",
    "transport",
    "server",
    "protocol",
    "invalid-response-schema",
    "expired",
    "stale",
    "conflict",
    "legacy-submit-failed",
]
ITEM_ERROR_CODES: frozenset[str] = frozenset(get_args(ItemInterruptErrorCode))
BATCH_ERROR_CODES: frozenset[str] = frozenset(get_args(BatchInterruptErrorCode))
ErrorSource: TypeAlias = Literal["client", "server", "transport"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ItemInterruptError:
    """An error that belongs to one interrupt of a batch."""

    scope: Literal["item"] = field(default="item", init=False)
    thread_id: str
    interrupted_run_id: str
    generation: int = 0
    interrupt_id: str
    code: ItemInterruptErrorCode
    message: str
    path: tuple[str | int, ...] | None = None
    source: Literal["client", "server"] = "client"
    retryable: bool = False

    def to_wire(self) -> dict[str, object]:
        wire: dict[str, object] = {
            "scope": self.scope,
            "threadId": self.thread_id,
            "interruptedRunId": self.interrupted_run_id,
            "generation": self.generation,
            "interruptId": self.interrupt_id,
            "code": self.code,
            "message": self.message,
        }
        if self.path is not None:
            wire["path"] = list(self.path)
        wire["source"] = self.source
        wire["retryable"] = self.retryable
        return wire


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchInterruptError:
    """An error about the batch: incomplete, failed validation, transport, protocol…"""

    scope: Literal["batch"] = field(default="batch", init=False)
    thread_id: str
    interrupted_run_id: str
    generation: int = 0
    interrupt_ids: tuple[str, ...]
    code: BatchInterruptErrorCode
    message: str
    source: ErrorSource = "client"
    retryable: bool = False

    def to_wire(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "threadId": self.thread_id,
            "interruptedRunId": self.interrupted_run_id,
            "generation": self.generation,
            "interruptIds": list(self.interrupt_ids),
            "code": self.code,
            "message": self.message,
            "source": self.source,
            "retryable": self.retryable,
        }


InterruptError: TypeAlias = ItemInterruptError | BatchInterruptError


class InterruptResumeValidationError(Exception):
    """A continuation's batch failed validation; nothing may run."""

    def __init__(self, errors: Sequence[InterruptError]) -> None:
        self.errors: tuple[InterruptError, ...] = tuple(errors)
        # One sentence each: a schema's own words ("-5 is less than the minimum of 0") end bare.
        super().__init__(
            " ".join(
                m if m.endswith((".", "?", "!")) else f"{m}."
                for m in (error.message for error in self.errors)
            )
        )

    @property
    def code(self) -> str:
        return self.errors[0].code


def interrupt_error_from_wire(raw: Mapping[str, object]) -> InterruptError | None:
    """Parse one wire error, or `None` if it is not a well-formed interrupt error."""
    scope = raw.get("scope")
    code = raw.get("code")
    message = raw.get("message")
    thread_id = raw.get("threadId")
    run_id = raw.get("interruptedRunId")
    generation = raw.get("generation")
    if not (
        isinstance(code, str)
        and isinstance(message, str)
        and isinstance(thread_id, str)
        and isinstance(run_id, str)
        and isinstance(generation, int)
        and not isinstance(generation, bool)
    ):
        return None
    retryable = raw.get("retryable") is True
    source = raw.get("source")
    if scope == "item":
        interrupt_id = raw.get("interruptId")
        path = raw.get("path")
        if not isinstance(interrupt_id, str) or code not in ITEM_ERROR_CODES:
            return None
        return ItemInterruptError(
            thread_id=thread_id,
            interrupted_run_id=run_id,
            generation=generation,
            interrupt_id=interrupt_id,
            code=code,  # type: ignore[arg-type]
            message=message,
            path=tuple(path) if isinstance(path, list) else None,
            source="server" if source == "server" else "client",
            retryable=retryable,
        )
    if scope == "batch":
        ids = raw.get("interruptIds")
        if not isinstance(ids, list) or code not in BATCH_ERROR_CODES:
            return None
        return BatchInterruptError(
            thread_id=thread_id,
            interrupted_run_id=run_id,
            generation=generation,
            interrupt_ids=tuple(str(item) for item in ids),
            code=code,  # type: ignore[arg-type]
            message=message,
            source=source if source in ("client", "server", "transport") else "client",
            retryable=retryable,
        )
    return None

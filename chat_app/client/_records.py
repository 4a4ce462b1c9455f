"""The interrupt manager's mutable record of each item, and how a record is published.

Owns `Record` (internal, mutable) and the pure helpers the manager uses to turn
records into public items, build resume entries and correlate server errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chat_app.interrupts import (
    BatchInterruptError,
    DecisionTarget,
    InterruptError,
    ItemInterruptError,
    canonicalize_interrupt_resolutions,
    generic_continuation_from_descriptor,
    raw_interrupt_binding,
    wrap_generic_continuation,
)

from ._classify import Hydration, RuntimeKind
from ._items import (
    GenericInterrupt,
    InterruptItem,
    ItemStatus,
    Submission,
    ToolApprovalInterrupt,
    UnboundInterrupt,
)
from ._tools import ClientInterruptDefinition, ClientTool


@dataclass(eq=False, kw_only=True)
class Record:
    """The manager's mutable record of one descriptor."""

    descriptor: dict[str, object]
    kind: RuntimeKind
    binding: dict[str, object] | None
    can_resolve: bool
    resumable: bool
    status: ItemStatus = "pending"
    error: ItemInterruptError | None = None
    resolution: dict[str, object] | None = None
    draft: dict[str, object] | None = None
    expiry_note: str | None = None
    tool: ClientTool | None = None
    definition: ClientInterruptDefinition | None = None
    payload: object = None

    @property
    def id(self) -> str:
        return str(self.descriptor.get("id"))


def public_item(item: Record, hydration: Hydration) -> InterruptItem:
    d = item.descriptor
    base = {
        "id": item.id,
        "reason": str(d.get("reason", "")),
        "message": d.get("message") if isinstance(d.get("message"), str) else None,
        "response_schema": _dict_or_none(d.get("responseSchema")),
        "expires_at": d.get("expiresAt") if isinstance(d.get("expiresAt"), str) else None,
        "metadata": _dict_or_none(d.get("metadata")),
        "thread_id": hydration.thread_id,
        "interrupted_run_id": hydration.interrupted_run_id,
        "generation": hydration.generation,
        "status": item.status,
        "errors": (item.error,) if item.error is not None else (),
        "can_resolve": item.can_resolve,
        "draft": item.draft,
        "resolution": item.resolution,
        "expiry_note": item.expiry_note,
    }
    if item.kind == "unbound" or item.binding is None:
        return UnboundInterrupt(**base)  # type: ignore[arg-type]
    if item.kind == "tool-approval":
        binding = item.binding
        tool = item.tool
        return ToolApprovalInterrupt(
            **base,  # type: ignore[arg-type]
            binding=binding,
            tool_name=str(binding.get("toolName")),
            tool_call_id=str(binding.get("toolCallId")),
            original_args=binding.get("originalArgs"),
            approve_schema=tool.branch_schema(True) if tool else None,
            reject_schema=tool.branch_schema(False) if tool else None,
            input_schema=tool.input_schema if tool else None,
        )
    binding = item.binding
    if binding.get("kind") != "generic":
        binding = {
            "v": binding.get("v", 1), "kind": "generic", "interruptId": item.id,
            "interruptedRunId": hydration.interrupted_run_id, "generation": hydration.generation,
            **({"responseSchemaHash": binding["responseSchemaHash"]}
               if isinstance(binding.get("responseSchemaHash"), str) else {}),
        }  # fmt: skip
    if item.definition is not None:
        return GenericInterrupt(
            **base,  # type: ignore[arg-type]
            binding=binding,
            definition_id=item.definition.id,
            key=str(binding.get("key", "")),
            payload=item.payload,
        )
    return GenericInterrupt(**base, binding=binding)  # type: ignore[arg-type]


def _dict_or_none(value: object) -> dict[str, object] | None:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else None


def binding_kind(descriptor: Mapping[str, object]) -> object:
    binding = raw_interrupt_binding(descriptor)
    return binding.get("kind") if binding is not None else None


def with_continuation(item: Record, entry: dict[str, object]) -> dict[str, object]:
    continuation = generic_continuation_from_descriptor(item.descriptor)
    if continuation is None:
        return entry
    return {**entry, "metadata": wrap_generic_continuation(continuation)}


def canonical_entry(entry: dict[str, object]) -> dict[str, object]:
    return dict(canonicalize_interrupt_resolutions([entry]).resolutions[0])


def client_tool_target(tool: ClientTool | None) -> DecisionTarget:
    """What a client tool's output is checked against (its output schema, when known)."""
    return DecisionTarget(
        kind="client-tool",
        response_schema=tool.output_schema if tool else None,
        tool_name=tool.name if tool else "",
    )


def decision_target(item: Record) -> DecisionTarget:
    """What an answer to `item` is checked against, as far as this client knows it."""
    tool = item.tool
    if item.kind == "tool-approval":
        return DecisionTarget(
            kind="approval",
            input_schema=tool.input_schema if tool else None,
            approve_schema=tool.branch_schema(True) if tool else None,
            reject_schema=tool.branch_schema(False) if tool else None,
        )
    if item.kind == "client-tool-execution":
        return client_tool_target(tool)
    schema: object = (
        item.definition.response_schema
        if item.definition is not None
        else item.descriptor.get("responseSchema")
    )
    return DecisionTarget(
        kind="generic", response_schema=schema if isinstance(schema, Mapping) else None
    )


def same_batch(error: InterruptError, submission: Submission) -> bool:
    """The error names the submission's paused run (thread, run id and generation)."""
    return (
        error.thread_id == submission.thread_id
        and error.interrupted_run_id == submission.interrupted_run_id
        and error.generation == submission.generation
    )


def error_matches(error: InterruptError, submission: Submission) -> bool:
    if not same_batch(error, submission):
        return False
    ids = submission.interrupt_ids
    if isinstance(error, ItemInterruptError):
        return error.interrupt_id in ids
    return sorted(error.interrupt_ids) == sorted(ids)


def same_correlation(left: BatchInterruptError, right: BatchInterruptError) -> bool:
    return (
        left.thread_id == right.thread_id
        and left.interrupted_run_id == right.interrupted_run_id
        and left.generation == right.generation
        and sorted(left.interrupt_ids) == sorted(right.interrupt_ids)
    )

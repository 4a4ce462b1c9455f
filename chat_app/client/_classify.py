"""Classifying one interrupt descriptor when a batch arrives (first match wins).

Owns `classify` (`docs/protocol.md` §4.2). Decides the kind (`tool-approval`,
`client-tool-execution`, typed or raw `generic`, `unbound`), whether the item can be answered
and resumed, and hydrate-time errors. Tool approvals are trusted only when the binding's
schema hashes equal the hashes of the client's own registered tool; typed generics only when
the definition's do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from chat_app.interrupts import (
    INTERRUPT_BINDING_VERSION,
    INTERRUPT_PAYLOAD_METADATA_KEY,
    ClientToolExecutionBinding,
    GenericBinding,
    InterruptBinding,
    ToolApprovalBinding,
    canonical_interrupt_json,
    digest_interrupt_json,
    raw_interrupt_binding,
    read_interrupt_binding,
)

from ._tools import ClientInterruptDefinition, ClientTool

__all__ = [
    "Classified",
    "Hydration",
    "RuntimeKind",
    "classify",
    "first_party_index_counts",
    "legacy_kind",
]

RuntimeKind: TypeAlias = Literal["generic", "tool-approval", "client-tool-execution", "unbound"]
_FIRST_PARTY_KEYS = ("definitionId", "key", "batchIndex", "payloadSchemaHash")


@dataclass(frozen=True, kw_only=True, slots=True)
class Hydration:
    """The batch being classified: which run paused, and its descriptors."""

    thread_id: str
    interrupted_run_id: str
    generation: int
    descriptors: tuple[dict[str, object], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Classified:
    kind: RuntimeKind
    can_resolve: bool
    #: The item takes part in this client's resume batch.
    resumable: bool
    #: The binding in wire form (`None` only for unbound items).
    binding: dict[str, object] | None
    #: A hydrate-time problem (`stale`), with the item in status `error`.
    error: str | None = None
    tool: ClientTool | None = None
    definition: ClientInterruptDefinition | None = None
    payload: object = None


def response_schema_hash(descriptor: Mapping[str, object]) -> str | None:
    """`H(d)`: the digest of the descriptor's `responseSchema`, `None` without one."""
    if "responseSchema" not in descriptor:
        return None
    try:
        return digest_interrupt_json(canonical_interrupt_json(descriptor["responseSchema"]))
    except TypeError:
        return None


def first_party_index_counts(descriptors: tuple[dict[str, object], ...]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for descriptor in descriptors:
        binding = read_interrupt_binding(descriptor)
        if isinstance(binding, GenericBinding) and binding.first_party:
            assert binding.batch_index is not None
            counts[binding.batch_index] = counts.get(binding.batch_index, 0) + 1
    return counts


def classify(
    descriptor: dict[str, object],
    hydration: Hydration,
    tools: Mapping[str, ClientTool],
    definitions: Mapping[str, ClientInterruptDefinition],
    index_counts: Mapping[int, int],
) -> Classified:
    candidate = read_interrupt_binding(descriptor)
    legacy = candidate is None and legacy_kind(descriptor) is not None
    if candidate is None and not legacy:
        if _has_reserved_marker(descriptor):
            return _stale(
                descriptor, hydration, None, "The interrupt binding is invalid or incomplete."
            )
        return Classified(kind="unbound", can_resolve=False, resumable=False, binding=None)

    digest = response_schema_hash(descriptor)
    same_run = candidate is not None and (
        candidate.interrupt_id == descriptor.get("id")
        and candidate.interrupted_run_id == hydration.interrupted_run_id
        and candidate.generation == hydration.generation
    )
    #: The binding's response schema hash equals the descriptor's (or it carries none).
    schema_matches = candidate is not None and (
        digest is None or candidate.response_schema_hash == digest
    )
    structurally = same_run and schema_matches
    correlated = same_run and candidate is not None and digest == candidate.response_schema_hash

    if candidate is not None and _has_first_party_marker(descriptor):
        if not (structurally and isinstance(candidate, GenericBinding) and candidate.first_party):
            return _stale(
                descriptor, hydration, candidate,
                "The interrupt binding does not match this interrupted run.",
            )  # fmt: skip

    if structurally and isinstance(candidate, ToolApprovalBinding):
        tool = tools.get(candidate.tool_name)
        if (
            tool is not None
            and tool.needs_approval
            and descriptor.get("toolCallId") == candidate.tool_call_id
            and tool.input_schema_hash == candidate.input_schema_hash
            and tool.approval.approval_schema_hash == candidate.approval_schema_hash
            and tool.approval.response_schema_hash == candidate.response_schema_hash
        ):
            return Classified(
                kind="tool-approval", can_resolve=True, resumable=True,
                binding=candidate.to_wire(), tool=tool,
            )  # fmt: skip

    if structurally and isinstance(candidate, ClientToolExecutionBinding):
        tool = tools.get(candidate.tool_name)
        if (
            tool is not None
            and descriptor.get("toolCallId") == candidate.tool_call_id
            and tool.output_schema_hash == candidate.output_schema_hash
        ):
            return Classified(
                kind="client-tool-execution", can_resolve=True, resumable=True,
                binding=candidate.to_wire(), tool=tool,
            )  # fmt: skip

    if isinstance(candidate, GenericBinding) and candidate.first_party and candidate.key:
        assert candidate.batch_index is not None and candidate.definition_id is not None
        if index_counts.get(candidate.batch_index) != 1:
            return Classified(
                kind="generic", can_resolve=False, resumable=False,
                binding=candidate.to_wire(),
                error="Generic interrupt batch contains a duplicate batchIndex.",
            )  # fmt: skip
        definition = definitions.get(candidate.definition_id)
        if (
            correlated
            and definition is not None
            and definition.response_schema_hash == candidate.response_schema_hash
            and definition.payload_schema_hash == candidate.payload_schema_hash
        ):
            metadata = descriptor.get("metadata")
            payload = (
                metadata.get(INTERRUPT_PAYLOAD_METADATA_KEY)
                if isinstance(metadata, Mapping)
                else None
            )
            return Classified(
                kind="generic", can_resolve=True, resumable=True,
                binding=candidate.to_wire(), definition=definition, payload=payload,
            )  # fmt: skip

    resumable = legacy or (
        same_run and (schema_matches or not isinstance(candidate, GenericBinding))
    )
    return Classified(
        kind="generic",
        can_resolve=resumable,
        resumable=resumable,
        binding=synthesized_binding(descriptor, hydration, candidate),
    )


def synthesized_binding(
    descriptor: Mapping[str, object],
    hydration: Hydration,
    candidate: InterruptBinding | None,
) -> dict[str, object]:
    """The generic binding the client stands behind for an untyped item."""
    digest = response_schema_hash(descriptor)
    if digest is None and candidate is not None:
        digest = candidate.response_schema_hash
    binding: dict[str, object] = {
        "v": INTERRUPT_BINDING_VERSION,
        "kind": "generic",
        "interruptId": descriptor.get("id"),
        "interruptedRunId": hydration.interrupted_run_id,
        "generation": hydration.generation,
    }
    if digest is not None:
        binding["responseSchemaHash"] = digest
    if isinstance(descriptor.get("expiresAt"), str):
        binding["expiresAt"] = descriptor["expiresAt"]
    return binding


def _stale(
    descriptor: dict[str, object],
    hydration: Hydration,
    candidate: InterruptBinding | None,
    message: str,
) -> Classified:
    return Classified(
        kind="generic",
        can_resolve=False,
        resumable=False,
        binding=synthesized_binding(descriptor, hydration, candidate),
        error=message,
    )


def _has_reserved_marker(descriptor: Mapping[str, object]) -> bool:
    raw = raw_interrupt_binding(descriptor)
    if raw is None:
        return False
    version = raw.get("v", INTERRUPT_BINDING_VERSION)
    if isinstance(version, bool) or version != INTERRUPT_BINDING_VERSION:
        return False
    return raw.get("kind") in ("generic", "tool-approval", "client-tool-execution") or any(
        key in raw for key in _FIRST_PARTY_KEYS
    )


def _has_first_party_marker(descriptor: Mapping[str, object]) -> bool:
    raw = raw_interrupt_binding(descriptor)
    return (
        raw is not None
        and raw.get("kind") == "generic"
        and any(key in raw for key in _FIRST_PARTY_KEYS)
    )


def legacy_kind(descriptor: Mapping[str, object]) -> str | None:
    """`approval` / `client_tool` for descriptors with TanStack's legacy metadata marker."""
    metadata = descriptor.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    kind = metadata.get("kind")
    if kind in ("approval", "client_tool") and isinstance(metadata.get("toolName"), str):
        return str(kind) if "input" in metadata else None
    return None

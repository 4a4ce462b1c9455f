"""Interrupt bindings: the metadata that makes an interrupt resumable (`docs/protocol.md` §2).

Owns the three binding kinds, `read_interrupt_binding`, `read_unopened_interrupt_binding`,
`with_interrupt_binding` and `without_interrupt_binding`. A binding that does not parse means
"not ours": readers return `None`, they never raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

from ._constants import INTERRUPT_BINDING_METADATA_KEY, INTERRUPT_BINDING_VERSION
from ._dates import parse_js_date
from ._json import is_number, is_record, non_negative_integer, string_field


class _Absent:
    """`originalArgs` missing from a binding (distinct from JSON null)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


@dataclass(frozen=True, kw_only=True, slots=True)
class _Correlation:
    interrupt_id: str
    expires_at: str | None = None
    #: The run that paused; `None` while the binding is unopened (inside the run).
    interrupted_run_id: str | None = None
    generation: int | None = None

    @property
    def opened(self) -> bool:
        return self.interrupted_run_id is not None and self.generation is not None

    def _tail(self, wire: dict[str, object]) -> dict[str, object]:
        if self.opened:
            wire["interruptedRunId"] = self.interrupted_run_id
            wire["generation"] = self.generation
        return wire


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolApprovalBinding(_Correlation):
    """Binds an `approval_<toolCallId>` interrupt to the tool call and schemas it approves."""

    kind: Literal["tool-approval"] = field(default="tool-approval", init=False)
    tool_name: str
    tool_call_id: str
    original_args: object = ABSENT
    input_schema_hash: str
    approval_schema_hash: str
    response_schema_hash: str

    def to_wire(self) -> dict[str, object]:
        wire: dict[str, object] = {
            "v": INTERRUPT_BINDING_VERSION,
            "kind": self.kind,
            "interruptId": self.interrupt_id,
            "toolName": self.tool_name,
            "toolCallId": self.tool_call_id,
        }
        if self.original_args is not ABSENT:
            wire["originalArgs"] = self.original_args
        wire["inputSchemaHash"] = self.input_schema_hash
        wire["approvalSchemaHash"] = self.approval_schema_hash
        wire["responseSchemaHash"] = self.response_schema_hash
        if self.expires_at:
            wire["expiresAt"] = self.expires_at
        return self._tail(wire)


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientToolExecutionBinding(_Correlation):
    """Binds a `client_tool_<toolCallId>` interrupt to the client tool and its output schema."""

    kind: Literal["client-tool-execution"] = field(default="client-tool-execution", init=False)
    tool_name: str
    tool_call_id: str
    output_schema_hash: str
    response_schema_hash: str

    def to_wire(self) -> dict[str, object]:
        wire: dict[str, object] = {
            "v": INTERRUPT_BINDING_VERSION,
            "kind": self.kind,
            "interruptId": self.interrupt_id,
            "toolName": self.tool_name,
            "toolCallId": self.tool_call_id,
            "outputSchemaHash": self.output_schema_hash,
            "responseSchemaHash": self.response_schema_hash,
        }
        if self.expires_at:
            wire["expiresAt"] = self.expires_at
        return self._tail(wire)


@dataclass(frozen=True, kw_only=True, slots=True)
class GenericBinding(_Correlation):
    """Binds a generic interrupt; first-party ones also carry definition id, key, batch index."""

    kind: Literal["generic"] = field(default="generic", init=False)
    response_schema_hash: str | None = None
    definition_id: str | None = None
    key: str | None = None
    batch_index: int | None = None
    payload_schema_hash: str | None = None

    @property
    def first_party(self) -> bool:
        return (
            self.definition_id is not None and self.key is not None and self.batch_index is not None
        )

    def to_wire(self) -> dict[str, object]:
        wire: dict[str, object] = {
            "v": INTERRUPT_BINDING_VERSION,
            "kind": self.kind,
            "interruptId": self.interrupt_id,
        }
        if self.response_schema_hash:
            wire["responseSchemaHash"] = self.response_schema_hash
        if self.expires_at:
            wire["expiresAt"] = self.expires_at
        if self.definition_id:
            wire["definitionId"] = self.definition_id
        if self.key:
            wire["key"] = self.key
        if self.batch_index is not None:
            wire["batchIndex"] = self.batch_index
        if self.payload_schema_hash:
            wire["payloadSchemaHash"] = self.payload_schema_hash
        return self._tail(wire)


InterruptBinding: TypeAlias = ToolApprovalBinding | ClientToolExecutionBinding | GenericBinding


def raw_interrupt_binding(descriptor: Mapping[str, object]) -> Mapping[str, object] | None:
    """The descriptor's `metadata["tanstack:interruptBinding"]` object as sent, unchecked."""
    metadata = descriptor.get("metadata")
    if not is_record(metadata):
        return None
    raw = metadata.get(INTERRUPT_BINDING_METADATA_KEY)
    return raw if is_record(raw) else None


def read_unopened_interrupt_binding(descriptor: Mapping[str, object]) -> InterruptBinding | None:
    """Read a binding that may lack `interruptedRunId`/`generation` (`docs/protocol.md` §2.6)."""
    raw = raw_interrupt_binding(descriptor)
    if raw is None:
        return None
    interrupt_id = string_field(raw, "interruptId")
    if not interrupt_id or interrupt_id != descriptor.get("id"):
        return None
    if "v" in raw and not (is_number(raw["v"]) and raw["v"] == INTERRUPT_BINDING_VERSION):
        return None
    response_schema_hash = string_field(raw, "responseSchemaHash")
    expires_at = string_field(raw, "expiresAt")
    if response_schema_hash == "":
        return None
    if expires_at is not None and parse_js_date(expires_at) is None:
        return None
    kind = raw.get("kind")
    if kind == "generic":
        return _read_generic(raw, interrupt_id, response_schema_hash, expires_at)
    tool_name = string_field(raw, "toolName")
    tool_call_id = string_field(raw, "toolCallId")
    if not response_schema_hash or not tool_name or not tool_call_id:
        return None
    if kind == "client-tool-execution":
        output_schema_hash = string_field(raw, "outputSchemaHash")
        if not output_schema_hash:
            return None
        return ClientToolExecutionBinding(
            interrupt_id=interrupt_id,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            output_schema_hash=output_schema_hash,
            response_schema_hash=response_schema_hash,
            expires_at=expires_at or None,
        )
    if kind == "tool-approval":
        input_schema_hash = string_field(raw, "inputSchemaHash")
        approval_schema_hash = string_field(raw, "approvalSchemaHash")
        if not input_schema_hash or not approval_schema_hash:
            return None
        return ToolApprovalBinding(
            interrupt_id=interrupt_id,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            original_args=raw["originalArgs"] if "originalArgs" in raw else ABSENT,
            input_schema_hash=input_schema_hash,
            approval_schema_hash=approval_schema_hash,
            response_schema_hash=response_schema_hash,
            expires_at=expires_at or None,
        )
    return None


def _read_generic(
    raw: Mapping[str, object],
    interrupt_id: str,
    response_schema_hash: str | None,
    expires_at: str | None,
) -> GenericBinding | None:
    definition_id = string_field(raw, "definitionId")
    key = string_field(raw, "key")
    batch_index_raw = raw.get("batchIndex")
    payload_schema_hash = string_field(raw, "payloadSchemaHash")
    first_party = (
        definition_id is not None
        or key is not None
        or "batchIndex" in raw
        or payload_schema_hash is not None
    )
    batch_index = non_negative_integer(batch_index_raw)
    if first_party and (not definition_id or not key or batch_index is None):
        return None
    return GenericBinding(
        interrupt_id=interrupt_id,
        response_schema_hash=response_schema_hash or None,
        expires_at=expires_at or None,
        definition_id=definition_id or None,
        key=key or None,
        batch_index=batch_index,
        payload_schema_hash=payload_schema_hash or None,
    )


def read_interrupt_binding(descriptor: Mapping[str, object]) -> InterruptBinding | None:
    """Read the complete binding (with `interruptedRunId` and `generation`), or `None`."""
    unopened = read_unopened_interrupt_binding(descriptor)
    if unopened is None:
        return None
    raw = raw_interrupt_binding(descriptor)
    assert raw is not None  # read_unopened_interrupt_binding found it
    interrupted_run_id = string_field(raw, "interruptedRunId")
    generation = non_negative_integer(raw.get("generation"))
    if not interrupted_run_id or generation is None:
        return None
    return replace(unopened, interrupted_run_id=interrupted_run_id, generation=generation)


def with_interrupt_binding(
    descriptor: Mapping[str, object], binding: InterruptBinding | Mapping[str, object]
) -> dict[str, object]:
    """Return a copy of `descriptor` carrying `binding` (never mutates the input)."""
    wire = dict(binding.to_wire() if not isinstance(binding, Mapping) else binding)
    wire["v"] = INTERRUPT_BINDING_VERSION
    # `interruptId: descriptor.id`: a missing id is `undefined`, which JSON leaves out.
    if "id" in descriptor:
        wire["interruptId"] = descriptor["id"]
    else:
        wire.pop("interruptId", None)
    new_metadata = _spread(descriptor.get("metadata"))
    new_metadata[INTERRUPT_BINDING_METADATA_KEY] = wire
    result = dict(descriptor)
    result["metadata"] = new_metadata
    return result


def _spread(value: object) -> dict[str, object]:
    """`{...value}` in JavaScript: objects copy, strings and arrays spread by index."""
    if is_record(value):
        return dict(value)
    if isinstance(value, (str, list)):
        return {str(index): item for index, item in enumerate(value)}
    return {}


def without_interrupt_binding(descriptor: Mapping[str, object]) -> dict[str, object]:
    """Return a copy of `descriptor` without its binding."""
    result = dict(descriptor)
    metadata = descriptor.get("metadata")
    if is_record(metadata) and INTERRUPT_BINDING_METADATA_KEY in metadata:
        result["metadata"] = {
            key: value for key, value in metadata.items() if key != INTERRUPT_BINDING_METADATA_KEY
        }
    return result

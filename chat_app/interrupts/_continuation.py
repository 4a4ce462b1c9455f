"""Generic interrupt continuation metadata (`docs/protocol.md` §3.3).

Owns `GenericInterruptContinuation` and the functions that build it from a descriptor, wrap
it into resume metadata, and read it back. The client attaches it to every resume item of a
first-party generic interrupt, which lets a stateless server rebuild the pending request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ._bindings import ABSENT, GenericBinding, read_unopened_interrupt_binding
from ._constants import (
    INTERRUPT_CONTINUATION_METADATA_KEY,
    INTERRUPT_CONTINUATION_VERSION,
    INTERRUPT_PAYLOAD_METADATA_KEY,
)
from ._json import is_number, is_record, non_negative_integer, string_field


@dataclass(frozen=True, kw_only=True, slots=True)
class GenericInterruptContinuation:
    """What a first-party generic interrupt's resume item carries back to the server."""

    definition_id: str
    key: str
    batch_index: int
    #: Copied from the descriptor as they are (`ABSENT` when the descriptor has none); a
    #: reader only accepts strings, which is how a malformed descriptor is caught.
    reason: object
    message: object
    expires_at: object = ABSENT
    response_schema_hash: str | None = None
    payload_schema_hash: str | None = None
    #: The display payload, or `ABSENT` when the interrupt had none.
    payload: object = ABSENT

    def to_wire(self) -> dict[str, object]:
        wire: dict[str, object] = {
            "v": INTERRUPT_CONTINUATION_VERSION,
            "definitionId": self.definition_id,
            "key": self.key,
            "batchIndex": self.batch_index,
        }
        if self.reason is not ABSENT:
            wire["reason"] = self.reason
        wire["message"] = self.message
        if self.expires_at is not ABSENT:
            wire["expiresAt"] = self.expires_at
        if self.response_schema_hash is not None:
            wire["responseSchemaHash"] = self.response_schema_hash
        if self.payload_schema_hash is not None:
            wire["payloadSchemaHash"] = self.payload_schema_hash
        if self.payload is not ABSENT:
            wire["payload"] = self.payload
        return wire


@dataclass(frozen=True, kw_only=True, slots=True)
class ContinuationRead:
    """Result of `read_generic_continuation`: `absent`, `invalid` (with a message) or `ok`."""

    status: Literal["absent", "invalid", "ok"]
    message: str | None = None
    continuation: GenericInterruptContinuation | None = None


_ABSENT_READ = ContinuationRead(status="absent")


def generic_continuation_from_descriptor(
    descriptor: Mapping[str, object],
) -> GenericInterruptContinuation | None:
    """Build the continuation for a first-party generic descriptor, else `None`."""
    binding = read_unopened_interrupt_binding(descriptor)
    if not isinstance(binding, GenericBinding) or not binding.first_party:
        return None
    assert binding.definition_id and binding.key and binding.batch_index is not None
    metadata = descriptor.get("metadata")
    payload = (
        metadata[INTERRUPT_PAYLOAD_METADATA_KEY]
        if is_record(metadata) and INTERRUPT_PAYLOAD_METADATA_KEY in metadata
        else ABSENT
    )
    message = descriptor.get("message")
    return GenericInterruptContinuation(
        definition_id=binding.definition_id,
        key=binding.key,
        batch_index=binding.batch_index,
        reason=descriptor.get("reason", ABSENT),
        message="" if message is None else message,  # `message ?? ""`
        expires_at=descriptor.get("expiresAt", ABSENT),
        response_schema_hash=binding.response_schema_hash,
        payload_schema_hash=binding.payload_schema_hash,
        payload=payload,
    )


def wrap_generic_continuation(continuation: GenericInterruptContinuation) -> dict[str, object]:
    """Resume-item metadata carrying `continuation`."""
    return {INTERRUPT_CONTINUATION_METADATA_KEY: continuation.to_wire()}


def read_generic_continuation(metadata: object = ABSENT) -> ContinuationRead:
    """Read a resume item's continuation metadata as `readGenericInterruptContinuation` does.

    `metadata` is the resume item's `metadata` value, or `ABSENT` when the key is missing.
    """
    if metadata is ABSENT:
        return _ABSENT_READ
    if not is_record(metadata):
        return _invalid("Generic interrupt resume metadata must be an object.")
    if INTERRUPT_CONTINUATION_METADATA_KEY not in metadata:
        return _ABSENT_READ
    raw = metadata[INTERRUPT_CONTINUATION_METADATA_KEY]
    if not is_record(raw):
        return _invalid("Generic interrupt continuation is invalid.")
    fields = {name: raw.get(name) for name in ("definitionId", "key", "reason", "message")}
    batch_index = non_negative_integer(raw.get("batchIndex"))
    optional = {
        name: raw[name]
        for name in ("responseSchemaHash", "expiresAt", "payloadSchemaHash")
        if name in raw
    }
    if (
        not (is_number(raw.get("v")) and raw.get("v") == INTERRUPT_CONTINUATION_VERSION)
        or not all(isinstance(value, str) for value in fields.values())
        or batch_index is None
        or not all(isinstance(value, str) for value in optional.values())
    ):
        return _invalid("Generic interrupt continuation contains invalid fields.")
    return ContinuationRead(
        status="ok",
        continuation=GenericInterruptContinuation(
            definition_id=str(fields["definitionId"]),
            key=str(fields["key"]),
            batch_index=batch_index,
            reason=str(fields["reason"]),
            message=str(fields["message"]),
            expires_at=optional.get("expiresAt", ABSENT),
            response_schema_hash=string_field(optional, "responseSchemaHash"),
            payload_schema_hash=string_field(optional, "payloadSchemaHash"),
            payload=raw["payload"] if "payload" in raw else ABSENT,
        ),
    )


def _invalid(message: str) -> ContinuationRead:
    return ContinuationRead(status="invalid", message=message)

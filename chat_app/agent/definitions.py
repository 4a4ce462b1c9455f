"""Generic interrupt definitions and the requests middleware makes with them.

Owns `define_interrupt`, `InterruptDefinition`, `InterruptRequest` and `GenericResolution`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from chat_app.interrupts import (
    ABSENT,
    JSONSchema,
    definition_schema_identity,
    parse_js_date,
)

from ._schema import SchemaLike, to_json_schema


@dataclass(frozen=True, kw_only=True)
class InterruptDefinition:
    """A kind of question the agent can ask a person. Create with `define_interrupt`."""

    id: str
    response_schema: JSONSchema | None = None
    payload_schema: JSONSchema | None = None
    wire_response_schema: JSONSchema | None = field(init=False)
    response_schema_hash: str | None = field(init=False)
    wire_payload_schema: JSONSchema | None = field(init=False)
    payload_schema_hash: str | None = field(init=False)

    def __post_init__(self) -> None:
        wire, digest = definition_schema_identity(self.response_schema)
        object.__setattr__(self, "wire_response_schema", wire)
        object.__setattr__(self, "response_schema_hash", digest)
        wire, digest = definition_schema_identity(self.payload_schema)
        object.__setattr__(self, "wire_payload_schema", wire)
        object.__setattr__(self, "payload_schema_hash", digest)

    def request(
        self,
        *,
        key: str,
        reason: str,
        message: str,
        payload: object = ABSENT,
        expires_at: datetime | str | None = None,
    ) -> InterruptRequest:
        """Ask: `key` identifies this question within the run (e.g. the order id)."""
        if not key or not reason or not message:
            raise ValueError("Interrupt key, reason and message must be non-empty.")
        if payload is not ABSENT and self.payload_schema is None:
            raise ValueError(f"Interrupt {self.id} has no payload schema; it takes no payload.")
        if isinstance(expires_at, datetime):
            expires_at = _iso(expires_at)
        if expires_at is not None and parse_js_date(expires_at) is None:
            raise ValueError("Interrupt expiresAt must be a valid date string.")
        return InterruptRequest(
            definition=self, key=key, reason=reason, message=message,
            payload=payload, expires_at=expires_at,
        )  # fmt: skip


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def define_interrupt(
    id: str, *, response: SchemaLike | None = None, payload: SchemaLike | None = None
) -> InterruptDefinition:
    """Define a generic interrupt: its id, the answer's schema, an optional display payload."""
    return InterruptDefinition(
        id=id, response_schema=to_json_schema(response), payload_schema=to_json_schema(payload)
    )


@dataclass(frozen=True, kw_only=True)
class InterruptRequest:
    """One question, as middleware returns it from a boundary hook."""

    definition: InterruptDefinition
    key: str
    reason: str
    message: str
    payload: object = ABSENT
    expires_at: str | None = None


@dataclass(frozen=True, kw_only=True)
class GenericResolution:
    """A person's answer to a generic interrupt, as the resolution hook sees it: `resolved`
    (with `response`), `cancelled`, or `expired` (nobody answered before its expiry, and
    the request was closed by the cancellation that ends it)."""

    request: InterruptRequest
    status: Literal["resolved", "cancelled", "expired"]
    response: Any = None


class Resolutions:
    """The generic answers of one continuation, ordered by batch index."""

    def __init__(self, items: list[GenericResolution]) -> None:
        self._items = items

    def all(self, *definitions: InterruptDefinition) -> list[GenericResolution]:
        if not definitions:
            return list(self._items)
        ids = {definition.id for definition in definitions}
        return [item for item in self._items if item.request.definition.id in ids]

    def for_(self, definition: InterruptDefinition) -> GenericResolution | None:
        found = self.all(definition)
        return found[0] if found else None

    def __bool__(self) -> bool:
        return bool(self._items)

    def by_key(self) -> Mapping[str, GenericResolution]:
        return {item.request.key: item for item in self._items}

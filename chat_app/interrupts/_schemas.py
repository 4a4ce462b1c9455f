"""Schema identities: how tool and approval schemas are hashed and put on the wire.

Owns `hash_schema_input`, `definition_schema_identity`, `normalize_approval_schema` and
`client_tool_response_schema` (`docs/protocol.md` §2.5 and §5).
Schemas here are raw JSON Schema dicts: converting pydantic models happens in the agent layer,
once, so that the hash is computed over exactly the JSON that goes on the wire.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ._canonical import canonical_interrupt_json, digest_interrupt_json

JSONSchema = dict[str, object]

_JSON_SCHEMA_KEYWORDS = frozenset(
    {
        "$schema", "$id", "$ref", "$defs", "type", "properties", "required",
        "additionalProperties", "items", "oneOf", "anyOf", "allOf", "enum", "const",
        "format", "minimum", "maximum", "minLength", "maxLength", "pattern",
    }
)  # fmt: skip

UNSUPPORTED_SCHEMA = "Expected a supported SchemaInput."
BAD_APPROVAL_SCHEMA = (
    "approvalSchema must be a SchemaInput or a nonempty map containing approve or reject."
)


def is_raw_json_schema(value: object) -> bool:
    """TanStack's test: a plain object with at least one JSON Schema keyword."""
    return isinstance(value, Mapping) and any(key in _JSON_SCHEMA_KEYWORDS for key in value)


def hash_schema_input(schema: Mapping[str, object] | None) -> str:
    """`hashSchemaInput`: `None` hashes the literal text `undefined`."""
    if schema is None:
        return digest_interrupt_json("undefined")
    if not is_raw_json_schema(schema):
        raise TypeError(UNSUPPORTED_SCHEMA)
    return digest_interrupt_json(canonical_interrupt_json(schema))


def definition_schema_identity(
    schema: Mapping[str, object] | None,
) -> tuple[JSONSchema | None, str | None]:
    """A generic interrupt definition's schema as it goes on the wire, and its hash.

    TanStack exports draft-07 without `$schema` and puts the canonical (key-sorted) form on
    the wire; `hashInterruptDefinitionSchema` is the digest of that text.
    """
    if schema is None:
        return None, None
    text = canonical_interrupt_json({k: v for k, v in schema.items() if k != "$schema"})
    wire: JSONSchema = json.loads(text)
    return wire, digest_interrupt_json(text)


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalSchema:
    """A tool's approval schema, normalized: per-branch schemas and the wire envelope."""

    approve: JSONSchema | None
    reject: JSONSchema | None
    response_schema: JSONSchema
    response_schema_hash: str
    approval_schema_hash: str

    def branch(self, approved: bool) -> JSONSchema | None:
        return self.approve if approved else self.reject


def normalize_approval_schema(
    approval_schema: Mapping[str, object] | None,
    input_schema: Mapping[str, object] | None = None,
) -> ApprovalSchema:
    """`normalizeApprovalSchema`: one schema for both decisions, or an approve/reject map."""
    if input_schema is not None and not is_raw_json_schema(input_schema):
        raise TypeError(UNSUPPORTED_SCHEMA)
    approve: JSONSchema | None = None
    reject: JSONSchema | None = None
    if approval_schema is not None:
        if is_raw_json_schema(approval_schema):
            approve = reject = dict(approval_schema)
        elif _is_branch_map(approval_schema):
            approve = _optional_schema(approval_schema.get("approve"))
            reject = _optional_schema(approval_schema.get("reject"))
        else:
            raise TypeError(BAD_APPROVAL_SCHEMA)
    response_schema: JSONSchema = {
        "oneOf": [
            _decision_envelope(True, approve, input_schema),
            _decision_envelope(False, reject, None),
        ]
    }
    return ApprovalSchema(
        approve=approve,
        reject=reject,
        response_schema=response_schema,
        response_schema_hash=digest_interrupt_json(canonical_interrupt_json(response_schema)),
        approval_schema_hash=digest_interrupt_json(
            canonical_interrupt_json({"approve": approve, "reject": reject})
        ),
    )


def client_tool_response_schema(output_schema: Mapping[str, object] | None) -> JSONSchema:
    """The `responseSchema` of a client-tool interrupt: the output schema without `$schema`."""
    if output_schema is None:
        return {}
    return {key: value for key, value in output_schema.items() if key != "$schema"}


def _is_branch_map(value: Mapping[str, object]) -> bool:
    return (
        len(value) > 0
        and all(key in ("approve", "reject") for key in value)
        and all(is_raw_json_schema(item) for item in value.values())
    )


def _optional_schema(value: object) -> JSONSchema | None:
    return dict(value) if isinstance(value, Mapping) else None


def _decision_envelope(
    approved: bool, payload: JSONSchema | None, input_schema: Mapping[str, object] | None
) -> JSONSchema:
    properties: dict[str, object] = {"approved": {"const": approved}}
    required = ["approved"]
    if approved and input_schema is not None:
        properties["editedArgs"] = dict(input_schema)
    if payload is not None:
        properties["payload"] = payload
        required.append("payload")
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }

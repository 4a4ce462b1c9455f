"""Turning what a developer passes as a schema into the raw JSON Schema we hash and send."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from pydantic import BaseModel

from chat_app.interrupts import JSONSchema

SchemaLike: TypeAlias = "Mapping[str, Any] | type[BaseModel]"


def to_json_schema(schema: SchemaLike | None) -> JSONSchema | None:
    """A raw JSON Schema dict, converted once from a pydantic model when given one."""
    if schema is None:
        return None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, Mapping):
        return dict(schema)
    raise TypeError(f"Expected a JSON Schema dict or a pydantic model, got {schema!r}.")


def to_approval_schema(
    schema: SchemaLike | Mapping[str, SchemaLike] | None,
) -> JSONSchema | None:
    """One schema for both decisions, or a map with `approve` and/or `reject` schemas."""
    if schema is None:
        return None
    if isinstance(schema, Mapping) and schema and set(schema) <= {"approve", "reject"}:
        return {branch: to_json_schema(value) for branch, value in schema.items()}
    return to_json_schema(schema)

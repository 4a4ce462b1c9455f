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
        return _inlined(schema.model_json_schema())
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


def _inlined(schema: JSONSchema) -> JSONSchema:
    """Pydantic's schema with each `{"$ref": "#/$defs/…"}` replaced by what it names, and no
    `$defs`: an enum or a nested model is then a field the page's forms build (they read no
    references). A model that contains itself keeps its references."""
    definitions = schema.get("$defs")
    if not isinstance(definitions, dict):
        return schema

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in definitions:
                raise _Recursive
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            return resolve({**definitions[name], **siblings}, (*seen, name))
        return {key: resolve(value, seen) for key, value in node.items() if key != "$defs"}

    try:
        inlined: JSONSchema = resolve(schema, ())
    except _Recursive:
        return schema
    return inlined


class _Recursive(Exception):
    """A reference that cannot be replaced: to itself, or to nothing."""

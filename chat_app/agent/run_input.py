"""Reading a request into a `RunAgentInput` whose messages are built only when read.

Owns `read_run_input`. The messages are validated against `ag_ui`'s own schema, turned into
plain dicts: pydantic's core schema for `list[Message]` with every model made a typed dict
(same fields, aliases, types and configuration, so it takes and refuses what the models take
and refuse). That is half the cost of building the models (measured at 10,000 messages), and
`History` builds one only when something reads it. Anything it refuses is validated again the
ordinary way, so an error reads exactly as pydantic words it for `RunAgentInput`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ag_ui.core import Message, RunAgentInput
from pydantic import ConfigDict, SkipValidation, TypeAdapter, ValidationError, field_serializer
from pydantic_core import CoreSchema, SchemaValidator

from .messages import History


class LazyRunAgentInput(RunAgentInput):
    """A `RunAgentInput` whose `messages` is a `History` (validated; built when read)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: SkipValidation[History]  # type: ignore[assignment]

    @field_serializer("messages")
    def _dump_messages(self, messages: History) -> list[Message]:
        return list(messages)


def read_run_input(data: Mapping[str, Any]) -> RunAgentInput:
    """`RunAgentInput.model_validate(data)`, with the messages left plain until read.

    Raises the `ValidationError` that `RunAgentInput.model_validate` raises for `data`.
    """
    raw = data.get("messages")
    if _PLAIN_MESSAGES is not None and isinstance(raw, list):
        try:
            fields = _PLAIN_MESSAGES.validate_python(raw)
            return LazyRunAgentInput.model_validate(
                {**data, "messages": History.validated(raw, fields)}
            )
        except ValidationError:
            pass  # validated again below, for pydantic's own words about it
    return RunAgentInput.model_validate(data)


class _Unsupported(Exception):
    """A schema construct the typed-dict copy does not handle."""


# Every node type pydantic generates for the `ag_ui` messages today, with the keys that hold
# its child schemas. A newer `ag_ui` that adds another (a model validator, say) turns the plain
# path off rather than risk taking what the models refuse; the tests fail on it, so it is seen.
_CHILDREN: dict[str, tuple[str, ...]] = {
    "any": (), "str": (), "int": (), "float": (), "bool": (), "none": (), "literal": (),
    "definition-ref": (), "nullable": ("schema",), "default": ("schema",),
    "list": ("items_schema",), "dict": ("keys_schema", "values_schema"),
    "union": ("choices",), "tagged-union": ("choices",), "definitions": ("schema", "definitions"),
}  # fmt: skip


def _as_typed_dicts(schema: Any) -> Any:
    """`schema` with each model made a typed dict of the same fields and configuration, and
    optional fields left out of the result when absent (as the models' dump leaves them)."""
    if isinstance(schema, list | tuple):  # a union's choices; a (schema, label) choice
        return [_as_typed_dicts(item) if isinstance(item, dict) else item for item in schema]
    kind = schema.get("type")
    if kind == "model":
        return _typed_dict(schema)
    if kind not in _CHILDREN:
        raise _Unsupported(kind)
    # A node's own "serialization" plays no part in validating.
    copy = {key: value for key, value in schema.items() if key != "serialization"}
    for key in _CHILDREN[kind]:
        if key not in copy:
            continue
        child = copy[key]
        if kind == "tagged-union":
            copy[key] = {tag: _as_typed_dicts(choice) for tag, choice in child.items()}
        else:
            copy[key] = _as_typed_dicts(child)
    return copy


def _typed_dict(model: dict[str, Any]) -> dict[str, Any]:
    inner = model["schema"]
    unsupported = any(model.get(key) for key in ("custom_init", "root_model", "post_init"))
    if inner.get("type") != "model-fields" or unsupported or inner.get("extras_schema"):
        raise _Unsupported(model.get("cls"))
    fields: dict[str, Any] = {}
    for name, field in inner["fields"].items():
        if field.get("type") != "model-field" or field.get("frozen"):
            raise _Unsupported(name)
        value, required = field["schema"], True
        if value.get("type") == "default":
            required = False
            if "default" in value and value["default"] is None:
                value = value["schema"]  # absent stays absent: no None to carry
        typed: dict[str, Any] = {
            "type": "typed-dict-field",
            "schema": _as_typed_dicts(value),
            "required": required,
        }
        if "validation_alias" in field:
            typed["validation_alias"] = field["validation_alias"]
        fields[name] = typed
    typed_dict: dict[str, Any] = {"type": "typed-dict", "fields": fields}
    if "config" in model:
        typed_dict["config"] = model["config"]
    if "ref" in model:
        typed_dict["ref"] = model["ref"]
    return typed_dict


def _plain_messages() -> SchemaValidator | None:
    schema: CoreSchema = TypeAdapter(list[Message]).core_schema
    try:
        return SchemaValidator(_as_typed_dicts(schema))
    except _Unsupported:
        return None


_PLAIN_MESSAGES = _plain_messages()

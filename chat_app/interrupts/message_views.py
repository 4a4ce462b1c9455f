"""msgspec structs for the `ag_ui` messages, derived from pydantic's own schema for them.

Owns `LENIENT` and `SHALLOW` (the types to `msgspec.convert` a request's messages to).
A view has the attributes of its `ag_ui` model (same names, same values), so the engine's
scans read views and models alike; msgspec checks and builds them four times faster than
pydantic builds plain dicts, and ten times faster than it builds the models (measured at
10,000 messages).

The structs are made from the core schema pydantic validates `list[Message]` with, never
written by hand, so they follow `ag_ui`. msgspec is never looser than pydantic here: it is
strict where pydantic's lax mode converts, and it refuses a field spelled by its attribute
name rather than its alias (a refusal goes to pydantic, which decides); anything in the schema
it has no exact counterpart for (a constraint, a validator) raises `Unsupported`, which turns
the fast path off.
"""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple, Union

import msgspec
from ag_ui.core import Message, RunAgentInput
from pydantic import TypeAdapter


class Unsupported(Exception):
    """A schema construct with no exact msgspec counterpart."""


class _Typed(NamedTuple):
    type: Any
    #: The most levels a value of the type nests (a scalar: 1; `[[1]]`: 3), as `too_deep`
    #: counts them.
    height: float


class _Builder:
    """msgspec types for core schemas: *lenient* ones take what the models take (unknown
    fields ignored, `Any` as it is); *shallow* ones also refuse unknown fields and take for
    `Any` only JSON of at most `ANY_HEIGHT` levels, so every value they take has a height."""

    def __init__(self, *, shallow: bool) -> None:
        self.shallow = shallow
        self.definitions: dict[str, Any] = {}
        self.by_ref: dict[str, _Typed] = {}
        self.building: set[str] = set()
        #: Each struct made for a model, with that model's class.
        self.kinds: dict[type, type] = {}

    def type_of(self, schema: dict[str, Any], tag: tuple[str, str] | None = None) -> _Typed:
        kind = schema["type"]
        if kind == "model":
            return self.struct(schema, tag)
        if tag is not None:
            raise Unsupported("a tagged union choice that is not a model")
        if kind == "definition-ref":
            return self.ref(schema["schema_ref"])
        if kind == "definitions":
            self.definitions.update({item["ref"]: item for item in schema["definitions"]})
            return self.type_of(schema["schema"])
        _no_constraints(schema)
        if kind == "any":
            return _Typed(_bounded_json(ANY_HEIGHT), ANY_HEIGHT) if self.shallow else _ANY
        if kind in _SCALARS:
            return _Typed(_SCALARS[kind], 1)
        if kind == "literal":
            return _Typed(_LITERAL[tuple(schema["expected"])], 1)
        if kind == "nullable":
            inner = self.type_of(schema["schema"])
            return _Typed(_UNION[inner.type, None], inner.height)
        if kind == "list":
            items = self.type_of(schema["items_schema"])
            return _Typed(_LIST[items.type], 1 + items.height)
        if kind == "dict":
            keys = self.type_of(schema.get("keys_schema", {"type": "any"}))
            values = self.type_of(schema.get("values_schema", {"type": "any"}))
            return _Typed(_DICT[keys.type, values.type], 1 + values.height)
        if kind == "union":
            choices = [c[0] if isinstance(c, tuple) else c for c in schema["choices"]]
            return _union([self.type_of(choice) for choice in choices])
        if kind == "tagged-union":
            field = schema["discriminator"]
            if not isinstance(field, str):
                raise Unsupported("a discriminator that is not one key")
            return _union(
                [self.type_of(choice, (field, tag)) for tag, choice in schema["choices"].items()]
            )
        raise Unsupported(kind)

    def ref(self, ref: str) -> _Typed:
        if ref not in self.by_ref:
            if ref in self.building:
                raise Unsupported("a recursive schema")
            self.building.add(ref)
            self.by_ref[ref] = self.type_of(self.definitions[ref])
        return self.by_ref[ref]

    def struct(self, model: dict[str, Any], tag: tuple[str, str] | None) -> _Typed:
        inner = model["schema"]
        config = model.get("config", {})
        if (
            inner.get("type") != "model-fields"
            or any(model.get(key) for key in ("custom_init", "root_model", "post_init"))
            or inner.get("extras_schema")
            or inner.get("computed_fields")
            or config.get("strict")
            or config.get("extra_fields_behavior") not in ("allow", "ignore")
        ):
            raise Unsupported(model.get("cls"))
        by_name = bool(config.get("validate_by_name", config.get("populate_by_name")))
        fields: list[tuple[str, Any, Any]] = []
        wire: dict[str, str] = {}
        height: float = 1
        for name, field in inner["fields"].items():
            alias = field.get("validation_alias", name)
            if not isinstance(alias, str) or field.get("type") != "model-field":
                raise Unsupported(name)
            value = field["schema"]
            if tag is not None and alias == tag[0]:
                continue  # the union's tag: msgspec reads it
            optional = value["type"] == "default"
            if optional:
                if "default" not in value:
                    raise Unsupported(f"{name}: a default factory")
                value = value["schema"]
            typed = self.type_of(value)
            height = max(height, 1 + typed.height)
            # An optional field left out stays out (UNSET, falsy, as the default None is
            # to the scans), so a view can give back the very fields it was given.
            if optional:
                fields.append((name, _UNION[typed.type, msgspec.UnsetType], msgspec.UNSET))
            else:
                fields.append((name, typed.type, msgspec.NODEFAULT))
            wire[name] = alias
            if by_name and alias != name:
                # A field spelled by its attribute name: pydantic uses it when the alias is
                # absent, and keeps it as an extra when not. Rare on the wire (TanStack and
                # AG-UI clients write the aliases), so msgspec refuses it and pydantic decides.
                shadow = f"{name}__by_name"
                fields.append((shadow, msgspec.UnsetType, msgspec.UNSET))
                wire[shadow] = name
        cls = model["cls"]
        struct: type = msgspec.defstruct(
            f"{cls.__name__}View",
            [(name, kind) if default is msgspec.NODEFAULT else (name, kind, default)
             for name, kind, default in fields],
            kw_only=True,
            rename=wire,
            forbid_unknown_fields=self.shallow,
            gc=False,  # views hold no cycles; the collector need not walk them
            tag_field=tag[0] if tag else None,
            tag=tag[1] if tag else None,
        )  # fmt: skip
        self.kinds[struct] = cls
        return _Typed(struct, height)


#: How deep a free-form value (`metadata`, an activity's content) may nest and still be
#: checked by the shallow views; a deeper one is measured the long way.
ANY_HEIGHT = 8
_ANY = _Typed(Any, math.inf)


def _union(choices: list[_Typed]) -> _Typed:
    types = tuple(choice.type for choice in choices)
    return _Typed(_UNION[types], max(choice.height for choice in choices))


def _bounded_json(height: int) -> Any:
    """JSON values of at most `height` levels."""
    scalar = _UNION[str, int, float, bool, None]
    if height <= 1:
        return scalar
    inner = _bounded_json(height - 1)
    return _UNION[scalar, _LIST[inner], _DICT[str, inner]]


# Generic aliases built at run time (mypy cannot check a subscript made of variables).
_LIST: Any = list
_DICT: Any = dict
_UNION: Any = Union
_LITERAL: Any = Literal
_SCALARS: dict[str, Any] = {
    "str": str, "int": int, "float": float, "bool": bool, "none": None,
}  # fmt: skip
_STRUCTURAL = {"type", "ref", "metadata", "serialization", "schema", "items_schema",
               "keys_schema", "values_schema", "choices", "discriminator", "expected",
               "definitions", "schema_ref", "custom_error_type", "from_attributes",
               "strict"}  # fmt: skip


def _no_constraints(schema: dict[str, Any]) -> None:
    # A length, a bound, a pattern: msgspec could say it, but not always as pydantic does.
    extra = set(schema) - _STRUCTURAL
    if extra or schema.get("strict"):  # pydantic strict refuses ints as floats; msgspec not
        raise Unsupported(f"{schema['type']}: {sorted(extra)}")


class Views(NamedTuple):
    """What a request's messages convert to, and the `ag_ui` class of each struct."""

    #: A struct whose one field, `messages`, is the list of views: msgspec keeps what it
    #: works out about a struct type on the class (1 µs a call), and works out a bare
    #: `list[Union[...]]` again on every call (6 µs, measured).
    holder: type
    kinds: dict[type, type]
    #: The most levels a message list these views take can nest (infinite when lenient).
    height: float


def _message_views(*, shallow: bool) -> Views | None:
    builder = _Builder(shallow=shallow)
    try:
        typed = builder.type_of(dict(TypeAdapter(list[Message]).core_schema))
        holder = msgspec.defstruct("MessageViews", [("messages", typed.type)], gc=False)
        msgspec.convert({"messages": []}, holder)  # some unions are refused only when used
    except (Unsupported, TypeError):
        return None
    return Views(holder, builder.kinds, typed.height)


#: Views that take what the models take, or `None` when the fast path is off.
LENIENT = _message_views(shallow=False)
#: Views that also refuse unknown fields and deep free-form values: what they take has a
#: known height, so its depth need not be measured, and each holds all its message said, so
#: the message can be built from it (`msgspec.to_builtins`) and the request's dict let go.
SHALLOW = _message_views(shallow=True)


#: Top-level keys clients send beyond `RunAgentInput`'s fields, kept as they come (TanStack's
#: client mirrors `forwardedProps` as `data`); a request with any other goes the long way.
KNOWN_EXTRA_KEYS = ("data",)


def _request_struct(messages: Views | None) -> type | None:
    """A struct for a whole request body: the messages as `messages` views, `resume` as its
    raw text (people's answers, which the server reads more strictly than the rest), every
    other field as the JSON it is (`UNSET` when absent), an unknown key or a field spelled by
    its attribute name refused."""
    if messages is None:
        return None
    model = RunAgentInput.__pydantic_core_schema__
    if model["type"] != "model" or model["schema"]["type"] != "model-fields":
        return None
    list_type = msgspec.structs.fields(messages.holder)[0].type
    fields: list[tuple[str, Any, Any]] = []
    wire: dict[str, str] = {}
    for name, field in model["schema"]["fields"].items():
        alias = field.get("validation_alias", name)
        if not isinstance(alias, str):
            return None
        kind = (
            list_type if name == "messages"
            else _UNION[msgspec.Raw, msgspec.UnsetType] if name == "resume"
            else _UNION[Any, msgspec.UnsetType]
        )  # fmt: skip
        fields.append((name, kind, msgspec.NODEFAULT if name == "messages" else msgspec.UNSET))
        wire[name] = alias
        if alias != name:
            fields.append((f"{name}__by_name", msgspec.UnsetType, msgspec.UNSET))
            wire[f"{name}__by_name"] = name
    for key in KNOWN_EXTRA_KEYS:
        fields.append((key, _UNION[Any, msgspec.UnsetType], msgspec.UNSET))
        wire[key] = key
    return msgspec.defstruct(
        "RequestView", fields, kw_only=True, rename=wire, forbid_unknown_fields=True, gc=False
    )


#: The whole request, its messages as `SHALLOW` views; `None` when that path is off.
REQUEST = _request_struct(SHALLOW)

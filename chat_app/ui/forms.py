"""Forms generated at run time from a JSON Schema: flatten, read back, validate.

Owns `FormField`, `form_fields`, `read_form` and `FormResult`. Pure Python (no Reflex): the
components render the flat field list with `rx.foreach`, the browser submits strings, and
`read_form` turns them back into typed JSON and checks them with `jsonschema`, with one
readable message per field. Nested objects become indented groups; arrays of scalars become
one-item-per-line text areas (or checkboxes when their items are an enum); a required yes or
no without a default is a pair of choices, not a box an untouched form would send as "no".
A property written as a local reference (`{"$ref": "#/$defs/Speed"}`, as pydantic writes a
model's enums and nested models) is shown as what it names, and one that may also be `null`
(pydantic's `Optional[...]`) as its other shape; the schema itself is never rewritten, since
its hash is part of what the pause sealed, and the whole value is still checked against it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chat_app.interrupts import (
    MAX_SAFE_INTEGER,
    SchemaProblem,
    UnusableSchemaError,
    schema_problems,
)
from chat_app.interrupts.strict_json import strict_loads
from chat_app.trust.identity import spelled_out

# Enums with at most this many options are radio buttons; longer ones are a select.
RADIO_LIMIT = 4
#: The choices of a required boolean that has no default.
YES_NO = ("Yes", "No")
FORM_ERROR_KEY = ""  # errors that belong to no single field
#: The hidden input that marks a form's submission as its draft (kept, not checked or sent).
DRAFT_FIELD = "__draft"
#: Keywords that make a value one of several shapes.
_COMBINED = frozenset({"anyOf", "oneOf", "allOf"})
# Free-text fields people write several lines in, whatever their schema says.
_LONG_TEXT_NAMES = frozenset(
    {"body", "description", "message", "comment", "notes", "note", "reason"}
)


@dataclass
class FormField:
    """One row of a generated form. Every value is a string so Reflex can render it."""

    path: str  # dotted path: `address.city`
    label: str
    #: text | textarea | number | integer | boolean | select | radio | list | checks | group
    #: | json (a value no single control fits: typed as JSON)
    kind: str
    input_type: str = "text"  # the HTML input type: text, email, date, url
    #: The keyboard a phone shows (`inputmode`): numbers are typed as text (`_number`), with
    #: the digits' keyboard: "decimal", "numeric"; "" for the input type's own.
    input_mode: str = ""
    required: bool = False
    description: str = ""
    options: list[str] = field(default_factory=list)
    option_values: list[str] = field(default_factory=list)  # each option's JSON value
    value: str = ""  # initial value ("true"/"" for booleans; one item per line for lists)
    chosen: list[str] = field(default_factory=list)  # initial choices of a `checks` field
    depth: int = 0
    min_length: str = ""
    max_length: str = ""
    pattern: str = ""
    placeholder: str = ""
    error: str = ""  # the message shown under the control after a failed submit
    #: Which refused Submit the error is from (`FormMemory.replies`): its element is drawn
    #: anew for each, so the page's mark that hid the last one (typed over, `DRAFT_SCRIPT`)
    #: is not on the next.
    error_round: int = 0
    #: Edited arguments: the value the model proposed, shown beside a field once changed.
    proposed: str = ""
    has_proposed: bool = False
    #: The control's element id, unique on the page (two cards' forms may hold the same
    #: path): its label points at it, and its error (`<control_id>-error`) describes it.
    control_id: str = ""
    #: The schema allows `null`: a required field left empty is sent as `null`.
    nullable: bool = False
    #: A `list` field's items, when they are numbers: "integer" or "number" ("" for text).
    item_kind: str = ""
    #: An optional box the proposal (an edit's arguments) did not hold: left unticked, it
    #: stays out of the answer, where `false` would read as a change nobody made.
    unticked_absent: bool = False


@dataclass
class FormResult:
    """What `read_form` made of a submission: the typed value, or errors by field path."""

    value: Any
    errors: dict[str, str]

    @property
    def ok(self) -> bool:
        return not self.errors


def form_fields(schema: Mapping[str, Any], initial: Any = None) -> list[FormField]:
    """Flatten `schema` into form rows, prefilled from `initial` or the schema's defaults."""
    fields: list[FormField] = []
    shape = _shape(schema, schema, _ROOT)
    if _is_object(shape.schema):
        proposal = isinstance(initial, Mapping)
        start = initial if proposal else {}
        _object_fields(shape.schema, schema, shape.seen, "", 0, start, fields, proposal)
    else:
        fields.append(_field(shape, schema, "value", "Value", True, 0, initial))
    return fields


@dataclass(frozen=True)
class _Shape:
    """A property's schema as the form shows it: its local references followed, and a
    `null` alternative set aside (`nullable`). `seen` holds the references followed on the
    way here, so a model that contains itself ends in a JSON field, not a form without end."""

    schema: Mapping[str, Any]
    nullable: bool = False
    seen: frozenset[str] = frozenset()


#: The form's own schema, drawn already: a reference to it (`#`) is typed as JSON.
_ROOT = frozenset({"#"})
#: The keywords a property keeps over what its reference names: its own words and default.
_OWN_KEYWORDS = ("title", "description", "default", "examples")


def _shape(schema: Mapping[str, Any], root: Mapping[str, Any], seen: frozenset[str]) -> _Shape:
    """What `schema` asks for, read through `$ref`s into `root` and through a one-branch
    `anyOf`/`oneOf`/`allOf` beside `{"type": "null"}`."""
    nullable = False
    while True:
        kind = schema.get("type")
        if isinstance(kind, list) and "null" in kind:
            nullable = True
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = _local(root, ref)
            if target is None or ref in seen:
                return _Shape(schema, nullable, seen)  # not followed: typed as JSON
            seen = seen | {ref}
        else:
            branch = _only_branch(schema)
            if branch is None:
                return _Shape(schema, nullable, seen)
            target, is_nullable = branch
            nullable = nullable or is_nullable
        own = {key: schema[key] for key in _OWN_KEYWORDS if key in schema}
        schema = {**target, **own}


def _only_branch(schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool] | None:
    """The one shape a combination leaves besides `null`, and whether `null` was there
    (`None` when it is no such combination)."""
    if "type" in schema or "enum" in schema or "properties" in schema:
        return None
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(keyword)
        if not isinstance(branches, list):
            continue
        if len(_COMBINED & schema.keys()) > 1:
            return None
        if keyword == "allOf":  # every branch holds: one branch is that shape
            one = len(branches) == 1 and isinstance(branches[0], Mapping)
            return (branches[0], False) if one else None
        rest = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
        if len(rest) == 1 and isinstance(rest[0], Mapping):
            return rest[0], len(rest) < len(branches)
        return None
    return None


def _local(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    """The part of `root` a local reference (`#/$defs/Speed`) points at, if any (not an
    anchor's name, `#speed`: those are not followed)."""
    if ref != "#" and not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[1:].split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, Mapping) else None


def _is_object(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" or "properties" in schema


#: A schema keyword naming the order its properties are shown in. Canonical JSON sorts an
#: object's keys on the wire (as TanStack does), so `properties` arrive in name order; a list
#: keeps its order.
ORDER_KEYWORD = "x-order"


def _ordered_properties(schema: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """`properties` in the schema's `x-order` (names it does not list follow, as given)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    order = schema.get(ORDER_KEYWORD)
    if not isinstance(order, list):
        return list(properties.items())
    rank = {name: index for index, name in enumerate(order) if isinstance(name, str)}
    return sorted(properties.items(), key=lambda item: rank.get(item[0], len(rank)))


def _object_fields(
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    seen: frozenset[str],
    prefix: str,
    depth: int,
    initial: Mapping[str, Any],
    out: list[FormField],
    proposal: bool,
) -> None:
    """`proposal`: `initial` is a proposal (an edit's arguments), not the schema's defaults."""
    required = set(schema.get("required", []))
    for name, child in _ordered_properties(schema):
        if not isinstance(child, Mapping):
            continue
        path = f"{prefix}.{name}" if prefix else name
        # The property's own title, not its model's: pydantic titles a model by its class.
        label = str(child.get("title") or _humanize(name))
        shape = _shape(child, root, seen)
        # A model that may be `None` stays one value, typed as JSON: a group cannot say
        # "none of it" (a box left unticked still sends `false`, and makes the object). So
        # does an object whose fields are not named (a `dict`): no group could hold them.
        named = isinstance(shape.schema.get("properties"), Mapping)
        if _is_object(shape.schema) and named and not shape.nullable:
            out.append(
                FormField(
                    path=path,
                    label=label,
                    kind="group",
                    required=name in required,
                    description=str(shape.schema.get("description", "")),
                    depth=depth,
                )
            )
            nested = initial.get(name)
            start = nested if isinstance(nested, Mapping) else {}
            _object_fields(shape.schema, root, shape.seen, path, depth + 1, start, out, proposal)
        else:
            row = _field(shape, root, path, label, name in required, depth, initial.get(name))
            row.unticked_absent = (
                proposal and row.kind == "boolean" and not row.required and name not in initial
                and "default" not in shape.schema
            )  # fmt: skip
            out.append(row)


def _field(
    shape: _Shape,
    root: Mapping[str, Any],
    path: str,
    label: str,
    required: bool,
    depth: int,
    initial: Any,
) -> FormField:
    schema = shape.schema
    value = initial if initial is not None else schema.get("default")
    row = FormField(
        path=path,
        label=label,
        kind="text",
        required=required,
        description=str(schema.get("description", "")),
        depth=depth,
        nullable=shape.nullable,
    )
    kind = _scalar_type(schema)
    raw_items = schema.get("items")
    items = _shape(raw_items, root, shape.seen).schema if isinstance(raw_items, Mapping) else {}
    if (
        "$ref" in schema
        or _is_object(schema)
        or ("type" not in schema and "enum" not in schema and _COMBINED & schema.keys())
        or (kind == "array" and ("$ref" in items or _is_object(items) or "items" in items))
    ):
        # One of several shapes (an approval's envelope seen as a raw question, say), a list
        # of objects, a model that may be `None`, or a reference not followed: no control
        # fits, so the value is typed as JSON and checked as such.
        row.kind = "json"
        row.placeholder = _json_hint(schema, items)
        row.value = json.dumps(value, ensure_ascii=False) if value is not None else ""
    elif "enum" in schema:
        row.options = [_text(option) for option in schema["enum"]]
        row.option_values = [json.dumps(option) for option in schema["enum"]]
        row.kind = "radio" if len(row.options) <= RADIO_LIMIT else "select"
        row.value = _text(value) if value is not None else ""
    elif kind == "boolean" and required and "default" not in schema:
        # An unticked box would answer "no" for a person who never chose: a required yes or
        # no with no default is asked, and Submit waits until one is chosen.
        row.kind = "radio"
        row.options, row.option_values = list(YES_NO), ["true", "false"]
        row.value = YES_NO[0] if value is True else YES_NO[1] if value is False else ""
    elif kind == "boolean":
        row.kind = "boolean"
        row.value = "true" if value is True else ""
    elif kind in ("number", "integer"):
        # As text, read here: a browser's number field takes "9,99" as 999 in English (the
        # comma a thousands separator) and empties a number out of its range, so what was
        # typed would go unseen.
        row.kind = kind
        row.input_mode = "numeric" if kind == "integer" else "decimal"
        row.value = _text(value) if value is not None else ""
    elif kind == "array":
        if "enum" in items:
            row.kind = "checks"
            row.options = [_text(option) for option in items["enum"]]
            row.option_values = [json.dumps(option) for option in items["enum"]]
            row.chosen = [_text(item) for item in value] if isinstance(value, list) else []
        else:
            row.kind = "list"
            item_kind = _scalar_type(items)
            row.item_kind = item_kind if item_kind in ("integer", "number") else ""
            row.placeholder = _LIST_HINTS[row.item_kind]
            row.value = "\n".join(_text(item) for item in value) if isinstance(value, list) else ""
    else:
        fmt = schema.get("format")
        row.input_type = {"email": "email", "date": "date", "uri": "url"}.get(str(fmt), "text")
        if row.input_type == "url":
            row.placeholder = "https://"
        max_length = schema.get("maxLength")
        long_text = isinstance(max_length, int) and max_length > 200
        row.kind = (
            "textarea" if long_text or path.rsplit(".", 1)[-1] in _LONG_TEXT_NAMES else "text"
        )
        row.min_length = _text(schema.get("minLength", ""))
        row.max_length = _text(max_length if max_length is not None else "")
        row.pattern = str(schema.get("pattern", ""))
        row.value = _text(value) if value is not None else ""
    return row


def _json_hint(schema: Mapping[str, Any], items: Mapping[str, Any]) -> str:
    """A JSON field's placeholder: the shape it takes, with its fields' names where the
    schema names them ("A JSON object, e.g. {"city": …, "zip": …}")."""
    if _is_object(items):
        return f"A JSON list, e.g. [{_object_hint(items)}]"
    if _is_object(schema) and isinstance(schema.get("properties"), Mapping):
        return f"A JSON object, e.g. {_object_hint(schema)}"
    return 'A JSON value, e.g. {"approved": true}'


def _object_hint(schema: Mapping[str, Any]) -> str:
    names = [name for name, _ in _ordered_properties(schema)]
    more = ", …" if len(names) > 3 else ""
    return "{" + ", ".join(f'"{name}": …' for name in names[:3]) + more + "}"


def _scalar_type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), "string")
    return str(kind)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def answer_lines(schema: Mapping[str, Any] | None, value: Any) -> list[str]:
    """An answer as a person reads it back, one line a field in the form's order, labelled
    as the form labelled them: "Shipping speed: express", "Gift wrap: no"."""
    lines: list[str] = []
    root = schema if isinstance(schema, Mapping) else {}
    _answer_lines(root, root, _ROOT, value, "", lines)
    return lines


def _answer_lines(
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    seen: frozenset[str],
    value: Any,
    label: str,
    out: list[str],
) -> None:
    if isinstance(value, Mapping):
        shape = _shape(schema, root, seen)
        properties = _ordered_properties(shape.schema)
        known = [(name, child) for name, child in properties if name in value]
        named = {name for name, _ in known}
        rest: list[tuple[str, Any]] = [(name, {}) for name in value if name not in named]
        for name, child in [*known, *rest]:
            child = child if isinstance(child, Mapping) else {}
            title = str(child.get("title") or _humanize(str(name)))
            line = f"{label} › {title}" if label else title
            _answer_lines(child, root, shape.seen, value[name], line, out)
        return
    shown = spelled_out(_read_back(value))  # as it is stored, whatever its direction marks
    out.append(f"{label}: {shown}" if label else shown)


def _read_back(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, list) and all(not isinstance(v, Mapping | list) for v in value):
        return ", ".join(_read_back(v) for v in value)
    if isinstance(value, Mapping | list):
        return json.dumps(value, ensure_ascii=False)
    return _text(value)


def _humanize(name: str) -> str:
    spaced = "".join(f" {c.lower()}" if c.isupper() else c for c in name).replace("_", " ")
    return spaced.strip().capitalize()


def read_form(
    schema: Mapping[str, Any],
    fields: Sequence[FormField],
    data: Mapping[str, str | list[str]],
) -> FormResult:
    """Turn a submission (strings, as the browser sends them) into typed JSON and check it.

    A value that cannot be converted (`"abc"` for a number) is an error on its field; the
    converted value (without it) is then validated against the whole schema with
    `jsonschema`, each other field getting its first problem.
    """
    errors: dict[str, str] = {}
    value: dict[str, Any] = {}
    for row in fields:
        if row.kind == "group":
            continue
        try:
            converted = _convert(row, data)
        except ValueError as error:
            errors[row.path] = str(error)
            continue
        if converted is not _OMIT:
            _assign(value, row.path, converted)
    result: Any = value
    if not _is_object(schema):
        result = value.get("value")
    # The whole value is checked even when a field could not be read (it is left out, and
    # keeps its own message): every field's problem shows after one Submit, not a round each.
    try:
        problems = schema_problems(schema, result)
    except UnusableSchemaError as error:
        return FormResult(
            value=result, errors={FORM_ERROR_KEY: f"This form cannot be checked: {error}"}
        )
    known = {row.path: row for row in fields}
    for problem in problems:
        full = tuple(problem.path) if _is_object(schema) else ("value", *problem.path)
        path = ".".join(str(part) for part in full)
        while path and path not in known:
            path = path.rpartition(".")[0]
        at = known.get(path)
        if at is not None and at.kind == "group" and problem.keyword == "required":
            # A group left empty: its own fields say what they need, where they are typed.
            inside = [
                child for child in fields
                if child.path.startswith(f"{path}.") and child.depth == at.depth + 1
                and child.required and child.kind != "group"
            ]  # fmt: skip
            for child in inside:
                errors.setdefault(child.path, _required(child))
            if inside:
                continue
        if problem.keyword == "required" and at is not None:
            message = _required(at)
        else:
            message = friendly_message(problem)
        inner = full[len(path.split(".")) if path else 0 :]
        if at is not None and at.kind == "json" and inner:
            # Typed as JSON: say where inside it, as the person wrote it.
            message = f"{_where(inner)}: {message}"
        elif at is not None and at.kind == "list" and inner and isinstance(inner[0], int):
            message = f"Line {_line_of(data.get(at.path), inner[0])}: {message}"
        errors.setdefault(path or FORM_ERROR_KEY, message)
    return FormResult(value=result, errors=errors)


def _required(row: FormField) -> str:
    """What a required field left empty is told."""
    if row.kind not in ("radio", "select"):
        return "This field is required."
    # A select's list is long, and shown by the control itself.
    listed = f" of: {', '.join(row.options)}" if row.kind == "radio" else ""
    return f"Choose one{listed}."


def _where(inner: Sequence[str | int]) -> str:
    """A place inside a JSON value: "item 2 › city"."""
    return " › ".join(f"item {part + 1}" if isinstance(part, int) else part for part in inner)


#: A list field's placeholder, by the kind of its items.
_LIST_HINTS = {"": "One per line", "integer": "One whole number per line",
               "number": "One number per line"}  # fmt: skip


class _Omit:
    pass


_OMIT = _Omit()


def _convert(row: FormField, data: Mapping[str, str | list[str]]) -> Any:
    raw = data.get(row.path)
    if row.kind == "checks":
        chosen = raw if isinstance(raw, list) else ([raw] if raw else [])
        return [_choice(row, item) for item in chosen]
    text = (raw[-1] if raw else "") if isinstance(raw, list) else (raw or "")
    if row.kind == "boolean":
        ticked = text.lower() not in ("", "false", "off", "0")
        return _OMIT if row.unticked_absent and not ticked else ticked
    if row.kind == "list":
        # Blank lines are skipped, but counted: "Line 3" is the third line the person sees.
        lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1)]
        items = [_list_item(row, line, number) for number, line in lines if line]
        return items if items or row.required else _OMIT
    if not text.strip():
        # A required field left empty is reported by the schema's `required`, unless the
        # schema allows it to be `null`: then empty says so.
        return None if row.nullable and row.required else _OMIT
    if row.kind == "json":
        try:
            return strict_loads(text)
        except ValueError:
            raise ValueError('Enter a JSON value, such as {"approved": true} or "text".') from None
    if row.kind in ("integer", "number"):
        return _typed_number(text, row.kind)
    if row.kind in ("select", "radio"):
        return _choice(row, text)
    return text


def _line_of(raw: str | list[str] | None, index: int) -> int:
    """The line (from 1, as the person sees them) of a list field's item `index`: blank
    lines hold no item, but count."""
    text = (raw[-1] if raw else "") if isinstance(raw, list) else (raw or "")
    filled = [number for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    return filled[index] if index < len(filled) else index + 1


def _list_item(row: FormField, line: str, number: int) -> Any:
    """One line of a list field, as its items' schema types it (a number stays text in a
    list of text); a line that cannot be read says which it is."""
    if not row.item_kind:
        return line
    try:
        return _typed_number(line, row.item_kind)
    except ValueError as error:
        raise ValueError(f"Line {number}: {error}") from None


#: A number as JSON writes one (a sign, ASCII digits, a decimal point, an exponent), nothing
#: else: not Python's "1_000", "inf", "nan" or other scripts' digits.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WHOLE = re.compile(r"[+-]?[0-9]+")


def _typed_number(text: str, kind: str) -> int | float:
    """`text` read as an "integer" or a "number" field reads it."""
    if kind == "integer":
        number = _number(text, "Enter a whole number.")
        if isinstance(number, float) and not number.is_integer():
            raise ValueError("Enter a whole number.")
        if abs(number) > MAX_SAFE_INTEGER:  # "9007199254740993.0": read as a float, rounded
            raise ValueError("That number is too large.")
        return int(number)
    number = _number(text, "Enter a number.")
    return int(number) if number == int(number) and "." not in text else number


def _number(text: str, what: str) -> int | float:
    """The number typed in `text` (a whole one exactly, however long), or a `ValueError`
    saying what to type (`what` when no better advice fits)."""
    typed = text.strip()
    if _NUMBER.fullmatch(typed) is None:
        if "," in typed and _NUMBER.fullmatch(typed.replace(",", "")) is not None:
            raise ValueError("Use a point for decimals (9.99) and no thousands separators.")
        raise ValueError(what)
    number = float(typed)  # a whole one past a float's range reads as infinite too
    whole = _WHOLE.fullmatch(typed) is not None
    if not math.isfinite(number) or (whole and abs(int(typed)) > MAX_SAFE_INTEGER):
        raise ValueError("That number is too large.")
    if number == 0 and any(digit in "123456789" for digit in typed.lower().partition("e")[0]):
        raise ValueError("That number is too small: it would be sent as 0.")
    return int(typed) if whole else number


def _choice(row: FormField, text: str) -> Any:
    # Enum options are rendered as text; give back the schema's own value (numbers, booleans).
    if text not in row.options:
        raise ValueError(f"Choose one of: {', '.join(row.options)}.")
    return json.loads(row.option_values[row.options.index(text)])


def _assign(target: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for name in parents:
        target = target.setdefault(name, {})
    target[last] = value


def friendly_message(problem: SchemaProblem) -> str:
    """A sentence for a person, by the JSON Schema keyword that failed."""
    limit = problem.limit
    match problem.keyword:
        case "required":
            return "This field is required."
        case "type":
            wanted = limit[0] if isinstance(limit, list) else limit
            return {
                "integer": "Enter a whole number.",
                "number": "Enter a number.",
                "string": "Enter text.",
                "boolean": "Choose yes or no.",
                "array": "Enter a list.",
                "object": "Fill in this group.",
            }.get(str(wanted), problem.message)
        case "format":
            return {
                "email": "Enter a valid email address.",
                "date": "Enter a date as YYYY-MM-DD.",
                "uri": "Enter a full address, like https://example.com.",
                "date-time": "Enter a date and time.",
            }.get(str(limit), f"Enter a valid {limit}.")
        case "minLength":
            return f"Use at least {limit} character{'s' if limit != 1 else ''}."
        case "maxLength":
            return f"Use at most {limit} characters."
        case "minimum":
            return f"Must be at least {_text(limit)}."
        case "maximum":
            return f"Must be at most {_text(limit)}."
        case "exclusiveMinimum":
            return f"Must be more than {_text(limit)}."
        case "exclusiveMaximum":
            return f"Must be less than {_text(limit)}."
        case "pattern":
            return f"Must match the pattern {limit}."
        case "enum":
            options = ", ".join(_text(item) for item in limit) if isinstance(limit, list) else ""
            return f"Choose one of: {options}."
        case "minItems":
            return f"Add at least {limit} item{'s' if limit != 1 else ''}."
        case "maxItems":
            return f"Add at most {limit} items."
        case "uniqueItems":
            return "Each item must be different: one is given twice."
        case "minProperties":
            return f"Fill in at least {_text(limit)} of the fields."
        case "maxProperties":
            return f"Fill in at most {_text(limit)} of the fields."
        case "anyOf" | "oneOf":
            # The shapes the schema allows, none of which fits: which fields go together
            # is the schema's to say, in its descriptions.
            return "These answers do not go together: fill in the fields one of the ways asked."
        case _:
            return problem.message

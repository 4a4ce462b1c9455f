"""Validating values against raw JSON Schemas with `jsonschema` (server and client alike).

Owns `schema_problem` and `CompiledSchema`. TanStack leaves raw JSON Schemas unvalidated; we
validate them, with formats checked, and report the most relevant error with its path.

`jsonschema` is the authority, and slow: ~11 µs to find a tool call's arguments valid, and a
cycle of pause, approve and answer checks them and the policy's `when` five times. A schema
made only of the keywords both read alike (`_SHARED_KEYWORDS`), given a value made only of
JSON's own types (`_json_only`: numbers within 2**53, finite), is checked by `jsonschema-rs`
instead (~0.15 µs): server CPU per cycle
-8 / -10 / -12 % at 1 / 16 / 64 clients (`benchmarks/FINDINGS.md`, "jsonschema-rs"). Which
keywords qualify, and that the two agree on them, `tests/interrupts/test_validation_fast.py`
holds; a message about what is wrong always comes from `jsonschema`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema
import jsonschema_rs
from jsonschema.exceptions import best_match
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from referencing import Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import (
    DRAFT3,
    DRAFT4,
    DRAFT6,
    DRAFT7,
    DRAFT202012,
    specification_with,
)

from ._canonical import canonical_interrupt_json

_FORMATS = jsonschema.FormatChecker()

#: RFC 5321's Mailbox as people type it: a dot-atom local part, "@", a host name. Quoted
#: local parts and address literals are left out: no one types them into a form.
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_MAILBOX = re.compile(rf"{_ATEXT}(?:\.{_ATEXT})*@{_LABEL}(?:\.{_LABEL})*")


def _one_mailbox(value: object) -> bool:
    """`format: email` is one address. jsonschema's own check passes any text with an "@" in
    it: "@", "a b@example.com", and "ada@example.com, eve@example.org", a second recipient
    an approver editing a mail's arguments could slip in."""
    if not isinstance(value, str):
        return True  # formats apply to strings only
    local, _, _ = value.partition("@")
    return len(value) <= 254 and len(local) <= 64 and _MAILBOX.fullmatch(value) is not None


_FORMATS.checks("email")(_one_mailbox)


class UnusableSchemaError(ValueError):
    """The schema itself is not a valid JSON Schema, so nothing can be validated against it."""


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """One reason a value does not match its schema.

    `path` points at the offending value; for a missing required property it points at the
    property itself. `keyword` is the JSON Schema keyword that failed (`type`, `required`…)
    and `limit` that keyword's value in the schema, so a form can word its own message.
    """

    message: str
    path: tuple[str | int, ...]
    keyword: str | None = None
    limit: object = None


def _problem(error: jsonschema.ValidationError, missing: Mapping[int, str | None]) -> SchemaProblem:
    path = tuple(error.absolute_path)
    name = missing.get(id(error))
    if name is not None:
        path += (name,)
    return SchemaProblem(
        message=error.message, path=path, keyword=str(error.validator), limit=error.validator_value
    )


def _closest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """`error`, or for one of several shapes the failure of the shape the value came closest
    to (jsonschema's `best_match`, which keeps `error` when none is closer)."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        return best_match([error]) or error
    return error


def _missing_properties(errors: Iterable[jsonschema.ValidationError]) -> dict[int, str | None]:
    """The property each `required` error is about, by the error's `id`, here and in the
    errors' `context`. jsonschema yields one such error per missing property, in the keyword's
    order, and names the property only in its message: the names are those of the keyword's
    value that the instance lacks, handed out in turn to the errors of one keyword at one place.
    """
    missing: dict[int, str | None] = {}
    lacking: dict[tuple[tuple[str | int, ...], tuple[str | int, ...]], Iterator[str]] = {}
    for error in errors:
        if error.validator == "required" and isinstance(error.instance, Mapping):
            at = (tuple(error.absolute_schema_path), tuple(error.absolute_path))
            if at not in lacking:
                lacking[at] = iter([n for n in error.validator_value if n not in error.instance])
            missing[id(error)] = next(lacking[at], None)
        missing.update(_missing_properties(error.context))
    return missing


#: Keywords that jsonschema-rs reads exactly as jsonschema does, with their values (JSON
#: Schema's own test suite, which both pass, and the differential tests). Left out: `$ref`
#: and its kin (jsonschema-rs would fetch remote schemas), `format` (each has its own
#: checkers), `pattern` and `patternProperties` (Python's regular expressions against
#: ECMA-262's), `multipleOf` (floating-point remainders), and every older draft's meanings
#: (a schema naming its `$schema` goes to jsonschema).
_SHARED_KEYWORDS = frozenset({
    "type", "enum", "const", "required", "dependentRequired",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties", "minContains", "maxContains",
    "properties", "additionalProperties", "items", "prefixItems", "contains",
    "propertyNames", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    "$comment",
})  # fmt: skip
#: Keywords whose value is a schema, a map of schemas, or a list of schemas.
_ONE_SCHEMA = frozenset(
    {"additionalProperties", "items", "contains", "propertyNames", "not", "if", "then", "else"}
)
_SCHEMA_MAP = frozenset({"properties"})
_SCHEMA_LIST = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
#: The types JSON values are read as (`json.loads`, orjson, msgspec), floats aside; a tuple, a
#: set or a subclass is read by the two libraries differently (a tuple is no array to
#: jsonschema).
_JSON_SCALARS = frozenset({str, bool, type(None)})
#: Integers up to this size (and floats below it) read alike in the two libraries.
_EXACT = 2**53


class CompiledSchema:
    """A JSON Schema compiled once: whether values match it, and the first problem of one."""

    __slots__ = ("_fast", "_full")

    def __init__(self, full: jsonschema.protocols.Validator, fast: Any | None) -> None:
        self._full = full
        #: jsonschema-rs's validator, when the schema is made of `_SHARED_KEYWORDS` only.
        self._fast = fast

    @property
    def fast(self) -> bool:
        """Whether jsonschema-rs checks values made of JSON's own types (the schema uses
        `_SHARED_KEYWORDS` only)."""
        return self._fast is not None

    def is_valid(self, value: object) -> bool:
        verdict = self._fast_verdict(value)
        return self._full.is_valid(value) if verdict is None else verdict

    def problem(self, value: object) -> SchemaProblem | None:
        """The first problem of `value`, or `None` when it is valid."""
        if self._fast_verdict(value):
            return None
        errors = list(self._full.iter_errors(value))
        error = best_match(errors)
        return None if error is None else _problem(error, _missing_properties(errors))

    def problems(self, value: object) -> list[SchemaProblem]:
        """Every problem of `value` (for forms: one message per field)."""
        if self._fast_verdict(value):
            return []
        errors = list(self._full.iter_errors(value))
        missing = _missing_properties(errors)
        # A value that fits none of `anyOf`'s shapes is worded by the shape it came closest
        # to (an `Optional` number below its minimum: the minimum), as `problem` words it.
        return [_problem(_closest(error), missing) for error in errors]

    def _fast_verdict(self, value: object) -> bool | None:
        """jsonschema-rs's verdict, or `None` where only jsonschema may say."""
        if self._fast is None or not _json_only(value):
            return None
        try:
            return bool(self._fast.is_valid(value))
        except (ValueError, TypeError, OverflowError):  # e.g. a lone surrogate in a string
            return None


def compile_schema(schema: Mapping[str, object], *, exact: bool = False) -> CompiledSchema:
    """`schema` compiled, once per distinct schema (compiled schemas are kept, by their
    canonical JSON: a schema as the wire carries it, its numbers JavaScript's).

    `exact`: compiled as it is, each call again (for a schema written in Python or TOML, held
    once compiled, such as a policy's `when`): not through canonical JSON, which rounds an
    integer past 2**53 and refuses NaN and infinities.

    Raises:
        UnusableSchemaError: when `schema` is not a valid JSON Schema.
    """
    try:
        if exact:
            return _compile(copy.deepcopy(dict(schema)))
        return _compiled(canonical_interrupt_json(schema))
    except (jsonschema.SchemaError, TypeError) as unusable:
        raise UnusableSchemaError(getattr(unusable, "message", str(unusable))) from None


def schema_problem(schema: Mapping[str, object], value: object) -> SchemaProblem | None:
    """The first problem of `value` against `schema`, or `None` when it is valid.

    Raises:
        UnusableSchemaError: when `schema` is not a valid JSON Schema.
    """
    return compile_schema(schema).problem(value)


def schema_problems(schema: Mapping[str, object], value: object) -> list[SchemaProblem]:
    """Every problem of `value` against `schema` (for forms: one message per field).

    Raises:
        UnusableSchemaError: when `schema` is not a valid JSON Schema.
    """
    return compile_schema(schema).problems(value)


def schema_is_usable(schema: Mapping[str, object]) -> bool:
    """Whether `schema` is itself a valid JSON Schema."""
    try:
        compile_schema(schema)
    except UnusableSchemaError:
        return False
    return True


@lru_cache(maxsize=512)
def _compiled(schema_text: str) -> CompiledSchema:
    return _compile(json.loads(schema_text))


def _compile(schema: Any) -> CompiledSchema:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    # jsonschema follows a `$ref` only when a value reaches it, and one that points nowhere
    # fails there: the schema is unusable, said once here like any other flaw.
    unresolved = _unresolved_ref(schema)
    if unresolved is not None:
        raise jsonschema.SchemaError(
            f"$ref {unresolved!r} points at nothing in the schema (references to other "
            "documents are not fetched)."
        )
    full = cls(schema, format_checker=_FORMATS)
    fast = None
    if isinstance(schema, bool) or (
        isinstance(schema, dict) and _shared_only(schema) and _json_only(schema)
    ):
        try:
            fast = jsonschema_rs.Draft202012Validator(schema)
        except (ValueError, TypeError):  # not ours to judge: jsonschema compiled it
            fast = None
    return CompiledSchema(full, fast)


def _unresolved_ref(schema: Any) -> str | None:
    """The first `$ref` (or `$dynamicRef`) of `schema` that resolves neither within it nor
    to a document jsonschema holds itself (the drafts' meta-schemas), as jsonschema would
    follow it."""
    dialect = schema.get("$schema", "") if isinstance(schema, dict) else ""
    specification = specification_with(str(dialect), default=DRAFT202012)
    resource = specification.create_resource(schema)
    uri = resource.id() or ""
    resolver = SPECIFICATIONS.with_resource(uri, resource).resolver(base_uri=uri)
    # Before 2019-09 a `$ref` stands alone: the keywords beside it are not read.
    alone = specification in (DRAFT3, DRAFT4, DRAFT6, DRAFT7)
    return _first_unresolved(resource, resolver, alone=alone)


def _first_unresolved(resource: Resource[Any], resolver: Any, *, alone: bool) -> str | None:
    # `resolver`: a `referencing` Resolver (the package exports no name for its type).
    contents = resource.contents
    if isinstance(contents, dict):
        for keyword in ("$ref", "$dynamicRef"):
            reference = contents.get(keyword)
            if isinstance(reference, str):
                try:
                    resolver.lookup(reference)
                except Unresolvable:
                    return reference
        if alone and isinstance(contents.get("$ref"), str):
            return None
    for subresource in resource.subresources():
        within = resolver.in_subresource(subresource)
        found = _first_unresolved(subresource, within, alone=alone)
        if found is not None:
            return found
    return None


def _shared_only(schema: object) -> bool:
    """Whether `schema` and its subschemas use `_SHARED_KEYWORDS` only."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not schema.keys() <= _SHARED_KEYWORDS:
        return False
    for keyword, value in schema.items():
        if keyword in _ONE_SCHEMA and not _shared_only(value):
            return False
        if keyword in _SCHEMA_MAP and not (
            isinstance(value, dict) and all(_shared_only(sub) for sub in value.values())
        ):
            return False
        if keyword in _SCHEMA_LIST and not (
            isinstance(value, list) and all(_shared_only(sub) for sub in value)
        ):
            return False
    return True


def _json_only(value: object) -> bool:
    """Whether `value` is made of dicts with string keys, lists and JSON's scalars only, its
    numbers within 2**53 of zero (beyond it jsonschema-rs compares an integer with a float
    by rounding: `2**60 == 2.0**60` read as different) and finite, with no container in
    itself."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if type(item) is dict or type(item) is list:
            if id(item) in seen:  # a cycle (or a shared part): no JSON text reads so
                return False
            seen.add(id(item))
            if type(item) is dict:
                if not all(type(key) is str for key in item):
                    return False
                stack.extend(item.values())
            else:
                stack.extend(item)
        elif type(item) is int:
            if not -_EXACT <= item <= _EXACT:
                return False
        elif type(item) is float:
            if not -_EXACT < item < _EXACT:  # NaN and infinities too
                return False
        elif type(item) not in _JSON_SCALARS:
            return False
    return True

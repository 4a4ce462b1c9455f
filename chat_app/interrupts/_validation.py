"""Validating values against raw JSON Schemas with `jsonschema` (server and client alike).

Owns `schema_problem`. TanStack leaves raw JSON Schemas unvalidated; we validate them, with
formats checked, and report the most relevant error with its path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

import jsonschema
from jsonschema.exceptions import best_match

from ._canonical import canonical_interrupt_json

_FORMATS = jsonschema.FormatChecker()


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


def schema_problem(schema: Mapping[str, object], value: object) -> SchemaProblem | None:
    """The first problem of `value` against `schema`, or `None` when it is valid.

    Raises:
        UnusableSchemaError: when `schema` is not a valid JSON Schema.
    """
    errors = list(_usable_validator(schema).iter_errors(value))
    error = best_match(errors)
    return None if error is None else _problem(error, _missing_properties(errors))


def schema_problems(schema: Mapping[str, object], value: object) -> list[SchemaProblem]:
    """Every problem of `value` against `schema` (for forms: one message per field).

    Raises:
        UnusableSchemaError: when `schema` is not a valid JSON Schema.
    """
    errors = list(_usable_validator(schema).iter_errors(value))
    missing = _missing_properties(errors)
    return [_problem(error, missing) for error in errors]


def schema_is_usable(schema: Mapping[str, object]) -> bool:
    """Whether `schema` is itself a valid JSON Schema."""
    try:
        _usable_validator(schema)
    except UnusableSchemaError:
        return False
    return True


def _usable_validator(schema: Mapping[str, object]) -> jsonschema.protocols.Validator:
    try:
        return _validator(canonical_interrupt_json(schema))
    except (jsonschema.SchemaError, TypeError) as unusable:
        raise UnusableSchemaError(getattr(unusable, "message", str(unusable))) from None


@lru_cache(maxsize=512)
def _validator(schema_text: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=_FORMATS)

"""Schema problems: the message jsonschema gives, and a path that points at what is wrong."""

from __future__ import annotations

import pytest

from chat_app.interrupts import (
    SchemaProblem,
    UnusableSchemaError,
    schema_is_usable,
    schema_problem,
    schema_problems,
)

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "it's": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
    },
    "required": ["name", "it's", "age"],
}


def test_a_valid_value_has_no_problem() -> None:
    assert schema_problem(PERSON, {"name": "Ada", "it's": "x", "age": 36}) is None
    assert schema_problems(PERSON, {"name": "Ada", "it's": "x", "age": 36}) == []


def test_each_missing_required_property_is_a_problem_at_its_own_path() -> None:
    problems = schema_problems({"type": "object", "properties": {"n": PERSON}}, {"n": {"age": 1}})
    assert [(p.message, p.path, p.keyword) for p in problems] == [
        ("'name' is a required property", ("n", "name"), "required"),
        ('"it\'s" is a required property', ("n", "it's"), "required"),
    ]
    assert problems[0].limit == ["name", "it's", "age"]


def test_the_first_problem_of_a_required_property_points_at_the_property() -> None:
    assert schema_problem(PERSON, {"it's": "x", "age": 1}) == SchemaProblem(
        message="'name' is a required property",
        path=("name",),
        keyword="required",
        limit=["name", "it's", "age"],
    )


def test_a_missing_property_inside_a_branch_points_at_the_property() -> None:
    schema = {"type": "array", "items": {"anyOf": [PERSON, {"type": "string"}]}}
    problems = schema_problems(schema, ["ok", {"name": "Ada", "age": -1}])
    (problem,) = problems
    # Worded by the shape the value came closest to, as the first problem is.
    assert (problem.keyword, problem.path) == ("minimum", (1, "age"))
    assert schema_problem(schema, ["ok", {"name": "Ada", "age": -1}]) == problem
    (neither,) = schema_problems(schema, [3])
    assert (neither.keyword, neither.path) == ("anyOf", (0,))
    best = schema_problem({"oneOf": [PERSON, {"type": "object", "required": ["id"]}]}, {})
    assert best is not None and best.keyword == "oneOf"
    inner = schema_problem({"allOf": [PERSON]}, {"name": "Ada", "it's": "x"})
    assert inner == SchemaProblem(
        message="'age' is a required property",
        path=("age",),
        keyword="required",
        limit=["name", "it's", "age"],
    )


def test_other_problems_point_at_the_offending_value() -> None:
    problem = schema_problem(PERSON, {"name": "Ada", "it's": "x", "age": -1})
    assert problem == SchemaProblem(
        message="-1 is less than the minimum of 0", path=("age",), keyword="minimum", limit=0
    )


def test_a_schema_that_is_not_a_json_schema_is_unusable() -> None:
    assert not schema_is_usable({"type": 5})
    with pytest.raises(UnusableSchemaError):
        schema_problem({"type": 5}, 1)
    with pytest.raises(UnusableSchemaError):
        schema_problems({"required": "name"}, {})


EMAIL = {"type": "string", "format": "email"}


@pytest.mark.parametrize(
    "address",
    ["ada@example.com", "first.last+tag@mail.example.co.uk", "o'neil@example.io", "ops@localhost"],
)
def test_an_email_format_takes_one_address(address: str) -> None:
    assert schema_problem(EMAIL, address) is None


@pytest.mark.parametrize(
    "text",
    [
        "@", "ada@", "not-an-email", "a b@example.com", "ada@@example.com",
        "ada@example.com, eve@evil.example", "ada@example.com;eve@evil.example",
        ".ada@example.com", "ada.@example.com", "ada@-example.com", "ada@example..com",
        "ada@example.com\n", "Ada <ada@example.com>", "a" * 65 + "@example.com",
    ],
)  # fmt: skip
def test_an_email_format_refuses_what_is_not_one_address(text: str) -> None:
    """jsonschema's own check takes any text with an "@": an approver editing a mail's "To"
    could add a recipient."""
    problem = schema_problem(EMAIL, text)
    assert problem is not None and problem.keyword == "format", text

"""jsonschema-rs checks what it reads exactly as jsonschema does, and nothing else.

`compile_schema` hands a schema made of `_SHARED_KEYWORDS` only to jsonschema-rs, for values
made of JSON's own types. These tests generate such schemas and values and hold the two
libraries' verdicts equal; they check that every other schema and value is left to
jsonschema, and that a problem's words are still jsonschema's.
"""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat_app.interrupts import canonical_interrupt_json, compile_schema, schema_problem
from chat_app.trust.policy import Policy

NAMES = st.sampled_from(["a", "b", "c", "amount"])
NUMBERS = st.one_of(
    st.integers(min_value=-5, max_value=5),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 1000, 1000.0, 1e300, 5e-324]),
)
SCALARS = st.one_of(
    st.none(), st.booleans(), NUMBERS, st.text(max_size=4), st.sampled_from(["", "é", "😀x"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(NAMES, inner, max_size=4)
    ),
    max_leaves=12,
)
#: What a schema checked fast holds: JSON, its numbers finite and within 2**53 of zero.
SMALL_FLOATS = st.floats(min_value=-(2.0**53), max_value=2.0**53, exclude_min=True,
                         exclude_max=True)  # fmt: skip
SCHEMA_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**53), max_value=2**53),
              SMALL_FLOATS, st.text(max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(NAMES, inner, max_size=4)
    ),
    max_leaves=8,
)  # fmt: skip
TYPES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])
SIZES = st.integers(min_value=0, max_value=3)
LIMITS = st.one_of(st.integers(min_value=-3, max_value=1001), SMALL_FLOATS)


def _keywords(sub: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A schema of one to three shared keywords, `sub` for their subschemas."""
    one = st.one_of(
        st.builds(lambda t: {"type": t}, st.one_of(TYPES, st.lists(TYPES, min_size=1,
                                                                   max_size=3, unique=True))),
        st.builds(lambda v: {"enum": v}, st.lists(SCHEMA_JSON, min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, SCHEMA_JSON),
        st.builds(lambda v: {"required": v}, st.lists(NAMES, max_size=3, unique=True)),
        st.builds(lambda k, v: {"dependentRequired": {k: v}}, NAMES,
                  st.lists(NAMES, max_size=2, unique=True)),
        st.builds(lambda k, v: {k: v}, st.sampled_from(
            ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]), LIMITS),
        st.builds(lambda k, v: {k: v}, st.sampled_from(
            ["minLength", "maxLength", "minItems", "maxItems", "minProperties",
             "maxProperties"]), SIZES),
        st.builds(lambda v: {"uniqueItems": v}, st.booleans()),
        st.builds(lambda c, n: {"contains": c, "minContains": n}, sub, SIZES),
        st.builds(lambda c, n: {"contains": c, "maxContains": n}, sub, SIZES),
        st.builds(lambda v: {"properties": v}, st.dictionaries(NAMES, sub, max_size=3)),
        st.builds(lambda k, v: {k: v}, st.sampled_from(
            ["additionalProperties", "items", "contains", "propertyNames", "not", "if",
             "then", "else"]), sub),
        st.builds(lambda k, v: {k: v}, st.sampled_from(
            ["prefixItems", "allOf", "anyOf", "oneOf"]), st.lists(sub, min_size=1, max_size=3)),
        st.builds(lambda v: {"title": v, "description": v}, st.text(max_size=5)),
    )  # fmt: skip

    def merged(parts: list[dict[str, Any]]) -> dict[str, Any]:
        schema: dict[str, Any] = {}
        for part in parts:
            schema.update(part)
        return schema

    return st.builds(merged, st.lists(one, min_size=1, max_size=3))


SCHEMAS: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.booleans(), st.builds(dict)), _keywords, max_leaves=6
)
FAST = settings(
    max_examples=400, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip


#: Checked against every schema generated, beside the values generated for it.
EDGES: list[object] = [
    None, True, False, 0, -0.0, 1.0, 1000, 1000.5, 2**64 + 1, -(2**70), math.nan, math.inf,
    -math.inf, 2**53 + 1, float(2**53), 2**64 - 1, 10**20, 1e20, 0.1 + 0.2, "", "😀", [], {},
    [1, 1.0], [1, True], [2**53 + 1, float(2**53)], {"a": None}, {"amount": math.inf},
    # Equal past 2**53, which jsonschema-rs compares by rounding: left to jsonschema.
    [2**60, 2.0**60], [9 * 2**51, float(9 * 2**51)], 1180591620717411303423, -(2**70 - 1),
    1.1805916207174113e21, 1690441204489037568, 1.6904412044890376e18,
]  # fmt: skip


def jsonschema_says(schema: Any, value: object) -> bool:
    """jsonschema's verdict on the schema as `compile_schema` reads it: its canonical JSON
    (the wire's numbers are JavaScript's)."""
    schema = json.loads(canonical_interrupt_json(schema))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return bool(cls(schema, format_checker=jsonschema.FormatChecker()).is_valid(value))


@FAST
@given(schema=SCHEMAS, values=st.lists(JSON, min_size=1, max_size=8))
def test_a_schema_of_shared_keywords_is_checked_fast_and_as_jsonschema_checks_it(
    schema: Any, values: list[object]
) -> None:
    compiled = compile_schema(schema) if isinstance(schema, dict) else None
    if compiled is None:  # a bare boolean schema is no tool's schema: checked inside others
        compiled = compile_schema({"allOf": [schema]})
        schema = {"allOf": [schema]}
    assert compiled.fast
    for value in [*values, *EDGES]:
        assert compiled.is_valid(value) == jsonschema_says(schema, value), value
        assert (compiled.problem(value) is None) == jsonschema_says(schema, value), value


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "format": "email"},
        {"type": "string", "pattern": "^\\d+$"},
        {"patternProperties": {"^a": {"type": "integer"}}},
        {"type": "number", "multipleOf": 0.1},
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
        {"properties": {"a": {"type": "string", "format": "date-time"}}},
        {"allOf": [{"type": "object"}, {"not": {"pattern": "x"}}]},
        {"unevaluatedProperties": False},
    ],
)
def test_any_other_keyword_leaves_the_schema_to_jsonschema(schema: dict[str, Any]) -> None:
    assert not compile_schema(schema).fast


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        ({"type": "array"}, (1, 2), False),  # a tuple is no array to jsonschema
        ({"type": "array"}, [1, 2], True),
        ({"type": "object", "required": ["1"]}, {1: "x"}, False),  # jsonschema-rs would raise
        ({"type": "string"}, "x\ud800", True),  # a lone surrogate: jsonschema-rs would raise
        ({"type": "object"}, {"a": {1, 2}}, True),
        ({"type": "string"}, b"x", False),
    ],
)
def test_a_value_that_is_not_plain_json_is_left_to_jsonschema(
    schema: dict[str, Any], value: object, valid: bool
) -> None:
    compiled = compile_schema(schema)
    assert compiled.fast
    assert compiled.is_valid(value) is valid
    assert compiled.is_valid(value) == jsonschema_says(schema, value)


def test_a_problem_is_worded_by_jsonschema_on_the_fast_path() -> None:
    schema = {
        "type": "object",
        "properties": {"amount": {"type": "number", "exclusiveMinimum": 0}},
        "required": ["amount", "reason"],
    }
    assert compile_schema(schema).fast
    problem = schema_problem(schema, {"amount": -1, "reason": "x"})
    assert problem is not None
    assert (problem.message, problem.path) == ("-1 is less than or equal to the minimum of 0",
                                               ("amount",))  # fmt: skip
    missing = schema_problem(schema, {"amount": 3})
    assert missing is not None and missing.path == ("reason",)
    assert schema_problem(schema, {"amount": 3, "reason": "ok"}) is None


def test_the_policy_matches_its_rules_through_the_same_checks() -> None:
    policy = Policy.parse(
        "[[rules]]\n"
        'name = "small-refunds"\n'
        'tool = "refund"\n'
        "when = { properties = { amount = { maximum = 50 } } }\n"
        'decide = "approve"\n'
    )
    rule = policy.rule_named("small-refunds")
    assert rule is not None and rule.when is not None and compile_schema(rule.when).fast
    assert policy.rule_for_tool("refund", {"amount": 20}) is rule
    assert policy.rule_for_tool("refund", {"amount": 50.0}) is rule
    for amount in (50.5, math.inf, 2**70):
        assert policy.rule_for_tool("refund", {"amount": amount}) is None
    # Not a number: `maximum` does not apply, as jsonschema reads it.
    assert policy.rule_for_tool("refund", {"amount": "5000"}) is rule
    assert policy.rule_for_tool("refund", {"amount": (5000,)}) is rule


def test_numbers_past_2_to_the_53_and_cycles_are_left_to_jsonschema() -> None:
    unique = compile_schema({"type": "array", "uniqueItems": True})
    assert unique.fast
    assert not unique.is_valid([2**60, 2.0**60])  # equal, as jsonschema reads them
    assert unique.problem([2**60, 2.0**60]) is not None
    big_limit = compile_schema({"maximum": 1.1805916207174113e21})
    assert not big_limit.fast  # a limit past 2**53: jsonschema's to compare
    assert big_limit.is_valid(1180591620717411303423)
    assert big_limit.problem(1180591620717411303423) is None
    cycle: list[object] = []
    cycle.append(cycle)
    assert compile_schema({"type": "array"}).is_valid(cycle)  # no hang: jsonschema's verdict


def test_a_policy_reads_its_numbers_exactly() -> None:
    """A `when` is compiled as written, not through canonical JSON (whose numbers round past
    2**53): a limit of 2**63 - 1 stays that, and infinity is a limit too."""
    policy = Policy.parse(
        "[[rules]]\n"
        'name = "big"\n'
        'tool = "t"\n'
        "when = { properties = { n = { maximum = 9223372036854775807 } } }\n"
        'decide = "approve"\n'
        "[[rules]]\n"
        'name = "endless"\n'
        'tool = "u"\n'
        "when = { properties = { n = { maximum = inf } } }\n"
        'decide = "approve"\n'
    )
    assert policy.rule_for_tool("t", {"n": 2**63 - 1}) is policy.rule_named("big")
    assert policy.rule_for_tool("t", {"n": 9223372036854775900}) is None
    assert policy.rule_for_tool("u", {"n": 10**30}) is policy.rule_named("endless")

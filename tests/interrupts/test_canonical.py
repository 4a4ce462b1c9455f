"""Canonical JSON: JavaScript number formatting, UTF-16 key order, and every rejection."""

import datetime
import decimal
import json
import math

import pytest

from chat_app.interrupts import canonical_interrupt_json, digest_interrupt_json, js_json_dumps

NOT_JSON = "Interrupt values must be JSON-compatible."
NOT_PLAIN = "Interrupt values must use plain JSON objects."
CYCLE = "Interrupt values must not cycle."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.0", "1"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("1e-7", "1e-7"),
        ("0.000001", "0.000001"),
        ("0.00001", "0.00001"),
        ("1152921504606846976", "1152921504606847000"),
        ("123456789012345678901234567890", "1.2345678901234568e+29"),
        ("1.5", "1.5"),
        ("5e-324", "5e-324"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("100E-2", "1"),
        ("[1e16, 12345678.5, -2.5e-8]", "[10000000000000000,12345678.5,-2.5e-8]"),
    ],
)
def test_numbers_are_formatted_as_javascript_prints_the_parsed_double(
    text: str, expected: str
) -> None:
    assert canonical_interrupt_json(json.loads(text)) == expected


def test_keys_sort_by_utf16_code_unit_not_code_point() -> None:
    value = {"\ue000": 1, "\U0001f600": 2, "a": 3, "Z": 4}
    assert canonical_interrupt_json(value) == '{"Z":4,"a":3,"\U0001f600":2,"\ue000":1}'


def test_lone_surrogates_are_escaped_and_pairs_are_joined() -> None:
    assert canonical_interrupt_json(json.loads('"\\ud800x"')) == '"\\ud800x"'
    assert canonical_interrupt_json("\ud83d\ude00") == '"\U0001f600"'
    assert canonical_interrupt_json({"\udfff": 1}) == '{"\\udfff":1}'


def test_no_whitespace_and_control_characters_escaped_like_json_stringify() -> None:
    value = {"b": [1, {"c": "\b\f\n\r\t\u0001\u007f\u2028/"}], "a": "x"}
    assert canonical_interrupt_json(value) == (
        '{"a":"x","b":[1,{"c":"\\b\\f\\n\\r\\t\\u0001\u007f\u2028/"}]}'
    )


def test_integer_keys_are_their_text_sorted_as_text() -> None:
    assert canonical_interrupt_json({10: "a", 9: "b"}) == '{"10":"a","9":"b"}'


def test_shared_references_that_do_not_cycle_are_fine() -> None:
    shared = {"k": 1}
    assert canonical_interrupt_json([shared, shared]) == '[{"k":1},{"k":1}]'


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        [1, math.nan],
        {"a": math.inf},
        # a real `null` next to the NaN: the NaN must not pass for another `null`
        {"a": None, "b": math.nan},
        [None, -math.inf, "null"],
        ("x", None, math.nan),
    ],
)
def test_non_finite_numbers_are_rejected(value: object) -> None:
    with pytest.raises(TypeError, match=f"^{NOT_JSON}$"):
        canonical_interrupt_json(value)


def test_integers_beyond_the_double_range_are_rejected() -> None:
    with pytest.raises(TypeError, match=f"^{NOT_JSON}$"):
        canonical_interrupt_json(10**400)


@pytest.mark.parametrize("value", [len, lambda: 1, [print]])
def test_functions_are_not_json_compatible(value: object) -> None:
    with pytest.raises(TypeError, match=f"^{NOT_JSON}$"):
        canonical_interrupt_json(value)


@pytest.mark.parametrize(
    "value",
    [
        datetime.datetime(1970, 1, 1),
        {"when": datetime.date(2026, 1, 1)},
        {1, 2},
        b"bytes",
        decimal.Decimal("1.5"),
        object(),
        {None: 1},
        {1.5: 1},
        {True: 1},
    ],
)
def test_non_plain_objects_are_rejected(value: object) -> None:
    with pytest.raises(TypeError, match=f"^{NOT_PLAIN}$"):
        canonical_interrupt_json(value)


def test_cycles_are_rejected() -> None:
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(TypeError, match=f"^{CYCLE}$"):
        canonical_interrupt_json(looped)
    record: dict[str, object] = {}
    record["self"] = {"inner": record}
    with pytest.raises(TypeError, match=f"^{CYCLE}$"):
        canonical_interrupt_json(record)


def test_digest_requires_text() -> None:
    with pytest.raises(TypeError, match=r"^Interrupt digests require canonical JSON text\.$"):
        digest_interrupt_json({"a": 1})  # type: ignore[arg-type]


def test_digest_hashes_utf8_and_replaces_lone_surrogates_like_text_encoder() -> None:
    assert digest_interrupt_json("abc") == (
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )
    assert digest_interrupt_json("\ud800") == digest_interrupt_json("\ufffd")


def test_js_json_dumps_keeps_insertion_order() -> None:
    assert js_json_dumps({"b": 1.0, "a": [2e-7]}) == '{"b":1,"a":[2e-7]}'


def test_digest_of_canonical_text_equals_digest_of_an_equal_copy() -> None:
    # A digest depends on the text, not on which string object holds it.
    value = {"b": "caf\u00e9 \U0001f680", "a": [1, 2.5, True]}
    text = canonical_interrupt_json(value)
    copy = "".join(list(text))
    assert copy is not text
    assert digest_interrupt_json(text) == digest_interrupt_json(copy)
    other = canonical_interrupt_json({"z": 1})
    assert digest_interrupt_json(text) == digest_interrupt_json(copy)
    assert digest_interrupt_json(other) == digest_interrupt_json('{"z":1}')


def test_js_json_dumps_writes_javascript_numbers() -> None:
    value = {"z": [24.0, -0.0, 1e16, 1e-6, 1e21, None], "a": 2**53}
    assert js_json_dumps(value) == (
        '{"z":[24,0,10000000000000000,0.000001,1e+21,null],"a":9007199254740992}'
    )

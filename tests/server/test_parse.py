"""Reading a request body: orjson's fast path reads exactly what the exact reader reads.

`parse_run_input` takes orjson when it can and the standard library's reader (with its
number hooks) otherwise. The reference here is the exact reader alone, with the depth
measured the plain way: every body must give the same `RunAgentInput` (same values, same
number types) or the same refusal.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from ag_ui.core import RunAgentInput
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from chat_app.interrupts.strict_json import MAX_NESTING
from chat_app.server.app import BadRequest, parse_run_input
from tests.agent.references import assert_same_fields_given, reference_depth

from .test_fuzz import FUZZ, fresh_body, json_values, odd_json_texts


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _finite_int(text: str) -> int:
    _finite(text)
    return int(text)


def _reference(body: bytes) -> RunAgentInput | str:
    """The exact reader: a `RunAgentInput`, or the start of the refusal's message."""
    try:
        data = json.loads(
            body,
            parse_int=_finite_int,
            parse_float=_finite,
            parse_constant=lambda name: _finite("nan"),
        )
    except RecursionError:
        return "Request body is nested too deeply."
    except ValueError:
        return "Request body is not valid JSON"
    if not isinstance(data, dict):
        return "Request body must be a JSON object"
    if reference_depth(data) > MAX_NESTING:
        return "Request body is nested too deeply."
    try:
        return RunAgentInput.model_validate(data)
    except ValidationError:
        return "Invalid AG-UI RunAgentInput: "


def _typed(value: Any) -> Any:
    """`value` with every number tagged by its type (1 and 1.0 compare equal otherwise)."""
    if isinstance(value, dict):
        return {key: _typed(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_typed(child) for child in value]
    if isinstance(value, float) and math.isnan(value):
        return "NaN!"
    return (type(value).__name__, value)


def assert_read_as_reference(body: bytes) -> None:
    expected = _reference(body)
    try:
        got: RunAgentInput | str = parse_run_input(body)
    except BadRequest as error:
        got = str(error)
    if isinstance(expected, str):
        assert isinstance(got, str) and got.startswith(expected), (expected, got)
    else:
        assert isinstance(got, RunAgentInput), got
        assert _typed(got.model_dump(by_alias=True)) == _typed(expected.model_dump(by_alias=True))
        assert_same_fields_given(got, expected)  # what a dump leaves out


def _body_with(value_text: str, pad: int = 0) -> bytes:
    body = {**fresh_body(), "state": "X", "forwardedProps": {"pad": "p" * pad}}
    return json.dumps(body).replace('"X"', value_text, 1).encode()


@FUZZ
@given(json_values, st.sampled_from([0, 70_000]))
def test_any_json_value_reads_as_the_exact_reader_reads_it(value: Any, pad: int) -> None:
    assert_read_as_reference(_body_with(json.dumps(value), pad))


@FUZZ
@given(odd_json_texts(), st.sampled_from(["utf-8", "utf-16"]))
def test_odd_json_texts_read_or_refused_as_the_exact_reader_does(text: str, codec: str) -> None:
    assert_read_as_reference(text.encode(codec, "surrogatepass"))


@pytest.mark.parametrize(
    "number",
    [
        str(2**63 - 1),
        str(2**63),
        str(2**64),
        str(-(2**63) - 1),
        str(10**300),
        "-" + str(2**1000),
        "1" * 4300,
        "1e308",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "1e-400",
        "-0",
        "-0.0",
        "12345678901234567890.5",
    ],
)
def test_numbers_keep_their_exact_value_and_type(number: str) -> None:
    assert_read_as_reference(_body_with(number))
    assert_read_as_reference(_body_with(number, 70_000))


def test_integers_past_64_bits_stay_integers() -> None:
    run_input = parse_run_input(_body_with(f"[{2**64}, {-(10**300)}]"))
    assert run_input.state == [2**64, -(10**300)]
    assert all(type(item) is int for item in run_input.state)


@pytest.mark.parametrize(
    "text",
    ['"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '{"a": 1, "a": 2}', "NaN", "1e999", "9" * 400],
)
def test_texts_orjson_refuses_or_reads_differently(text: str) -> None:
    assert_read_as_reference(_body_with(text))


def test_a_byte_order_mark_and_utf_16_read_as_before() -> None:
    body = json.dumps(fresh_body())
    assert_read_as_reference(b"\xef\xbb\xbf" + body.encode())
    assert_read_as_reference(body.encode("utf-16"))
    assert_read_as_reference(body.encode() + b"\xff")


@pytest.mark.parametrize("opener", ["[", '{"a":'])
@pytest.mark.parametrize("inner", ["", "1"])
@pytest.mark.parametrize("depth", [MAX_NESTING - 3, MAX_NESTING - 2, MAX_NESTING - 1, 500, 1100])
def test_the_nesting_limit_is_exact(opener: str, inner: str, depth: int) -> None:
    closer = "]" if opener == "[" else "}"
    inner = inner if opener == "[" else (inner or "1")
    assert_read_as_reference(_body_with(opener * depth + inner + closer * depth))


# The messages as the one-pass reader (msgspec, straight into views) reads them: odd strings,
# escapes, keys given twice, spellings and extras, in the messages as well as around them.
_ODD_STRINGS = st.text(
    alphabet=st.characters(exclude_categories=["Cs"]) | st.sampled_from('"\\/\u2028\x00é😀'),
    max_size=6,
)


@st.composite
def _message_texts(draw: st.DrawFn) -> str:
    """A JSON text for one message, sometimes with a key given twice (the last one counts)."""
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    pairs: list[tuple[str, Any]] = [("id", draw(_ODD_STRINGS)), ("role", role)]
    if role == "assistant":
        call = {"id": draw(_ODD_STRINGS), "type": "function",
                "function": {"name": draw(_ODD_STRINGS), "arguments": "{}"}}  # fmt: skip
        pairs.append(("toolCalls", [call]))
    else:
        pairs.append(("content", draw(_ODD_STRINGS)))
    if role == "tool":
        pairs.append(("toolCallId", draw(_ODD_STRINGS)))
    optional = st.sampled_from(["name", "encryptedValue", "metadata", "extra", "tool_call_id"])
    for key in draw(st.lists(optional, max_size=2, unique=True)):
        pairs.append((key, draw(st.none() | _ODD_STRINGS | st.just({"k": [1, None]}))))
    if draw(st.booleans()):  # a key again, with another value
        key, _ = draw(st.sampled_from(pairs))
        pairs.insert(0, (key, draw(_ODD_STRINGS | st.integers())))
    ascii_only = draw(st.booleans())
    return (
        "{"
        + ", ".join(
            json.dumps(key) + ": " + json.dumps(value, ensure_ascii=ascii_only)
            for key, value in pairs
        )
        + "}"
    )


@FUZZ
@given(st.lists(_message_texts(), max_size=4), st.sampled_from([0, 70_000]))
def test_messages_read_as_the_exact_reader_reads_them(messages: list[str], pad: int) -> None:
    body = json.dumps({**fresh_body(), "messages": "X", "forwardedProps": {"pad": "p" * pad}})
    text = body.replace('"X"', "[" + ", ".join(messages) + "]", 1).encode()
    assert_read_as_reference(text)


def _answer_body(payload_text: str, *, extra: str = "", state: str = "{}") -> bytes:
    """A continuation body whose one answer's payload is `payload_text`; `extra` adds a
    top-level key the usual shape does not have (the body then goes the long way)."""
    body = {**fresh_body(), "state": "S", "parentRunId": "r0", "resume": [
        {"interruptId": "approval_c1", "status": "resolved", "payload": "P"}]}  # fmt: skip
    text = json.dumps(body).replace('"P"', payload_text, 1).replace('"S"', state, 1)
    return (text[:-1] + f', "{extra}": 1}}' if extra else text).encode()


@pytest.mark.parametrize("extra", ["", "somethingElse"])
def test_an_answer_that_names_a_key_twice_is_refused(extra: str) -> None:
    # Readers keep the last "approved"; a proxy or a log reading the first would see a no.
    with pytest.raises(BadRequest) as refused:
        parse_run_input(_answer_body('{"approved": false, "approved": true}', extra=extra))
    assert str(refused.value) == (
        'Request body is not valid JSON: the key "approved" is given twice.'
    )
    assert parse_run_input(_answer_body('{"approved": true}', extra=extra)).resume
    # Outside the answers a repeated key is read as JavaScript reads it: the last one.
    taken = parse_run_input(_answer_body("true", extra=extra, state='{"a": 1, "a": 2}'))
    assert taken.state == {"a": 2}


@pytest.mark.parametrize("extra", ["", "somethingElse"])
def test_an_answer_with_a_lone_surrogate_is_refused(extra: str) -> None:
    body = _answer_body('{"approved": false, "payload": {"reason": "no \\ud800"}}', extra=extra)
    with pytest.raises(BadRequest) as refused:
        parse_run_input(body)
    assert str(refused.value) == (
        "Request body's resume holds text that is not Unicode (a lone surrogate escape such "
        "as \\ud800)."
    )
    paired = _answer_body('{"approved": false, "payload": {"reason": "ok \\ud83d\\ude00"}}')
    [entry] = parse_run_input(paired).resume or []
    assert entry.payload == {"approved": False, "payload": {"reason": "ok \U0001f600"}}


def test_a_body_read_whole_refuses_a_repeated_key_in_the_answers_only() -> None:
    """A lone surrogate in a message keeps msgspec from reading the body: it is read whole,
    and still only the answers refuse a repeated key."""
    body = _answer_body("true", state='{"a": 1, "a": 2}').replace(b'"go"', b'"go \\ud800"')
    taken = parse_run_input(body)
    assert taken.state == {"a": 2}
    refused = _answer_body('{"approved": false, "approved": true}').replace(
        b'"go"', b'"go \\ud800"'
    )
    with pytest.raises(BadRequest, match='the key "approved" is given twice'):
        parse_run_input(refused)

"""Differential tests: our canonical JSON / digest against ``@tanstack/ai@0.58.0``.

Every input is a JSON *text*.  The Python side parses it with :func:`json.loads`, the Node
side with ``JSON.parse`` (the text crosses the pipe as a JSON string, escaped with
``ensure_ascii=True``), so number parsing, duplicate keys and ``\\u`` escapes are each
resolved by the platform's own parser — exactly as when both ends read the same bytes off
the wire.  Then ``canonical_interrupt_json`` / ``canonicalInterruptJson`` and the digest
must agree byte for byte, or both must raise ``TypeError`` with the same message.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import struct
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chat_app.interrupts as interrupts

pytestmark = pytest.mark.interop

if TYPE_CHECKING:
    from tests.interop.conftest import WireOracle


def batch(max_examples: int) -> settings:
    """Each example carries a small *list* of inputs, so one pipe round trip serves many
    comparisons.  Lists stay short: Hypothesis' generation cost grows sharply once an
    example's choice sequence gets large."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )


# -- the two sides --------------------------------------------------------------------------------


def python_side(text: str) -> dict[str, Any]:
    """What our implementation says about ``text`` (same shape as the oracle's answer)."""
    value = json.loads(text)
    try:
        canonical = interrupts.canonical_interrupt_json(value)
    except TypeError as exc:
        return {"ok": False, "error": {"name": "TypeError", "message": str(exc)}}
    return {
        "ok": True,
        "canonical": canonical,
        "digest": interrupts.digest_interrupt_json(canonical),
    }


def node_side(oracle: WireOracle, texts: list[str]) -> list[dict[str, Any]]:
    answers = oracle.call_many([{"op": "canonical", "text": t} for t in texts])
    out = []
    for answer in answers:
        if answer["ok"]:
            out.append({"ok": True, "canonical": answer["canonical"], "digest": answer["digest"]})
        else:
            out.append({"ok": False, "error": answer["error"]})
    return out


def assert_same(text: str, node: dict[str, Any], py: dict[str, Any]) -> None:
    assert py == node, (
        "canonical JSON differs from @tanstack/ai\n"
        f"  input text : {text!r}\n"
        f"  node       : {node!r}\n"
        f"  python     : {py!r}"
    )


def check_texts(oracle: WireOracle, texts: list[str]) -> None:
    for text, node in zip(texts, node_side(oracle, texts), strict=True):
        assert_same(text, node, python_side(text))


# -- JSON text strategies -------------------------------------------------------------------------

WS = st.sampled_from(["", "", "", " ", "\n", "\t", "\r\n  ", "  "])

#: Raw (unescaped) characters worth mixing into strings and keys.  No `"`, `\\`, C0 controls
#: (JSON forbids them raw) and no surrogates (a raw surrogate cannot arrive in UTF-8).
INTERESTING_RAW = [
    "a",
    "b",
    "z",
    "A",
    "Z",
    "_",
    "-",
    "0",
    "9",
    " ",
    "~",
    "/",
    "\x7f",
    "\x80",
    "\xa0",
    "é",
    "ß",
    "\u0100",
    "\u2028",
    "\u2029",
    "\u200b",
    "\u3042",
    "\ud7ff",
    "\ue000",
    "\ue001",
    "\uf8ff",
    "\ufb01",
    "\ufeff",
    "\ufffd",
    "\ufffe",
    "\uffff",
    "\U00010000",
    "\U0001f600",
    "\U0001f4a9",
    "\U0010fffd",
    "\U0010ffff",
]
RAW_CHAR = st.one_of(
    st.sampled_from(INTERESTING_RAW),
    st.characters(
        min_codepoint=0x20,
        max_codepoint=0x10FFFF,
        exclude_categories=["Cs"],
        exclude_characters='"\\',
    ),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF, exclude_characters='"\\'),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
)


def u_escape(cp: int, upper: bool) -> str:
    digits = f"{cp:04x}"
    return "\\u" + (digits.upper() if upper else digits)


ESCAPE = st.one_of(
    st.sampled_from(['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]),
    # control characters, DEL, U+2028/9, BMP private use / specials
    st.builds(
        u_escape,
        st.one_of(
            st.integers(0, 0x1F),
            st.sampled_from([0x22, 0x5C, 0x2F, 0x7F, 0x2028, 0x2029, 0xFEFF, 0xFFFF, 0xE000]),
            st.integers(0xE000, 0xFFFF),
            st.integers(0x20, 0xD7FF),
        ),
        st.booleans(),
    ),
    # lone surrogates, written as escapes
    st.builds(u_escape, st.integers(0xD800, 0xDFFF), st.booleans()),
    # escaped surrogate pairs (an astral character spelled as two escapes)
    st.builds(
        lambda hi, lo, upper: u_escape(hi, upper) + u_escape(lo, upper),
        st.integers(0xD800, 0xDBFF),
        st.integers(0xDC00, 0xDFFF),
        st.booleans(),
    ),
    # deliberately reversed pair: two lone surrogates
    st.builds(
        lambda hi, lo: u_escape(lo, False) + u_escape(hi, False),
        st.integers(0xD800, 0xDBFF),
        st.integers(0xDC00, 0xDFFF),
    ),
)

STRING_BODY = st.lists(st.one_of(RAW_CHAR, RAW_CHAR, ESCAPE), max_size=8).map("".join)
STRING_LIT = STRING_BODY.map(lambda body: f'"{body}"')
#: Keys are drawn from a small pool too, so sort-order collisions and duplicates happen.
KEY_LIT = st.one_of(
    STRING_LIT,
    st.sampled_from(
        [
            '"a"',
            '"b"',
            '"A"',
            '"Z"',
            '"_"',
            '""',
            '"aa"',
            '"a\\u0000"',
            '"\\ue000"',
            '"\\uffff"',
            '"\\ud83d\\ude00"',
            '"\U0001f600"',
            '"\\ud800"',
            '"\\udc00"',
            '"\\ud800\\udc00"',
            '"\U00010000"',
            '"\\uE000x"',
            '"\U0010ffff"',
            '"\u2028"',
            '"__proto__"',
            '"constructor"',
            '"10"',
            '"9"',
            '"1"',
            '"01"',
            '"-1"',
            '"1.5"',
        ]
    ),
)

INTERESTING_NUMBERS = [
    "0",
    "-0",
    "-0.0",
    "0.0",
    "-0e5",
    "-0E-0",
    "0e0",
    "1",
    "-1",
    "1.0",
    "1e2",
    "1E2",
    "1e+2",
    "100E-2",
    "10.00",
    "0.5e1",
    "1e21",
    "1e20",
    "1e-6",
    "1e-7",
    "0.000001",
    "0.0000001",
    "1.5e-7",
    "123e-20",
    "1e308",
    "1.7976931348623157e308",
    "1.7976931348623158e308",
    "1.7976931348623159e308",
    "1e400",
    "-1e400",
    "1E400",
    "5e-324",
    "4.9e-324",
    "1e-400",
    "-1e-400",
    "2.4703282292062328e-324",
    "2.4703282292062327e-324",
    "9007199254740991",
    "9007199254740992",
    "9007199254740993",
    "-9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    "-18446744073709551617",
    "123456789012345678901234567890",
    "999999999999999999999",
    "100000000000000000000",
    "0.1",
    "0.30000000000000004",
    "0.1000000000000000055511151231257827021181583404541015625",
    "2.2250738585072014e-308",
    "2.225073858507201e-308",
    "123456.789e3",
    "-123.456e-3",
]


def _number_literal(
    neg: bool, int_part: str, frac: str | None, exp: tuple[str, str, str] | None
) -> str:
    text = ("-" if neg else "") + int_part
    if frac is not None:
        text += "." + frac
    if exp is not None:
        text += exp[0] + exp[1] + exp[2]
    return text


GRAMMAR_NUMBER = st.builds(
    _number_literal,
    st.booleans(),
    st.one_of(st.just("0"), st.from_regex(r"[1-9][0-9]{0,25}", fullmatch=True)),
    st.none() | st.from_regex(r"[0-9]{1,20}", fullmatch=True),
    st.none()
    | st.tuples(
        st.sampled_from(["e", "E"]),
        st.sampled_from(["", "+", "-"]),
        st.one_of(
            st.from_regex(r"[0-9]{1,2}", fullmatch=True),
            st.sampled_from(
                ["300", "307", "308", "309", "320", "323", "324", "325", "400", "0000308"]
            ),
        ),
    ),
)

FLOAT_REPR = st.floats(allow_nan=False, allow_infinity=False).map(repr)
BIG_INT = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-(10**400), 10**400),
    st.sampled_from(
        [
            2**53 - 1,
            2**53,
            2**53 + 1,
            2**63,
            2**64,
            2**64 + 1,
            -(2**64),
            10**21,
            10**21 - 1,
            10**308,
            10**309,
        ]
    ),
).map(str)

NUMBER_LIT = st.one_of(st.sampled_from(INTERESTING_NUMBERS), GRAMMAR_NUMBER, FLOAT_REPR, BIG_INT)
SCALAR_LIT = st.one_of(NUMBER_LIT, STRING_LIT, st.sampled_from(["true", "false", "null"]))


def _array(items: list[str], ws: list[str]) -> str:
    w = itertools.cycle(ws)
    return (
        "["
        + next(w)
        + "".join(("," + next(w) if i else "") + item for i, item in enumerate(items))
        + next(w)
        + "]"
    )


def _object(pairs: list[tuple[str, str]], ws: list[str]) -> str:
    w = itertools.cycle(ws)
    members = [
        ("," + next(w) if i else "") + f"{k}{next(w)}:{next(w)}{v}"
        for i, (k, v) in enumerate(pairs)
    ]
    return "{" + next(w) + "".join(members) + next(w) + "}"


def containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    ws = st.lists(WS, min_size=1, max_size=3)
    return st.one_of(
        st.builds(_array, st.lists(children, max_size=5), ws),
        st.builds(_object, st.lists(st.tuples(KEY_LIT, children), max_size=6), ws),
        # guaranteed duplicate key: the same key twice with different values
        st.builds(
            lambda k, a, b, rest, ws: _object([(k, a), *rest, (k, b)], ws),
            KEY_LIT,
            children,
            children,
            st.lists(st.tuples(KEY_LIT, children), max_size=2),
            ws,
        ),
    )


JSON_TEXT = st.recursive(SCALAR_LIT, containers, max_leaves=25)


@st.composite
def deep_text(draw: st.DrawFn) -> str:
    """A single path nested 30–60 deep, each level an array or object with small siblings."""
    depth = draw(st.integers(30, 60))
    text = draw(SCALAR_LIT)
    for _ in range(depth):
        sibling = draw(st.lists(SCALAR_LIT, max_size=1))
        if draw(st.booleans()):
            items = [*sibling, text] if draw(st.booleans()) else [text, *sibling]
            text = "[" + ",".join(items) + "]"
        else:
            key = draw(KEY_LIT)
            pairs = [(key, text)] + [(draw(KEY_LIT), s) for s in sibling]
            if draw(st.booleans()):
                pairs.reverse()
            text = "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"
    return text


@st.composite
def sort_order_object(draw: st.DrawFn) -> str:
    """Objects whose keys mix U+E000–U+FFFF with astral characters and lone surrogates.

    UTF-16 code-unit order (what `Array.prototype.sort` uses) puts every astral character
    (lead unit D800–DBFF) *before* U+E000–U+FFFF; code-point order does the opposite.
    """
    bmp_high = st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF, exclude_characters='"\\')
    astral = st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF)
    lone = st.builds(u_escape, st.integers(0xD800, 0xDFFF), st.booleans())
    piece = st.one_of(bmp_high, astral, lone, st.sampled_from(["a", "", "\\u0000", "z"]))
    keys = draw(
        st.lists(st.lists(piece, min_size=1, max_size=3).map("".join), min_size=2, max_size=8)
    )
    values = draw(st.lists(SCALAR_LIT, min_size=len(keys), max_size=len(keys)))
    return "{" + ",".join(f'"{k}":{v}' for k, v in zip(keys, values, strict=True)) + "}"


# -- property tests -------------------------------------------------------------------------------


@batch(100)
@given(st.lists(JSON_TEXT, min_size=8, max_size=10))
def test_random_json_texts_match_tanstack(wire_oracle: WireOracle, texts: list[str]) -> None:
    check_texts(wire_oracle, texts)


@batch(40)
@given(st.lists(deep_text(), min_size=3, max_size=4))
def test_deeply_nested_texts_match_tanstack(wire_oracle: WireOracle, texts: list[str]) -> None:
    check_texts(wire_oracle, texts)


@batch(60)
@given(st.lists(NUMBER_LIT, min_size=20, max_size=30))
def test_number_literals_match_tanstack(wire_oracle: WireOracle, numbers: list[str]) -> None:
    # Alone, inside an array and as an object value (same formatting path, different callers).
    texts = [
        *numbers,
        "[" + ",".join(numbers) + "]",
        "{" + ",".join(f'"k{i}":{n}' for i, n in enumerate(numbers)) + "}",
    ]
    check_texts(wire_oracle, texts)


@batch(60)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=30, max_size=50))
def test_float_reprs_match_tanstack(wire_oracle: WireOracle, floats: list[float]) -> None:
    check_texts(wire_oracle, [repr(f) for f in floats])


def test_random_doubles_match_tanstack(wire_oracle: WireOracle) -> None:
    # Every bit pattern class of finite doubles, and 15-17 digit decimals: the fast path
    # trusts orjson's shortest digits to be JavaScript's.
    rng = random.Random(20260)
    doubles = [
        struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(3000)
    ]
    doubles += [rng.uniform(-1e17, 1e17) for _ in range(500)]
    doubles += [rng.random() * 10.0 ** rng.randrange(-25, 25) for _ in range(1500)]
    finite = [d for d in doubles if math.isfinite(d)]
    chunks = [finite[i : i + 250] for i in range(0, len(finite), 250)]
    texts = [json.dumps(chunk) for chunk in chunks]
    texts += [json.dumps({f"k{i}": d for i, d in enumerate(chunk)}) for chunk in chunks[:4]]
    check_texts(wire_oracle, texts)


def test_integers_near_two_to_the_53_match_tanstack(wire_oracle: WireOracle) -> None:
    near = [2**53 + d for d in range(-3, 4)]
    ints = [*near, *(-n for n in near), 10**15, 10**16 - 1, 10**16, 2**63 - 1, -(2**63)]
    check_texts(wire_oracle, [json.dumps(ints), *map(str, ints)])


@batch(80)
@given(st.lists(st.one_of(STRING_LIT, sort_order_object()), min_size=10, max_size=15))
def test_strings_and_key_order_match_tanstack(wire_oracle: WireOracle, texts: list[str]) -> None:
    check_texts(wire_oracle, texts)


# -- explicit cases (readable failures) -----------------------------------------------------------


def _nest(depth: int, leaf: str, kind: str) -> str:
    text = leaf
    for i in range(depth):
        if kind == "array" or (kind == "mixed" and i % 2):
            text = f"[{text}]"
        else:
            text = f'{{"k{i % 7}":{text}}}'
    return text


EXPLICIT: list[tuple[str, str]] = [
    # spec vectors
    ("spec-vector-1", '{"z":1,"a":{"value":true}}'),
    (
        "spec-vector-2",
        '{"z":1,"a":{"value":true},"b":[1.5,-0,1e21,1e-7,"\\u00e9\\u0001\\"\\\\/\\u2028"],"Z":null}',
    ),
    (
        "spec-fingerprint",
        '[{"interruptId":"a","status":"resolved","payload":{"z":1,"a":2}},{"interruptId":"b","status":"cancelled"}]',
    ),
    # top-level scalars and empties
    ("true", "true"),
    ("false", "false"),
    ("null", "null"),
    ("empty-string", '""'),
    ("empty-object", "{}"),
    ("empty-array", "[]"),
    ("empty-key", '{"":1}'),
    ("whitespace", ' \n\t{ "b" : [ 1 , 2 ] ,\r\n "a" : { } } \n'),
    # huge / overflowing numbers
    ("1e308", "1e308"),
    ("max-double", "1.7976931348623157e308"),
    ("max-double-rounds-down", "1.7976931348623158e308"),
    ("max-double-rounds-up-to-infinity", "1.7976931348623159e308"),
    ("1e400", "1e400"),
    ("-1e400", "-1e400"),
    ("1E400-in-object", '{"a":1E400}'),
    ("1e400-in-array", "[1,1e400]"),
    ("int-10**308", str(10**308)),
    ("int-10**309-overflows", str(10**309)),
    ("int-max-double-exact", str(int(1.7976931348623157e308))),
    ("int-overflow-midpoint-ties-to-infinity", str(2**1024 - 2**970)),
    ("int-just-below-overflow-midpoint", str(2**1024 - 2**970 - 1)),
    ("int-400-digits", "9" * 400),
    # tiny numbers
    ("5e-324", "5e-324"),
    ("4.9e-324", "4.9e-324"),
    ("half-min-subnormal-up", "2.4703282292062328e-324"),
    ("half-min-subnormal-down", "2.4703282292062327e-324"),
    ("1e-400-underflows", "1e-400"),
    ("-1e-400-underflows", "-1e-400"),
    ("1e-7", "1e-7"),
    ("1e-6", "1e-6"),
    ("0.000001", "0.000001"),
    ("0.0000001", "0.0000001"),
    ("1.5e-7", "1.5e-7"),
    ("1.2345e-6", "1.2345e-6"),
    ("123e-20", "123e-20"),
    ("min-normal", "2.2250738585072014e-308"),
    # negative zero
    ("-0", "-0"),
    ("-0.0", "-0.0"),
    ("-0e5", "-0e5"),
    ("-0E-5", "-0E-5"),
    ("[-0,-0.0]", "[-0,-0.0]"),
    ("neg-zero-value", '{"a":-0.0}'),
    # big integers: doubles in JS, ints in Python
    ("2**53-1", str(2**53 - 1)),
    ("2**53", str(2**53)),
    ("2**53+1", str(2**53 + 1)),
    ("-(2**53+1)", str(-(2**53 + 1))),
    ("2**60", str(2**60)),
    ("2**63", str(2**63)),
    ("2**64-1", str(2**64 - 1)),
    ("2**64", str(2**64)),
    ("-(2**64+1)", str(-(2**64 + 1))),
    ("10**20", str(10**20)),
    ("10**21-1", str(10**21 - 1)),
    ("10**21", str(10**21)),
    ("30-digits", "123456789012345678901234567890"),
    # integers written with fractions / exponents
    ("1.0", "1.0"),
    ("1e2", "1e2"),
    ("100E-2", "100E-2"),
    ("1E+2", "1E+2"),
    ("0.5e1", "0.5e1"),
    ("10.00", "10.00"),
    ("-1.0e0", "-1.0e0"),
    ("1e20-float", "1e20"),
    ("1e21-float", "1e21"),
    ("1.5e21", "1.5e21"),
    ("-1e21", "-1e21"),
    ("1e16", "1e16"),
    ("1.5e300", "1.5e300"),
    # plain floats
    ("0.1", "0.1"),
    ("0.30000000000000004", "0.30000000000000004"),
    ("123.456", "123.456"),
    ("long-mantissa", "0.1000000000000000055511151231257827021181583404541015625"),
    ("many-digits", "3.141592653589793238462643383279"),
    # strings: escapes, controls, separators
    ("controls", '"\\u0000\\u0001\\u0008\\u0009\\u000a\\u000b\\u000c\\u000d\\u001f\\u007f"'),
    ("short-escapes", '"\\b\\f\\n\\r\\t\\"\\\\\\/"'),
    ("upper-hex-escapes", '"\\u001F\\u00E9\\uABCD"'),
    ("u2028-u2029-escaped", '"\\u2028\\u2029"'),
    ("u2028-u2029-raw", '"\u2028\u2029"'),
    ("del-and-latin1", '"\x7f\x80\xa0\xff"'),
    ("bom-and-nonchars", '"\\ufeff\\ufffe\\uffff"'),
    # astral characters and surrogates
    ("astral-raw", '"\U0001f600\U00010000\U0010ffff"'),
    ("astral-escaped-pair", '"\\ud83d\\ude00"'),
    ("lone-high", '"\\ud800"'),
    ("lone-low", '"\\udfff"'),
    ("lone-upper-hex", '"\\uD800\\uDFFF"'),
    ("reversed-pair", '"\\udc00\\ud800"'),
    ("lone-between-ascii", '"a\\ud800b\\udc00c"'),
    ("high-then-ascii-escape", '"\\ud83d\\u0041"'),
    ("high-then-raw-astral", '"\\ud83d\U0001f600"'),
    ("lone-surrogate-keys", '{"\\ud800":1,"\\udc00":2,"\\ud800\\udc00":3,"\\udbff\\udfff":4}'),
    # key ordering: UTF-16 code units, not code points
    ("utf16-vs-codepoint", '{"\\ue000":1,"\\ud83d\\ude00":2}'),
    ("utf16-vs-codepoint-raw", '{"\uffff":1,"\U00010000":2,"\ue000":3,"\U0010ffff":4,"\ufb01":5}'),
    ("ascii-case-order", '{"b":1,"a":2,"B":3,"A":4,"_":5,"~":6,"\\u00e9":7,"":8}'),
    ("prefix-order", '{"ab":1,"a":2,"a\\u0000":3,"a\\u0001":4}'),
    ("numeric-keys", '{"10":1,"9":2,"1":3,"01":4,"-1":5,"1.5":6}'),
    ("proto-key", '{"__proto__":{"b":1,"a":2},"constructor":1,"toString":2}'),
    # duplicate keys: last wins in both parsers
    ("dup-simple", '{"a":1,"b":2,"a":3}'),
    ("dup-objects", '{"a":{"x":1},"a":{"y":2}}'),
    ("dup-nested", '{"o":{"k":1,"k":[1,{"z":0,"z":-0.0}]},"o2":{"k":1}}'),
    ("dup-escaped-spelling", '{"a":1,"\\u0061":2}'),
    ("dup-overflow-replaced", '{"a":1e400,"a":1}'),
    ("dup-overflow-last", '{"a":1,"a":1e400}'),
    # deep nesting
    ("deep-30-arrays", _nest(30, "1", "array")),
    ("deep-40-objects", _nest(40, '"\\ud800"', "object")),
    ("deep-64-mixed", _nest(64, "-0.0", "mixed")),
    ("deep-200-mixed", _nest(200, "1e21", "mixed")),
    ("deep-500-arrays", _nest(500, "null", "array")),
    ("deep-overflow-leaf", _nest(35, "1e400", "mixed")),
    # the fast path's substring searches: look-alikes inside strings and keys, and numbers
    # next to the spellings they look for
    ("dot-zero-in-string", '{"a":"1.0","b":"x.0]","c":".0"}'),
    ("dot-zero-key", '{"1.0":1,".0,":2}'),
    # an escaped quote: the strings cannot be told apart by their quotes alone
    ("dot-zero-after-escaped-quote", r'{"a":1.0,"s":"\"","t":"x.0,"}'),
    ("null-in-string", '{"a":"null","null":"nullnull"}'),
    ("null-value-and-string", '{"a":null,"b":"null","c":[null,1.5]}'),
    ("e-plus-in-string", '{"a":"1e+16","b":"e+20]","c":"C++"}'),
    ("e-minus-six-in-string", '{"a":"1e-6","b":"e-6,","c":"x-6"}'),
    ("minus-six-integers", "[-6,-60,-6e1,-0.6,6e-1]"),
    ("minus-six-exponents", "[1.5e-6,-2e-6,3e-7,-4.25e-6]"),
    ("exponents-near-six", "[1e-60,1e-5,1.5e-6,1e-61,2e-7,1e-16,1e-20]"),
    ("exponents-near-twenty", "[1e15,1e16,1e17,1e19,1e20,1e21,1e22,1e160,1e200,1e+205]"),
    ("integral-floats-mixed", '[24.0,1.5,-0.0,0.0,"24.0",100.0,1e2]'),
    ("integral-float-last", '{"b":[1,2.0],"a":3.0}'),
    ("neg-zero-with-floats", '{"a":-0.0,"b":2.0,"c":"-0.0"}'),
    ("2**53-1-no-float", '{"n":9007199254740991,"m":-9007199254740991}'),
    ("2**53-in-object", '{"n":9007199254740992,"m":-9007199254740993}'),
    ("sixteen-digit-ints", "[1000000000000000,9007199254740990,1234567890123456]"),
    ("long-floats", "[0.30000000000000004,1234567890123456.7,0.1234567890123456,4.35e-5]"),
    ("u2028-with-numbers", '{"\u2028":1.0,"a":"\u2029","b":null}'),
    ("lone-surrogate-with-null", '{"a":"\ud800","b":null,"c":1.0}'),
    ("astral-and-bmp-high-values", '{"a":"\ue000","b":"😀","c":"\uffff𐀀"}'),
    ("astral-key-bmp-high-value", '{"😀":"\ue000","a":1}'),
    ("bmp-high-key-astral-value", '{"\ue000":"😀","a":1}'),
    ("utf16-order-with-null", '{"\uffff":null,"𐀀":2.0}'),
    ("non-bmp-ascii-mix", '{"b":"caf\u00e9 🚀","a":"\u2705"}'),
]


@pytest.mark.parametrize(("name", "text"), EXPLICIT, ids=[name for name, _ in EXPLICIT])
def test_explicit_canonical_case(wire_oracle: WireOracle, name: str, text: str) -> None:
    node = node_side(wire_oracle, [text])[0]
    assert_same(text, node, python_side(text))


def test_overflow_error_message_is_tanstacks(wire_oracle: WireOracle) -> None:
    node = node_side(wire_oracle, ["1e400"])[0]
    assert node == {
        "ok": False,
        "error": {"name": "TypeError", "message": "Interrupt values must be JSON-compatible."},
    }


# Values JSON text cannot express: build the same shape on both sides.
def _cycle_object() -> Any:
    a: dict[str, Any] = {"x": 1}
    a["self"] = a
    return a


def _cycle_array() -> Any:
    a: list[Any] = [1]
    a.append(a)
    return a


def _cycle_deep() -> Any:
    a: dict[str, Any] = {"b": {"c": []}}
    a["b"]["c"].append({"back": a})
    return a


def _shared_object() -> Any:
    s = {"k": [1, 2]}
    return {"a": s, "b": s, "c": [s, s]}


def _shared_array() -> Any:
    s = [{"z": 1, "a": 2}]
    return [s, s, {"s": s}]


SCENARIOS: list[tuple[str, Any]] = [
    ("cycle-object", _cycle_object),
    ("cycle-array", _cycle_array),
    ("cycle-deep", _cycle_deep),
    ("shared-object", _shared_object),
    ("shared-array", _shared_array),
    ("nan", lambda: math.nan),
    ("nan-nested", lambda: {"a": [1, math.nan]}),
    ("infinity", lambda: math.inf),
    ("-infinity", lambda: {"x": -math.inf}),
]


@pytest.mark.parametrize(("name", "build"), SCENARIOS, ids=[name for name, _ in SCENARIOS])
def test_non_json_values_match_tanstack(wire_oracle: WireOracle, name: str, build: Any) -> None:
    answer = wire_oracle.call("canonicalScenario", name=name)
    node = (
        {"ok": True, "canonical": answer["canonical"], "digest": answer["digest"]}
        if answer["ok"]
        else {"ok": False, "error": answer["error"]}
    )
    try:
        canonical = interrupts.canonical_interrupt_json(build())
        py: dict[str, Any] = {
            "ok": True,
            "canonical": canonical,
            "digest": interrupts.digest_interrupt_json(canonical),
        }
    except TypeError as exc:
        py = {"ok": False, "error": {"name": "TypeError", "message": str(exc)}}
    assert py == node, f"scenario {name}: node={node!r} python={py!r}"


DIGEST_TEXTS = [
    "",
    "abc",
    "undefined",
    "null",
    "{}",
    "é",
    "\u2028",
    "\U0001f600",
    "a" * 1000,
    "\x00",
]


@pytest.mark.parametrize("text", DIGEST_TEXTS, ids=[ascii(t)[:20] for t in DIGEST_TEXTS])
def test_digest_of_text_matches_tanstack(wire_oracle: WireOracle, text: str) -> None:
    node = wire_oracle.call("digest", text=text)
    assert node["ok"], node
    assert interrupts.digest_interrupt_json(text) == node["digest"]


def test_digest_known_vectors() -> None:
    assert interrupts.digest_interrupt_json("") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert interrupts.digest_interrupt_json("undefined") == (
        "sha256:eb045d78d273107348b0300c01d29b7552d622abbc6faf81b3ec55359aa9950c"
    )


def test_digest_of_lone_surrogate_text_matches_tanstack(wire_oracle: WireOracle) -> None:
    # Not canonical text (canonical JSON escapes lone surrogates), but digestInterruptJson
    # accepts any string: TextEncoder turns a lone surrogate into U+FFFD before hashing.
    text = "a\ud800b"
    node = wire_oracle.call("digest", text=text)
    assert node["ok"], node
    assert interrupts.digest_interrupt_json(text) == node["digest"]


@pytest.mark.parametrize("value", [None, 1, 1.5, True, ["a"], {"a": 1}, b"abc"], ids=repr)
def test_digest_rejects_non_strings_like_tanstack(wire_oracle: WireOracle, value: Any) -> None:
    node_value = value.decode() if isinstance(value, bytes) else value
    if isinstance(value, bytes):
        node_value = {"bytes": node_value}  # closest JS analogue: a non-string object
    node = wire_oracle.call("digest", text=node_value)
    assert node == {
        "id": node["id"],
        "ok": False,
        "error": {"name": "TypeError", "message": "Interrupt digests require canonical JSON text."},
    }
    with pytest.raises(TypeError) as excinfo:
        interrupts.digest_interrupt_json(value)
    assert str(excinfo.value) == node["error"]["message"]

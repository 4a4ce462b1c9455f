"""Differential tests: binding and continuation helpers against ``@tanstack/ai@0.58.0``.

Descriptors are generated as Python dicts, sent to Node as JSON (``ensure_ascii=True``, so
lone surrogates survive) and handed to the real ``readInterruptBinding`` /
``readUnopenedInterruptBinding`` / ``withInterruptBinding`` / ``withoutInterruptBinding`` /
``genericInterruptContinuationFromDescriptor`` / ``readGenericInterruptContinuation``.
Our results must equal Node's *wire form* (what ``JSON.stringify`` emits: keys whose value
is ``undefined`` vanish) including the key order at every level, because key order is what
makes our wire output byte-identical.

Generated object keys never look like array indices ("0", "12"): JavaScript objects list
such keys first, in numeric order, whatever the insertion order, and that is a property of
the JS object model rather than of TanStack's code (see
``test_with_binding_integer_like_keys_follow_js_object_order``).
"""

from __future__ import annotations

import copy
import math
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import chat_app.interrupts as interrupts

pytestmark = pytest.mark.interop

if TYPE_CHECKING:
    from tests.interop.conftest import WireOracle

BINDING_KEY = "tanstack:interruptBinding"
PAYLOAD_KEY = "tanstack:interruptPayload"
CONTINUATION_KEY = "tanstack:interruptContinuation"


def batch(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )


# -- comparing a Python value with Node's wire form -----------------------------------------------


def _double(x: int | float) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.copysign(math.inf, x)


def wire_diff(py: Any, js: Any, path: str = "$") -> str | None:
    """First difference between our value and Node's JSON value, or ``None``.

    Strict about types (``True`` is not ``1``), dict key order and list length; numbers are
    compared as doubles, because that is all JavaScript has (our serializer prints ``2.0``
    as ``2`` and ``2**64`` as ``18446744073709552000`` too).
    """
    if isinstance(js, bool) or isinstance(py, bool):
        ok = type(py) is bool and type(js) is bool and py == js
    elif js is None:
        ok = py is None
    elif isinstance(js, (int, float)):
        ok = isinstance(py, (int, float)) and _double(py) == _double(js)
    elif isinstance(js, str):
        ok = isinstance(py, str) and py == js
    elif isinstance(js, list):
        if not isinstance(py, list) or len(py) != len(js):
            return f"{path}: python {py!r} != node {js!r}"
        for i, (p, j) in enumerate(zip(py, js, strict=True)):
            diff = wire_diff(p, j, f"{path}[{i}]")
            if diff:
                return diff
        return None
    elif isinstance(js, dict):
        if not isinstance(py, dict):
            return f"{path}: python {py!r} is not an object like node {js!r}"
        if list(py) != list(js):
            return f"{path}: key order/set differs: python {list(py)!r} != node {list(js)!r}"
        for k in js:
            diff = wire_diff(py[k], js[k], f"{path}[{k!r}]")
            if diff:
                return diff
        return None
    else:  # pragma: no cover - json.loads produces nothing else
        raise AssertionError(f"unexpected node value {js!r}")
    return None if ok else f"{path}: python {py!r} != node {js!r}"


def assert_wire_equal(what: str, inputs: Any, py: Any, node_answer: dict[str, Any]) -> None:
    js = node_answer["result"]
    diff = wire_diff(py, js)
    assert diff is None, (
        f"{what} differs from @tanstack/ai: {diff}\n"
        f"  input  : {inputs!r}\n"
        f"  node   : {js!r}\n"
        f"    (keys set to undefined, absent on the wire: {node_answer.get('undefinedKeys')})\n"
        f"  python : {py!r}"
    )


def snapshot(value: Any) -> Any:
    """A deep copy that also remembers key order (dict equality ignores order)."""
    if isinstance(value, dict):
        return ("dict", [(k, snapshot(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [snapshot(v) for v in value])
    return ("scalar", type(value).__name__, copy.copy(value))


def to_wire_or_none(value: Any) -> Any:
    return None if value is None else value.to_wire()


def py_continuation_read(read: Any) -> dict[str, Any]:
    """Our ``ContinuationRead`` in the shape of Node's ``readGenericInterruptContinuation``."""
    if read.status == "absent":
        return {"status": "absent"}
    if read.status == "invalid":
        return {"status": "invalid", "message": read.message}
    return {"status": read.status, "value": read.continuation.to_wire()}


# -- strategies -----------------------------------------------------------------------------------

_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_INDEX_LIKE = re.compile("[0-9]+")


def _split_pairs(text: str) -> str:
    # A high+low surrogate pair stored as two code points is one astral character to
    # JavaScript, so it cannot round-trip; keep lone surrogates lone.
    return _PAIR.sub(lambda m: m.group()[0] + "_" + m.group()[1], text)


TEXT = st.one_of(
    st.text(max_size=10),
    st.lists(
        st.one_of(
            st.characters(),
            st.sampled_from(
                ["\ud800", "\udfff", "\U0001f600", "\ue000", "\uffff", "\u2028", "\x00", '"', "\\"]
            ),
        ),
        max_size=8,
    ).map("".join),
).map(_split_pairs)
NONEMPTY = TEXT.filter(bool)
SAFE_KEY = TEXT.filter(lambda k: not _INDEX_LIKE.fullmatch(k))

JSON_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON_VALUE = st.recursive(
    JSON_SCALAR,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(SAFE_KEY, c, max_size=3),
    max_leaves=6,
)

IDS = st.one_of(
    st.sampled_from(
        [
            "approval_call_1",
            "client_tool_call_2",
            "interrupt-1795967771645-n1ng2f6",
            "g-0",
            "\U0001f600",
            "\ud800x",
            "\u00e9",
        ]
    ),
    NONEMPTY,
)
HASH = st.one_of(
    st.sampled_from(
        [
            "sha256:22f76d9a1c618a3cfaa891208a14f6e5e6ab1be4ff1c38cc8a8cd1e8fd0c0e4e",
            "sha256:ed82fe780755de70bdc8e477ffff9696d7dd16dd9b328a62a9d2d85525ba6b96",
            "x",
        ]
    ),
    st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex()),
    NONEMPTY,
)


def _iso(d: datetime, style: int) -> str:
    if style == 0:
        return d.strftime("%Y-%m-%dT%H:%M:%S") + f".{d.microsecond // 1000:03d}Z"
    if style == 1:
        return d.strftime("%Y-%m-%dT%H:%M:%SZ")
    if style == 2:
        return d.strftime("%Y-%m-%d")
    if style == 3:
        return d.strftime("%Y-%m-%dT%H:%M:%S+02:00")
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}-05:30"


#: ISO strings whose `Date.parse` validity is unambiguous (every engine accepts them).
VALID_EXPIRES = st.builds(
    _iso,
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 12, 31)),
    st.integers(0, 4),
)
#: Strings `Date.parse` unambiguously rejects (NaN in V8 and by the ECMAScript grammar).
INVALID_EXPIRES = st.sampled_from(
    [
        "not a date",
        "",
        "tomorrow",
        "hello",
        "2026-13-01",
        "2026-01-01T25:00:00Z",
        "1e3",
        "Infinity",
        "2026-00-10",
    ]
)
NON_STRING = st.sampled_from([5, 0, None, True, False, [], {}, ["x"], {"a": "b"}, 1.5])
UNKNOWN_FIELD = st.one_of(
    st.sampled_from(["extra", "foo", "note", "tanstack:x", "ttl", "createdAt", "schema"]),
    SAFE_KEY,
)
VALID_INDEX = st.one_of(
    st.integers(0, 50), st.sampled_from([0, 2.0, 0.0, -0.0, 1e3, 2**31, 2**53, 2**64, 1e300])
)
INVALID_INDEX: st.SearchStrategy[Any] = st.sampled_from(
    [-1, -1.0, 1.5, 0.5, -0.5, "0", "1", None, True, False, [], {}, [0], 1e-300, -(2**64)]
)

KINDS = ["tool-approval", "client-tool-execution", "generic-raw", "generic-first-party"]
KNOWN_FIELDS = {
    "v",
    "kind",
    "interruptId",
    "toolName",
    "toolCallId",
    "originalArgs",
    "inputSchemaHash",
    "approvalSchemaHash",
    "outputSchemaHash",
    "responseSchemaHash",
    "expiresAt",
    "definitionId",
    "key",
    "batchIndex",
    "payloadSchemaHash",
    "interruptedRunId",
    "generation",
}


@st.composite
def valid_binding(draw: st.DrawFn, interrupt_id: str, kind: str, opened: bool) -> dict[str, Any]:
    """A binding TanStack accepts, fields in random order, with ignorable noise."""
    fields: dict[str, Any] = {
        "kind": "generic" if kind.startswith("generic") else kind,
        "interruptId": interrupt_id,
    }
    if draw(st.booleans()):
        fields["v"] = draw(st.sampled_from([1, 1.0]))
    if draw(st.booleans()):
        fields["expiresAt"] = draw(VALID_EXPIRES)
    elif draw(st.integers(0, 4)) == 0:
        fields["expiresAt"] = draw(NON_STRING)  # non-string optional: silently ignored
    if kind in ("tool-approval", "client-tool-execution"):
        fields["toolName"] = draw(NONEMPTY)
        fields["toolCallId"] = draw(NONEMPTY)
        fields["responseSchemaHash"] = draw(HASH)
    if kind == "tool-approval":
        if draw(st.integers(0, 5)):
            fields["originalArgs"] = draw(JSON_VALUE)
        fields["inputSchemaHash"] = draw(HASH)
        fields["approvalSchemaHash"] = draw(HASH)
    if kind == "client-tool-execution":
        fields["outputSchemaHash"] = draw(HASH)
    if kind.startswith("generic"):
        choice = draw(st.integers(0, 3))
        if choice == 1:
            fields["responseSchemaHash"] = draw(HASH)
        elif choice == 2:
            fields["responseSchemaHash"] = draw(NON_STRING)  # ignored
    if kind == "generic-first-party":
        fields["definitionId"] = draw(NONEMPTY)
        fields["key"] = draw(NONEMPTY)
        fields["batchIndex"] = draw(VALID_INDEX)
        choice = draw(st.integers(0, 3))
        if choice == 1:
            fields["payloadSchemaHash"] = draw(HASH)
        elif choice == 2:
            fields["payloadSchemaHash"] = draw(NON_STRING.filter(lambda v: v is not None))
    if kind == "generic-raw" and draw(st.integers(0, 3)) == 0:
        # non-string first-party fields are "absent", so the binding stays raw
        for name in draw(
            st.lists(st.sampled_from(["definitionId", "key", "payloadSchemaHash"]), unique=True)
        ):
            fields[name] = draw(NON_STRING.filter(lambda v: v is not None) | st.none())
    if kind in ("tool-approval", "client-tool-execution") and draw(st.integers(0, 3)) == 0:
        # first-party generic fields mean nothing on a tool binding
        fields["definitionId"] = draw(TEXT)
        fields["batchIndex"] = draw(INVALID_INDEX | VALID_INDEX)
    if opened:
        fields["interruptedRunId"] = draw(NONEMPTY)
        fields["generation"] = draw(VALID_INDEX)
    for _ in range(draw(st.integers(0, 2))):
        name = draw(UNKNOWN_FIELD.filter(lambda k: k not in KNOWN_FIELDS))
        fields[name] = draw(JSON_VALUE)
    order = draw(st.permutations(list(fields)))
    return {k: fields[k] for k in order}


def _tool_required(kind: str) -> list[str]:
    base = ["toolName", "toolCallId", "responseSchemaHash"]
    if kind == "tool-approval":
        return [*base, "inputSchemaHash", "approvalSchemaHash"]
    return [*base, "outputSchemaHash"]


@st.composite
def mutate(
    draw: st.DrawFn, descriptor: dict[str, Any], kind: str, opened: bool
) -> tuple[str, dict[str, Any]]:
    """Break the descriptor by one rule of `docs/protocol.md` §2.6; returns (rule, descriptor)."""
    d = copy.deepcopy(descriptor)
    binding = d["metadata"][BINDING_KEY]
    iid = d["id"]
    rules = [
        "metadata-not-object",
        "binding-not-object",
        "interrupt-id-mismatch",
        "interrupt-id-empty",
        "interrupt-id-not-string",
        "interrupt-id-missing",
        "descriptor-id-changed",
        "version",
        "response-hash-empty",
        "expires-unparseable",
        "kind",
    ]
    if kind in ("tool-approval", "client-tool-execution"):
        rules.append("tool-field")
    if kind == "generic-first-party":
        rules.append("first-party-field")
    if kind == "generic-raw":
        rules.append("partial-first-party")
    if opened:
        rules.append("opened-field")
    rule = draw(st.sampled_from(rules))
    value: Any
    if rule == "metadata-not-object":
        value = draw(st.sampled_from([None, "x", 5, True, [], "missing", "binding-list"]))
        if value == "missing":
            del d["metadata"]
        else:
            d["metadata"] = [binding] if value == "binding-list" else value
    elif rule == "binding-not-object":
        value = draw(st.sampled_from([None, "x", 0, False, [], 1.5, "missing", "binding-list"]))
        if value == "missing":
            del d["metadata"][BINDING_KEY]
        else:
            d["metadata"][BINDING_KEY] = [binding] if value == "binding-list" else value
    elif rule == "interrupt-id-mismatch":
        other = draw(NONEMPTY.filter(lambda s: s != iid))
        binding["interruptId"] = other
    elif rule == "interrupt-id-empty":
        binding["interruptId"] = ""
        d["id"] = ""
    elif rule == "interrupt-id-not-string":
        binding["interruptId"] = draw(st.sampled_from([5, None, True, [iid], {"id": iid}]))
    elif rule == "interrupt-id-missing":
        del binding["interruptId"]
    elif rule == "descriptor-id-changed":
        choice = draw(st.sampled_from(["other", "number", "missing", "null"]))
        if choice == "other":
            d["id"] = iid + draw(NONEMPTY)
        elif choice == "number":
            d["id"] = 5
            binding["interruptId"] = "5"
        elif choice == "null":
            d["id"] = None
        else:
            del d["id"]
    elif rule == "version":
        binding["v"] = draw(st.sampled_from([2, "1", 0, None, True, 1.5, [1], -1, 1.0000001]))
    elif rule == "response-hash-empty":
        binding["responseSchemaHash"] = ""
    elif rule == "expires-unparseable":
        binding["expiresAt"] = draw(INVALID_EXPIRES)
    elif rule == "kind":
        value = draw(
            st.sampled_from(
                ["Generic", "tool_approval", "toolApproval", "", None, 5, "client-tool", "missing"]
            )
        )
        if value == "missing":
            del binding["kind"]
        else:
            binding["kind"] = value
    elif rule == "tool-field":
        name = draw(st.sampled_from(_tool_required(kind)))
        value = draw(st.sampled_from(["", 5, None, True, [], "missing"]))
        if value == "missing":
            del binding[name]
        else:
            binding[name] = value
    elif rule == "first-party-field":
        name = draw(st.sampled_from(["definitionId", "key", "batchIndex"]))
        if name == "batchIndex":
            value = draw(INVALID_INDEX | st.just("missing"))
        else:
            value = draw(st.sampled_from(["", 5, None, True, [], "missing"]))
        if value == "missing":
            del binding[name]
        else:
            binding[name] = value
    elif rule == "partial-first-party":
        # any one first-party field present (even null / "") without the full set
        name = draw(st.sampled_from(["definitionId", "key", "batchIndex", "payloadSchemaHash"]))
        if name == "batchIndex":
            binding[name] = draw(VALID_INDEX | st.just(None))
        else:
            binding[name] = draw(HASH | st.just(""))
    elif rule == "opened-field":
        name = draw(st.sampled_from(["interruptedRunId", "generation"]))
        if name == "generation":
            value = draw(INVALID_INDEX | st.just("missing"))
        else:
            value = draw(st.sampled_from(["", 5, None, True, [], "missing"]))
        if value == "missing":
            del binding[name]
        else:
            binding[name] = value
    return rule, d


@st.composite
def descriptor_case(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(label, descriptor): a valid binding of some kind, broken by one rule half the time."""
    kind = draw(st.sampled_from(KINDS))
    opened = draw(st.booleans())
    iid = draw(IDS)
    binding = draw(valid_binding(iid, kind, opened))
    metadata: dict[str, Any] = {BINDING_KEY: binding}
    if draw(st.booleans()):
        metadata[PAYLOAD_KEY] = draw(JSON_VALUE)
    for _ in range(draw(st.integers(0, 2))):
        metadata[draw(SAFE_KEY)] = draw(JSON_VALUE)
    fields: dict[str, Any] = {"id": iid, "reason": draw(TEXT), "metadata": metadata}
    if draw(st.booleans()):
        fields["message"] = draw(TEXT | st.none())
    if draw(st.booleans()):
        fields["expiresAt"] = draw(VALID_EXPIRES | INVALID_EXPIRES)
    if draw(st.booleans()):
        fields["responseSchema"] = draw(JSON_VALUE)
    order = draw(st.permutations(list(fields)))
    descriptor = {k: fields[k] for k in order}
    label = f"valid {kind}{' opened' if opened else ''}"
    if draw(st.booleans()):
        rule, descriptor = draw(mutate(descriptor, kind, opened))
        label = f"{kind}{' opened' if opened else ''} broken by {rule}"
    return label, descriptor


# -- the readers ----------------------------------------------------------------------------------


def check_descriptors(oracle: WireOracle, cases: list[tuple[str, dict[str, Any]]]) -> None:
    requests = []
    for _, descriptor in cases:
        requests += [
            {"op": "readBinding", "descriptor": descriptor},
            {"op": "readUnopenedBinding", "descriptor": descriptor},
            {"op": "continuationFromDescriptor", "descriptor": descriptor},
        ]
    answers = iter(oracle.call_many(requests))
    for label, descriptor in cases:
        before = snapshot(descriptor)
        for what, fn in (
            ("read_interrupt_binding", interrupts.read_interrupt_binding),
            ("read_unopened_interrupt_binding", interrupts.read_unopened_interrupt_binding),
            (
                "generic_continuation_from_descriptor",
                interrupts.generic_continuation_from_descriptor,
            ),
        ):
            answer = next(answers)
            assert_wire_equal(
                f"{what} [{label}]", descriptor, to_wire_or_none(fn(descriptor)), answer
            )
        assert snapshot(descriptor) == before, f"descriptor was mutated [{label}]"


@batch(100)
@given(st.lists(descriptor_case(), min_size=4, max_size=6))
def test_binding_readers_match_tanstack(
    wire_oracle: WireOracle, cases: list[tuple[str, dict[str, Any]]]
) -> None:
    check_descriptors(wire_oracle, cases)


# -- withInterruptBinding / withoutInterruptBinding -----------------------------------------------


@st.composite
def with_binding_case(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    iid = draw(IDS)
    fields: dict[str, Any] = {"id": iid, "reason": draw(TEXT)}
    md_choice = draw(st.sampled_from(["absent", "null", "object", "object-with-binding"]))
    if md_choice == "null":
        fields["metadata"] = None
    elif md_choice.startswith("object"):
        metadata = draw(st.dictionaries(SAFE_KEY, JSON_VALUE, max_size=3))
        if md_choice == "object-with-binding":
            metadata[BINDING_KEY] = draw(JSON_VALUE)
            order = draw(st.permutations(list(metadata)))
            metadata = {k: metadata[k] for k in order}
        fields["metadata"] = metadata
    for _ in range(draw(st.integers(0, 2))):
        fields[draw(SAFE_KEY)] = draw(JSON_VALUE)
    order = draw(st.permutations(list(fields)))
    descriptor = {k: fields[k] for k in order}
    if draw(st.booleans()):
        kind = draw(st.sampled_from(KINDS))
        binding = draw(valid_binding(draw(IDS), kind, draw(st.booleans())))
    else:
        binding = draw(st.dictionaries(SAFE_KEY, JSON_VALUE, max_size=4))
    if draw(st.booleans()):
        binding["v"] = draw(JSON_VALUE)
    if draw(st.booleans()):
        binding["interruptId"] = draw(JSON_VALUE)
    order = draw(st.permutations(list(binding)))
    return descriptor, {k: binding[k] for k in order}


@batch(80)
@given(st.lists(with_binding_case(), min_size=4, max_size=6))
def test_with_and_without_binding_match_tanstack(
    wire_oracle: WireOracle, cases: list[tuple[dict[str, Any], dict[str, Any]]]
) -> None:
    requests = []
    for descriptor, binding in cases:
        requests.append({"op": "withBinding", "descriptor": descriptor, "binding": binding})
        requests.append({"op": "withoutBinding", "descriptor": descriptor})
    answers = iter(wire_oracle.call_many(requests))
    for descriptor, binding in cases:
        before = (snapshot(descriptor), snapshot(binding))
        with_node = next(answers)
        with_py = interrupts.with_interrupt_binding(descriptor, binding)
        assert_wire_equal("with_interrupt_binding", (descriptor, binding), with_py, with_node)
        without_node = next(answers)
        without_py = interrupts.without_interrupt_binding(descriptor)
        assert_wire_equal("without_interrupt_binding", descriptor, without_py, without_node)
        assert (snapshot(descriptor), snapshot(binding)) == before, "inputs were mutated"
        # the result is a new object: editing it must not reach back into the input
        assert with_py is not descriptor
        assert with_py["metadata"] is not descriptor.get("metadata")


# -- readGenericInterruptContinuation -------------------------------------------------------------


@st.composite
def continuation_metadata(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(label, request fields): `metadata` omitted means JavaScript `undefined`."""
    shape = draw(
        st.sampled_from(
            [
                "undefined",
                "null",
                "not-object",
                "no-key",
                "value-not-object",
                "valid",
                "valid",
                "valid",
                "broken",
                "broken",
            ]
        )
    )
    if shape == "undefined":
        return shape, {}
    if shape == "null":
        return shape, {"metadata": None}
    if shape == "not-object":
        return shape, {
            "metadata": draw(
                st.sampled_from([[], ["x"], "x", 0, 5, True, False, [{CONTINUATION_KEY: {}}]])
            )
        }
    others = draw(
        st.dictionaries(SAFE_KEY.filter(lambda k: k != CONTINUATION_KEY), JSON_VALUE, max_size=2)
    )
    if shape == "no-key":
        return shape, {"metadata": others}
    if shape == "value-not-object":
        not_object = draw(st.sampled_from([None, [], ["x"], "x", 0, True]))
        return shape, {"metadata": {**others, CONTINUATION_KEY: not_object}}
    fields: dict[str, Any] = {
        "v": draw(st.sampled_from([1, 1.0])),
        "definitionId": draw(TEXT),  # the reader only checks the type: "" is accepted
        "key": draw(TEXT),
        "batchIndex": draw(VALID_INDEX),
        "reason": draw(TEXT),
        "message": draw(TEXT),
    }
    for name in ("expiresAt", "responseSchemaHash", "payloadSchemaHash"):
        if draw(st.booleans()):
            fields[name] = (
                draw(VALID_EXPIRES if name == "expiresAt" else HASH)
                if draw(st.integers(0, 3))
                else draw(INVALID_EXPIRES | TEXT)
            )
    if draw(st.booleans()):
        fields["payload"] = draw(JSON_VALUE)
    for _ in range(draw(st.integers(0, 2))):
        fields[draw(UNKNOWN_FIELD.filter(lambda k: k not in KNOWN_FIELDS and k != "payload"))] = (
            draw(JSON_VALUE)
        )
    label = "valid"
    if shape == "broken":
        value: Any
        name = draw(
            st.sampled_from(
                [
                    "v",
                    "definitionId",
                    "key",
                    "batchIndex",
                    "reason",
                    "message",
                    "expiresAt",
                    "responseSchemaHash",
                    "payloadSchemaHash",
                ]
            )
        )
        if name == "v":
            value = draw(st.sampled_from([2, "1", 0, None, True, "missing"]))
        elif name == "batchIndex":
            value = draw(INVALID_INDEX | st.just("missing"))
        elif name in ("expiresAt", "responseSchemaHash", "payloadSchemaHash"):
            value = draw(NON_STRING)  # present but not a string (null included)
        else:
            value = draw(st.sampled_from([5, None, True, [], {}, "missing"]))
        if value == "missing":
            fields.pop(name, None)
        else:
            fields[name] = value
        label = f"broken {name}={value!r}"
    order = draw(st.permutations(list(fields)))
    continuation = {k: fields[k] for k in order}
    metadata = {**others, CONTINUATION_KEY: continuation}
    order = draw(st.permutations(list(metadata)))
    return label, {"metadata": {k: metadata[k] for k in order}}


def _py_read_continuation(request: dict[str, Any]) -> dict[str, Any]:
    if "metadata" in request:
        return py_continuation_read(interrupts.read_generic_continuation(request["metadata"]))
    return py_continuation_read(interrupts.read_generic_continuation())


@batch(100)
@given(st.lists(continuation_metadata(), min_size=5, max_size=8))
def test_read_generic_continuation_matches_tanstack(
    wire_oracle: WireOracle, cases: list[tuple[str, dict[str, Any]]]
) -> None:
    answers = wire_oracle.call_many([{"op": "readContinuation", **fields} for _, fields in cases])
    for (label, fields), answer in zip(cases, answers, strict=True):
        before = snapshot(fields)
        assert_wire_equal(
            f"read_generic_continuation [{label}]", fields, _py_read_continuation(fields), answer
        )
        assert snapshot(fields) == before


@batch(30)
@given(st.lists(descriptor_case(), min_size=3, max_size=5))
def test_continuation_round_trip_matches_tanstack(
    wire_oracle: WireOracle, cases: list[tuple[str, dict[str, Any]]]
) -> None:
    """Built from a descriptor, wrapped into resume metadata, read back: same on both sides."""
    built = [interrupts.generic_continuation_from_descriptor(d) for _, d in cases]
    metadatas = [{CONTINUATION_KEY: c.to_wire()} for c in built if c is not None]
    assume(metadatas)
    answers = wire_oracle.call_many([{"op": "readContinuation", "metadata": m} for m in metadatas])
    for metadata, answer in zip(metadatas, answers, strict=True):
        assert_wire_equal(
            "read_generic_continuation(round trip)",
            metadata,
            _py_read_continuation({"metadata": metadata}),
            answer,
        )


# -- explicit cases -------------------------------------------------------------------------------


def _base(kind: str, opened: bool = True) -> dict[str, Any]:
    binding: dict[str, Any] = {
        "v": 1,
        "kind": "generic" if kind.startswith("generic") else kind,
        "interruptId": "i-1",
    }
    if kind == "tool-approval":
        binding |= {
            "toolName": "printTag",
            "toolCallId": "call_1",
            "originalArgs": {"animal": "Luna"},
            "inputSchemaHash": "sha256:in",
            "approvalSchemaHash": "sha256:ap",
            "responseSchemaHash": "sha256:re",
        }
    elif kind == "client-tool-execution":
        binding |= {
            "toolName": "pick",
            "toolCallId": "call_2",
            "outputSchemaHash": "sha256:out",
            "responseSchemaHash": "sha256:re",
        }
    elif kind == "generic-first-party":
        binding |= {
            "responseSchemaHash": "sha256:re",
            "expiresAt": "2099-01-01T00:00:00.000Z",
            "definitionId": "review-plan",
            "key": "initial-plan",
            "batchIndex": 0,
            "payloadSchemaHash": "sha256:pa",
        }
    if opened:
        binding |= {"interruptedRunId": "run-1", "generation": 0}
    return {
        "id": "i-1",
        "reason": "review-required",
        "message": "Review the plan.",
        "expiresAt": "2099-01-01T00:00:00.000Z",
        "metadata": {BINDING_KEY: binding, PAYLOAD_KEY: {"title": "Release plan"}},
    }


def _edit(kind: str, path: list[str], value: Any, opened: bool = True) -> dict[str, Any]:
    d = _base(kind, opened)
    target = d
    for part in path[:-1]:
        target = target[part]
    if value == "<delete>":
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return d


B = ["metadata", BINDING_KEY]
RULE_CASES: list[tuple[str, dict[str, Any]]] = [
    # valid baselines
    *[(f"valid-{k}", _base(k)) for k in KINDS],
    *[(f"valid-unopened-{k}", _base(k, opened=False)) for k in KINDS],
    ("valid-v-missing", _edit("tool-approval", [*B, "v"], "<delete>")),
    ("valid-v-float-1.0", _edit("tool-approval", [*B, "v"], 1.0)),
    ("valid-originalArgs-missing", _edit("tool-approval", [*B, "originalArgs"], "<delete>")),
    ("valid-originalArgs-null", _edit("tool-approval", [*B, "originalArgs"], None)),
    ("valid-generation-float-2.0", _edit("generic-first-party", [*B, "generation"], 2.0)),
    ("valid-generation-negative-zero", _edit("generic-first-party", [*B, "generation"], -0.0)),
    ("valid-generation-2**64", _edit("generic-first-party", [*B, "generation"], 2**64)),
    ("valid-batchIndex-float-3.0", _edit("generic-first-party", [*B, "batchIndex"], 3.0)),
    ("valid-batchIndex-1e300", _edit("generic-first-party", [*B, "batchIndex"], 1e300)),
    ("valid-expiresAt-non-string-ignored", _edit("client-tool-execution", [*B, "expiresAt"], 5)),
    (
        "valid-responseSchemaHash-null-generic",
        _edit("generic-raw", [*B, "responseSchemaHash"], None),
    ),
    (
        "valid-payloadSchemaHash-non-string",
        _edit("generic-first-party", [*B, "payloadSchemaHash"], 7),
    ),
    (
        "valid-payloadSchemaHash-empty-first-party",
        _edit("generic-first-party", [*B, "payloadSchemaHash"], ""),
    ),
    ("valid-definitionId-number-on-raw", _edit("generic-raw", [*B, "definitionId"], 5)),
    ("valid-no-payload-key", _edit("generic-first-party", ["metadata", PAYLOAD_KEY], "<delete>")),
    ("valid-payload-null", _edit("generic-first-party", ["metadata", PAYLOAD_KEY], None)),
    ("valid-message-missing", _edit("generic-first-party", ["message"], "<delete>")),
    ("valid-message-null", _edit("generic-first-party", ["message"], None)),
    ("valid-top-expiresAt-missing", _edit("generic-first-party", ["expiresAt"], "<delete>")),
    ("valid-top-expiresAt-unparseable", _edit("generic-first-party", ["expiresAt"], "not a date")),
    # rule 1: metadata / binding not an object
    ("r1-metadata-missing", _edit("tool-approval", ["metadata"], "<delete>")),
    ("r1-metadata-null", _edit("tool-approval", ["metadata"], None)),
    ("r1-metadata-string", _edit("tool-approval", ["metadata"], "x")),
    ("r1-metadata-array", _edit("tool-approval", ["metadata"], [])),
    ("r1-binding-missing", _edit("tool-approval", B, "<delete>")),
    ("r1-binding-null", _edit("tool-approval", B, None)),
    (
        "r1-binding-array",
        _edit("tool-approval", B, [_base("tool-approval")["metadata"][BINDING_KEY]]),
    ),
    ("r1-binding-string", _edit("tool-approval", B, "binding")),
    ("r1-binding-false", _edit("tool-approval", B, False)),
    # rule 2: interruptId
    ("r2-interruptId-mismatch", _edit("tool-approval", [*B, "interruptId"], "i-2")),
    ("r2-interruptId-empty", _edit("generic-raw", [*B, "interruptId"], "")),
    ("r2-interruptId-number", _edit("generic-raw", [*B, "interruptId"], 1)),
    ("r2-interruptId-missing", _edit("generic-raw", [*B, "interruptId"], "<delete>")),
    ("r2-descriptor-id-missing", _edit("generic-raw", ["id"], "<delete>")),
    ("r2-descriptor-id-number", _edit("generic-raw", ["id"], 1)),
    # rule 3: version
    ("r3-v-2", _edit("tool-approval", [*B, "v"], 2)),
    ("r3-v-string", _edit("tool-approval", [*B, "v"], "1")),
    ("r3-v-true", _edit("tool-approval", [*B, "v"], True)),
    ("r3-v-null", _edit("tool-approval", [*B, "v"], None)),
    ("r3-v-0", _edit("tool-approval", [*B, "v"], 0)),
    # rule 4: responseSchemaHash ""
    *[
        (f"r4-responseSchemaHash-empty-{k}", _edit(k, [*B, "responseSchemaHash"], ""))
        for k in KINDS
    ],
    # rule 5: expiresAt
    ("r5-expiresAt-not-a-date", _edit("generic-first-party", [*B, "expiresAt"], "not a date")),
    ("r5-expiresAt-empty", _edit("client-tool-execution", [*B, "expiresAt"], "")),
    ("r5-expiresAt-month-13", _edit("tool-approval", [*B, "expiresAt"], "2026-13-01")),
    # rule 6: first-party fields
    ("r6-definitionId-empty", _edit("generic-first-party", [*B, "definitionId"], "")),
    ("r6-definitionId-number", _edit("generic-first-party", [*B, "definitionId"], 5)),
    ("r6-key-missing", _edit("generic-first-party", [*B, "key"], "<delete>")),
    ("r6-batchIndex-negative", _edit("generic-first-party", [*B, "batchIndex"], -1)),
    ("r6-batchIndex-fraction", _edit("generic-first-party", [*B, "batchIndex"], 1.5)),
    ("r6-batchIndex-string", _edit("generic-first-party", [*B, "batchIndex"], "0")),
    ("r6-batchIndex-null", _edit("generic-first-party", [*B, "batchIndex"], None)),
    ("r6-batchIndex-true", _edit("generic-first-party", [*B, "batchIndex"], True)),
    ("r6-batchIndex-missing", _edit("generic-first-party", [*B, "batchIndex"], "<delete>")),
    ("r6-raw-with-only-batchIndex-null", _edit("generic-raw", [*B, "batchIndex"], None)),
    (
        "r6-raw-with-only-payloadSchemaHash",
        _edit("generic-raw", [*B, "payloadSchemaHash"], "sha256:pa"),
    ),
    (
        "r6-raw-with-only-payloadSchemaHash-empty",
        _edit("generic-raw", [*B, "payloadSchemaHash"], ""),
    ),
    # rule 7: tool fields
    *[
        (f"r7-{k}-{field}-{label}", _edit(k, [*B, field], value))
        for k in ("tool-approval", "client-tool-execution")
        for field in _tool_required(k)
        for label, value in (("missing", "<delete>"), ("empty", ""), ("number", 5))
    ],
    # rule 8: kind
    ("r8-kind-unknown", _edit("tool-approval", [*B, "kind"], "tool_approval")),
    ("r8-kind-missing", _edit("tool-approval", [*B, "kind"], "<delete>")),
    ("r8-kind-null", _edit("client-tool-execution", [*B, "kind"], None)),
    ("r8-kind-generic-uppercase", _edit("generic-raw", [*B, "kind"], "Generic")),
    # opened-only fields
    (
        "opened-interruptedRunId-missing",
        _edit("tool-approval", [*B, "interruptedRunId"], "<delete>"),
    ),
    ("opened-interruptedRunId-empty", _edit("tool-approval", [*B, "interruptedRunId"], "")),
    ("opened-interruptedRunId-number", _edit("tool-approval", [*B, "interruptedRunId"], 7)),
    ("opened-generation-negative", _edit("generic-first-party", [*B, "generation"], -1)),
    ("opened-generation-fraction", _edit("generic-first-party", [*B, "generation"], 0.5)),
    ("opened-generation-string", _edit("generic-first-party", [*B, "generation"], "0")),
    ("opened-generation-true", _edit("generic-first-party", [*B, "generation"], True)),
    ("opened-generation-null", _edit("generic-first-party", [*B, "generation"], None)),
    ("opened-generation-missing", _edit("generic-first-party", [*B, "generation"], "<delete>")),
]


@pytest.mark.parametrize(("name", "descriptor"), RULE_CASES, ids=[n for n, _ in RULE_CASES])
def test_explicit_binding_rule(
    wire_oracle: WireOracle, name: str, descriptor: dict[str, Any]
) -> None:
    check_descriptors(wire_oracle, [(name, descriptor)])


def test_explicit_rule_expectations(wire_oracle: WireOracle) -> None:
    """Pin what TanStack itself says for the labelled cases (guards the labels, not Python)."""
    requests = []
    for _, d in RULE_CASES:
        requests += [
            {"op": "readBinding", "descriptor": d},
            {"op": "readUnopenedBinding", "descriptor": d},
        ]
    answers = iter(wire_oracle.call_many(requests))
    for name, _ in RULE_CASES:
        opened, unopened = next(answers)["result"], next(answers)["result"]
        expect_unopened = name.startswith(("valid", "opened-"))
        expect_opened = name.startswith("valid") and not name.startswith("valid-unopened")
        assert (unopened is not None, opened is not None) == (expect_unopened, expect_opened), name


# Strings whose Date.parse verdict is not obvious.  V8 (Node 20) says, with TZ=UTC:
#   valid: "2026-02-30" (-> Mar 2), "2026-02-31", "2026-04-31", "2026-01-01T24:00:00Z",
#          "2026", "2026-01", "2026-001", "1", "0", "12", "99", "-1", "z 1", "foo 2026",
#          "Sat 2026", "May 5", "March 7, 2026", "03/07/2026", "2026/03/07",
#          "2026-01-01 00:00:00", "2026-01-01t00:00:00z", " 2026-01-01",
#          "2026-01-01T00:00:00.1234567Z", "2026-01-01T00:00Z", "2026-1-1",
#          "(comment) 2026-01-01", "Tue, 01 Jan 2026 00:00:00 GMT", "+275760-09-13T00:00:00.000Z"
#   NaN:   "2026-13-01", "2026-02-32", "2026-00-10", "2026-01-00", "2026-01-01T24:00:01Z",
#          "2026-01-01T23:59:60Z", "2026-01-01T00Z", "20260101", "2026 foo", "13/07/2026",
#          "-000000-01-01T00:00:00Z", "+275760-09-13T00:00:00.001Z", "2026-01-01T00:00:00+25:00",
#          "2026-01-01T12:00:00 UTC", "1e3", "0x10", "Infinity", "May", "12:00"
# The test asks Node each time (op dateParse) and prints the verdict on failure.
TRICKY_EXPIRES = [
    # ISO-shaped, calendar edge cases
    "2026-13-01",
    "2026-02-30",
    "2026-02-31",
    "2026-02-32",
    "2026-04-31",
    "2026-00-10",
    "2026-01-00",
    "2026-02-29",
    "2024-02-29",
    "2026-01-01T24:00:00Z",
    "2026-01-01T24:00:01Z",
    "2026-01-01T23:59:60Z",
    "2026-01-01T25:00:00Z",
    "2026-01-01T00:60:00Z",
    # ISO-shaped, format variants
    "2026",
    "2026-01",
    "2026-01-01",
    "2026-01-01T00:00Z",
    "2026-01-01T00Z",
    "2026-01-01T00:00:00.1234567Z",
    "2026-01-01T00:00:00+23:59",
    "2026-01-01T00:00:00+25:00",
    "2026-01-01T00:00:00.000+0000",
    "2026-01-01 00:00:00",
    "2026-01-01t00:00:00z",
    " 2026-01-01",
    "2026-01-01 ",
    "2026-1-1",
    "20260101",
    "2026-W01",
    "2026-001",
    "+002026-01-01T00:00:00Z",
    "-000000-01-01T00:00:00Z",
    "+275760-09-13T00:00:00.000Z",
    "+275760-09-13T00:00:00.001Z",
    "-271821-04-20T00:00:00.000Z",
    "-271821-04-19T23:59:59.999Z",
    "2026-01-01T00:00:00",
    "2026-01-01T00:00:00.000Z\u0000",
    # V8 legacy fallback parser
    "1",
    "0",
    "12",
    "32",
    "99",
    "100",
    "-1",
    "z 1",
    "foo 2026",
    "2026 foo",
    "Sat 2026",
    "May",
    "May 5",
    "March 7, 2026",
    "Mar 7 2026",
    "7 March 2026",
    "2026/03/07",
    "03/07/2026",
    "13/07/2026",
    "Tue, 01 Jan 2026 00:00:00 GMT",
    "Thu Jan 01 1970 00:00:00 GMT+0000",
    "Jan 1 2026 10:00 AM",
    "(comment) 2026-01-01",
    "2026-01-01 (comment)",
    "2026-01-01T12:00:00 UTC",
    "12:00",
    # what Python and JavaScript producers actually write
    "2026-01-01T00:00:00+00:00",
    "2026-01-01T00:00:00.123456+00:00",
    "2026-01-01T00:00:00.123456",
    "2026-01-01 00:00:00.123456+00:00",
    "2026-01-01 00:00:00+00:00",
    "Thu, 01 Jan 2026 00:00:00 +0000",
    "Thu, 01 Jan 2026 00:00:00 -0000",
    "Thu, 01 Jan 2026 00:00:00 GMT",
    "Thu Jan 01 2026 00:00:00 GMT+0000 (Coordinated Universal Time)",
    "2026-01-01T00:00:00.000Z",
    # plainly invalid
    "not a date",
    "",
    "tomorrow",
    "1e3",
    "0x10",
    "Infinity",
    "\uff11\uff19\uff17\uff10",
]


@pytest.mark.parametrize("expires_at", TRICKY_EXPIRES, ids=[ascii(s) for s in TRICKY_EXPIRES])
def test_expires_at_date_parse_edge_cases(wire_oracle: WireOracle, expires_at: str) -> None:
    descriptor = _edit("generic-first-party", [*B, "expiresAt"], expires_at)
    verdict = wire_oracle.call("dateParse", text=expires_at)
    node = wire_oracle.call("readUnopenedBinding", descriptor=descriptor)
    py = to_wire_or_none(interrupts.read_unopened_interrupt_binding(descriptor))
    js_verdict = "accepted" if node["result"] is not None else "rejected (not ours)"
    py_verdict = "accepted" if py is not None else "rejected (not ours)"
    assert py_verdict == js_verdict, (
        f"binding with expiresAt={expires_at!r}: TanStack {js_verdict} "
        f"(Date.parse -> {verdict['result'] if verdict['finite'] else 'NaN'}), Python {py_verdict}"
    )
    assert_wire_equal(
        f"read_unopened_interrupt_binding (expiresAt={expires_at!r})", descriptor, py, node
    )


# Descriptors outside the AG-UI shape: what TanStack's spreads and `??` do with them.
EDGE_WITH_BINDING: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "descriptor-without-id",
        {"reason": "r", "metadata": {}},
        {"kind": "generic", "interruptId": "x"},
    ),
    ("descriptor-id-null", {"id": None, "reason": "r"}, {"kind": "generic"}),
    ("metadata-null", {"id": "a", "metadata": None}, {"kind": "generic"}),
    ("metadata-number", {"id": "a", "metadata": 5}, {"kind": "generic"}),
    ("metadata-true", {"id": "a", "metadata": True}, {"kind": "generic"}),
    ("metadata-string", {"id": "a", "metadata": "ab"}, {"kind": "generic"}),
    ("metadata-array", {"id": "a", "metadata": ["x", {"y": 1}]}, {"kind": "generic"}),
    ("binding-v-first", {"id": "a"}, {"v": 7, "kind": "generic", "interruptId": "zzz"}),
    ("binding-empty", {"id": "a", "metadata": {"keep": 1}}, {}),
    (
        "metadata-before-id",
        {"metadata": {"k": 1, BINDING_KEY: {"old": True}}, "id": "a"},
        {"kind": "generic"},
    ),
]


@pytest.mark.parametrize(
    ("name", "descriptor", "binding"), EDGE_WITH_BINDING, ids=[n for n, _, _ in EDGE_WITH_BINDING]
)
def test_with_binding_edge_cases(
    wire_oracle: WireOracle, name: str, descriptor: dict[str, Any], binding: dict[str, Any]
) -> None:
    before = (snapshot(descriptor), snapshot(binding))
    node = wire_oracle.call("withBinding", descriptor=descriptor, binding=binding)
    py = interrupts.with_interrupt_binding(descriptor, binding)
    assert_wire_equal(f"with_interrupt_binding [{name}]", (descriptor, binding), py, node)
    assert (snapshot(descriptor), snapshot(binding)) == before


def test_with_binding_integer_like_keys_follow_js_object_order(wire_oracle: WireOracle) -> None:
    """JS objects list array-index keys first, ascending; that reorders any such metadata.

    This pins Node's behaviour and checks our *content*; the order difference is inherent to
    the JavaScript object model (JSON.parse already reorders), so it is not asserted on us.
    """
    descriptor = {"id": "a", "metadata": {"b": 1, "10": 2, "2": 3, "a": 4}}
    node = wire_oracle.call("withBinding", descriptor=descriptor, binding={"kind": "generic"})
    assert list(node["result"]["metadata"]) == ["2", "10", "b", "a", BINDING_KEY]
    py = interrupts.with_interrupt_binding(descriptor, {"kind": "generic"})
    assert py["metadata"] == node["result"]["metadata"]


EDGE_CONTINUATION: list[tuple[str, dict[str, Any]]] = [
    ("reason-missing", _edit("generic-first-party", ["reason"], "<delete>")),
    ("reason-null", _edit("generic-first-party", ["reason"], None)),
    ("reason-number", _edit("generic-first-party", ["reason"], 5)),
    ("message-number", _edit("generic-first-party", ["message"], 5)),
    ("message-false", _edit("generic-first-party", ["message"], False)),
    ("expiresAt-null", _edit("generic-first-party", ["expiresAt"], None)),
    ("expiresAt-number", _edit("generic-first-party", ["expiresAt"], 1767225600000)),
    (
        "metadata-payload-object",
        _edit("generic-first-party", ["metadata", PAYLOAD_KEY], {"z": 1, "a": [None]}),
    ),
]


@pytest.mark.parametrize(
    ("name", "descriptor"), EDGE_CONTINUATION, ids=[n for n, _ in EDGE_CONTINUATION]
)
def test_continuation_from_descriptor_edge_cases(
    wire_oracle: WireOracle, name: str, descriptor: dict[str, Any]
) -> None:
    check_descriptors(wire_oracle, [(name, descriptor)])


def _continuation(**overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "v": 1,
        "definitionId": "review-plan",
        "key": "initial-plan",
        "batchIndex": 0,
        "reason": "review-required",
        "message": "Review the proposed plan.",
        "expiresAt": "2099-01-01T00:00:00.000Z",
        "responseSchemaHash": "sha256:re",
        "payloadSchemaHash": "sha256:pa",
        "payload": {"title": "Release plan"},
    }
    for k, v in overrides.items():
        if v == "<delete>":
            value.pop(k, None)
        else:
            value[k] = v
    return {CONTINUATION_KEY: value}


EDGE_READ_CONTINUATION: list[tuple[str, dict[str, Any]]] = [
    ("undefined", {}),
    ("null", {"metadata": None}),
    ("array", {"metadata": []}),
    ("empty-object", {"metadata": {}}),
    ("key-null", {"metadata": {CONTINUATION_KEY: None}}),
    ("key-array", {"metadata": {CONTINUATION_KEY: []}}),
    ("observed-example", {"metadata": _continuation()}),
    (
        "minimal",
        {
            "metadata": _continuation(
                expiresAt="<delete>",
                responseSchemaHash="<delete>",
                payloadSchemaHash="<delete>",
                payload="<delete>",
            )
        },
    ),
    ("payload-null", {"metadata": _continuation(payload=None)}),
    (
        "empty-strings-ok",
        {"metadata": _continuation(definitionId="", key="", reason="", message="")},
    ),
    ("batchIndex-2.0", {"metadata": _continuation(batchIndex=2.0)}),
    ("batchIndex-negative-zero", {"metadata": _continuation(batchIndex=-0.0)}),
    ("v-1.0", {"metadata": _continuation(v=1.0)}),
    ("v-true", {"metadata": _continuation(v=True)}),
    ("v-missing", {"metadata": _continuation(v="<delete>")}),
    ("v-2", {"metadata": _continuation(v=2)}),
    ("batchIndex-true", {"metadata": _continuation(batchIndex=True)}),
    ("batchIndex-negative", {"metadata": _continuation(batchIndex=-1)}),
    ("batchIndex-string", {"metadata": _continuation(batchIndex="0")}),
    ("message-missing", {"metadata": _continuation(message="<delete>")}),
    ("expiresAt-null", {"metadata": _continuation(expiresAt=None)}),
    ("responseSchemaHash-number", {"metadata": _continuation(responseSchemaHash=1)}),
    ("payloadSchemaHash-null", {"metadata": _continuation(payloadSchemaHash=None)}),
    ("expiresAt-unparseable-is-fine-here", {"metadata": _continuation(expiresAt="not a date")}),
]


@pytest.mark.parametrize(
    ("name", "fields"), EDGE_READ_CONTINUATION, ids=[n for n, _ in EDGE_READ_CONTINUATION]
)
def test_read_continuation_edge_cases(
    wire_oracle: WireOracle, name: str, fields: dict[str, Any]
) -> None:
    node = wire_oracle.call("readContinuation", **fields)
    assert_wire_equal(
        f"read_generic_continuation [{name}]", fields, _py_read_continuation(fields), node
    )


# -- the Date.parse emulation behind expiresAt ----------------------------------------------------


def _iso_like(year: int, month: int, day: int, time: str, zone: str, extended: bool) -> str:
    y = (
        f"{'+' if year >= 0 else '-'}{abs(year):06d}"
        if extended or not 0 <= year <= 9999
        else f"{year:04d}"
    )
    return f"{y}-{month:02d}-{day:02d}{time}{zone}"


#: ECMAScript date-time strings (the grammar every engine implements), including calendar
#: overflows (day 31 in any month), 24:00, extended and negative years, and the ±8.64e15 ms
#: limits.  Date-times without a zone are local time in JS; the oracle runs with TZ=UTC.
ISO_LIKE = st.builds(
    _iso_like,
    st.one_of(
        st.integers(1970, 2100),
        st.integers(-300000, 300000),
        st.sampled_from([0, -1, 275760, -271821, 10000]),
    ),
    st.integers(0, 13),
    st.integers(0, 32),
    st.one_of(
        st.just(""),
        st.builds(
            lambda h, m, s, f: (
                f"T{h:02d}:{m:02d}"
                + (f":{s:02d}" if s is not None else "")
                + (f".{f}" if f and s is not None else "")
            ),
            st.integers(0, 25),
            st.integers(0, 60),
            st.none() | st.integers(0, 60),
            st.none() | st.from_regex(r"[0-9]{1,9}", fullmatch=True),
        ),
    ),
    st.sampled_from(
        ["", "Z", "+00:00", "-00:00", "+02:00", "-05:30", "+23:59", "+24:00", "-12:60"]
    ),
    st.booleans(),
)


@batch(50)
@given(st.lists(ISO_LIKE, min_size=8, max_size=12))
def test_parse_js_date_matches_date_parse_on_iso_strings(
    wire_oracle: WireOracle, texts: list[str]
) -> None:
    answers = wire_oracle.call_many([{"op": "dateParse", "text": t} for t in texts])
    for text, answer in zip(texts, answers, strict=True):
        node = answer["result"] if answer["finite"] else None
        py = interrupts.parse_js_date(text)
        assert py == node, f"parse_js_date({text!r}) = {py!r}, Date.parse = {node!r}"

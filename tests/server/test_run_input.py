"""`read_run_input`: the same verdict as `RunAgentInput.model_validate`, the same messages.

The messages are checked by msgspec views derived from `ag_ui`'s schema and built only when
read. The reference is `ag_ui` itself: for every body, both accept or both refuse with the
same error text, the messages read back equal the models, and the views the engine scans
have the models' attribute values.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import msgspec
import pytest
from ag_ui.core import RunAgentInput
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from chat_app.agent.history import tool_calls, tool_result_positions
from chat_app.agent.messages import History
from chat_app.interrupts import message_views as _views
from chat_app.interrupts.strict_json import MAX_NESTING, too_deep
from chat_app.server import run_input
from chat_app.server.run_input import (
    KeptRunInputReader,
    TooDeep,
    read_run_input,
    read_run_input_json,
)
from tests.agent.references import assert_same_fields_given
from tests.fixtures.loader import load_fixture


def _verdict(read: Any, data: dict[str, Any]) -> RunAgentInput | str:
    try:
        return read(data)  # type: ignore[no-any-return]
    except (ValidationError, TooDeep) as error:
        return f"{type(error).__name__}: {error}"


def _reference(data: dict[str, Any], depth_limit: int | None) -> RunAgentInput:
    """What the server did before: the depth measured on the whole body, then pydantic."""
    if depth_limit is not None and too_deep(data, depth_limit):
        raise TooDeep(f"The request nests deeper than {depth_limit} levels.")
    return RunAgentInput.model_validate(data)


def _body(messages: Any, **extra: Any) -> dict[str, Any]:
    return {"threadId": "t", "runId": "r", "state": {}, "messages": messages, "tools": [],
            "context": [], "forwardedProps": {}, **extra}  # fmt: skip


def _agree(data: dict[str, Any], depth_limit: int | None = None) -> RunAgentInput | str:
    """Every reader on `data` (the one-pass reader on its JSON text, the kept reader twice:
    the second time from what it kept); asserts they agree with the reference, returns the
    verdict."""
    expected = _verdict(partial(_reference, depth_limit=depth_limit), data)
    got = _verdict(partial(read_run_input, depth_limit=depth_limit), data)
    text = json.dumps(data).encode()
    fast = read_run_input_json(text, depth_limit=depth_limit or MAX_NESTING)
    kept_reader = KeptRunInputReader(depth_limit=depth_limit)
    kept = [_verdict(kept_reader, data) for _ in range(2)]
    if isinstance(expected, str):
        assert got == expected
        assert kept == [expected, expected]
        assert fast is None  # it never refuses: it leaves the body to the long way
        return expected
    assert isinstance(got, RunAgentInput)
    _assert_same(got, expected)
    if fast is not None:
        _assert_same(fast, expected)
    for again in kept:
        assert isinstance(again, RunAgentInput)
        _assert_same(again, expected)
    return got


def _assert_same(got: RunAgentInput, expected: RunAgentInput) -> None:
    # The views the engine scans, before anything is built, then the messages themselves.
    if isinstance(got.messages, History):
        for view, model in zip(got.messages.views(), expected.messages, strict=True):
            assert _same(view, model)
        assert tool_calls(got.messages) == tool_calls(expected.messages)
        assert tool_result_positions(got.messages) == tool_result_positions(expected.messages)
    assert list(got.messages) == expected.messages
    assert_same_fields_given(got, expected)
    others = [name for name in RunAgentInput.model_fields if name != "messages"]
    assert [getattr(got, name) for name in others] == [getattr(expected, name) for name in others]
    assert got.model_dump_json(by_alias=True) == expected.model_dump_json(by_alias=True)


def _same(view: Any, model: Any) -> bool:
    """Whether a view says what the model holds: its tag, and each field it was given (a field
    left out is UNSET in the view, and the model holds its default)."""
    if isinstance(view, list):
        return len(view) == len(model) and all(map(_same, view, model))
    if not isinstance(view, msgspec.Struct):
        return bool(view == model)
    config = view.__struct_config__
    if config.tag_field and getattr(model, config.tag_field) != config.tag:
        return False
    return all(
        _same(getattr(view, name), getattr(model, name))
        for name in view.__struct_fields__
        if not name.endswith("__by_name") and getattr(view, name) is not msgspec.UNSET
    )


def test_the_fast_path_is_on_for_the_installed_ag_ui() -> None:
    # Off would be safe (every body validated the ordinary way) but slow: a newer `ag_ui`
    # whose schema holds something the views cannot say must be looked at.
    assert _views.LENIENT is not None and _views.SHALLOW is not None
    got = read_run_input(_body([{"id": "u", "role": "user", "content": "hi"}]))
    assert isinstance(got.messages, History)


_CALL: dict[str, Any] = {
    "id": "c1",
    "type": "function",
    "function": {"name": "pay", "arguments": "{}"},
}

EXAMPLES: list[Any] = [
    [],
    [{"id": "u", "role": "user", "content": "hi"}],
    [{"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}]}],
    [{"id": "u", "role": "user", "content": [
        {"type": "image", "source": {"type": "url", "value": "https://x/y.png"}}]}],
    [{"id": "a", "role": "assistant", "toolCalls": [_CALL]}],
    [{"id": "a", "role": "assistant", "tool_calls": [_CALL], "content": None}],
    [{"id": "a", "role": "assistant",
      "toolCalls": [{**_CALL, "metadata": {"providerExecuted": True}}]}],
    [{"id": "t", "role": "tool", "toolCallId": "c1", "content": "ok", "error": "boom"}],
    [{"id": "t", "role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "x"}]}],
    # Both spellings at once: the alias wins, the other is kept as an extra field.
    [{"id": "t", "role": "tool", "toolCallId": "a", "tool_call_id": "b", "content": "x"}],
    [{"id": "s", "role": "system", "content": "brief", "name": "ops", "x": [1, {"k": None}]}],
    [{"id": "d", "role": "developer", "content": "x", "encryptedValue": "e"}],
    [{"id": "v", "role": "activity", "activityType": "search", "content": {"q": 1}}],
    [{"id": "r", "role": "reasoning", "content": "thinking"}],
    [{"id": "a", "role": "assistant", "toolCalls": [{**_CALL, "extra": True,
        "function": {**_CALL["function"], "more": 1}}]}],
    # Refused ones.
    [{"id": 1, "role": "user", "content": "hi"}],
    [{"role": "user", "content": "hi"}],
    [{"id": "u", "content": "hi"}],
    [{"id": "u", "role": "robot", "content": "hi"}],
    [{"id": "u", "role": "user", "content": 5}],
    [{"id": "u", "role": "user", "content": None}],
    [{"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "type": "function"}]}],
    [{"id": "a", "role": "assistant", "toolCalls": [{**_CALL, "type": "other"}]}],
    [{"id": "a", "role": "assistant", "toolCalls": {"id": "c"}}],
    [{"id": "t", "role": "tool", "content": "x"}],
    [{"id": "u", "role": "user", "content": [{"type": "nope"}]}],
    [{"id": "u", "role": "user", "content": "x", "metadata": []}],
    [{"id": "ok", "role": "user", "content": "x"}, "not a message"],
    {"id": "u"},
    "messages",
    None,
]  # fmt: skip


def test_every_example_gets_the_same_verdict() -> None:
    verdicts = [_agree(_body(messages)) for messages in EXAMPLES]
    assert sum(isinstance(v, str) for v in verdicts) == 16  # the refused half really refused


def test_a_bad_field_outside_the_messages_is_refused_in_pydantic_words() -> None:
    for extra in ({"threadId": 3}, {"resume": [{"interruptId": "i"}]}, {"runId": None}):
        data = _body([{"id": "u", "role": "user", "content": "x"}], **extra)
        assert isinstance(_agree(data), str)
    data = _body([])
    del data["messages"]
    assert "messages" in str(_agree(data))


_KEYS = ["id", "role", "content", "toolCalls", "tool_calls", "toolCallId", "tool_call_id",
         "error", "name", "encryptedValue", "metadata", "subagentRunId", "activityType",
         "x"]  # fmt: skip
_ROLES = ["user", "assistant", "tool", "system", "developer", "activity", "reasoning", "robot"]
_VALUES: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["s", "", None, True, 0, 1.5, [], {}, {"providerExecuted": True}]),
    st.just([{"type": "text", "text": "t"}]),
    st.just([{"type": "text"}]),
    st.lists(
        st.fixed_dictionaries(
            {"id": st.sampled_from(["c1", 2]), "type": st.sampled_from(["function", "x"]),
             "function": st.sampled_from([{"name": "f", "arguments": "{}"}, {"name": "f"}, "f"])},
            optional={"metadata": st.sampled_from([None, {"providerExecuted": True}, "m"])},
        ),
        max_size=2,
    ),
)  # fmt: skip


@st.composite
def _messages(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {"id": "m", "role": draw(st.sampled_from(_ROLES)), "content": "c"}
    for key in draw(st.lists(st.sampled_from(_KEYS), max_size=4, unique=True)):
        if draw(st.booleans()):
            message[key] = draw(_VALUES)
        else:
            message.pop(key, None)
    return message


@settings(max_examples=400, deadline=None)
@given(st.lists(_messages(), max_size=4))
def test_generated_messages_get_the_same_verdict(messages: list[dict[str, Any]]) -> None:
    _agree(_body(json.loads(json.dumps(messages))))


def _request_bodies(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return [body for item in value for body in _request_bodies(item)]
    if not isinstance(value, dict):
        return []
    found = [value] if {"threadId", "runId", "messages"} <= value.keys() else []
    return found + [body for item in value.values() for body in _request_bodies(item)]


def test_requests_tanstack_clients_sent_take_the_fast_path() -> None:
    bodies = [
        body
        for name in ("client-server-fullstack", "client-manager-hydration", "wire-server-core")
        for body in _request_bodies(load_fixture(name))
    ]
    assert bodies and any(body["messages"] for body in bodies)
    for body in bodies:
        assert isinstance(_agree(body), RunAgentInput)
        assert isinstance(read_run_input(body).messages, History)
        assert read_run_input_json(json.dumps(body).encode(), depth_limit=MAX_NESTING)
    # A key no client sends takes the long way, and is kept as pydantic keeps it.
    odd = {**bodies[0], "somethingElse": [1]}
    assert read_run_input_json(json.dumps(odd).encode(), depth_limit=MAX_NESTING) is None
    assert _agree(odd).model_extra == {"somethingElse": [1], "data": bodies[0]["data"]}  # type: ignore[union-attr]


def _nested(height: int) -> Any:
    value: Any = "leaf"
    for level in range(height - 1):
        value = [value] if level % 2 else {"k": value}
    return value


@settings(max_examples=300, deadline=None)
@given(
    where=st.sampled_from(["metadata", "call metadata", "extra", "part", "state", "props"]),
    height=st.integers(1, 34),
    # From 14 the shallow views' height fits, so only the fields around the messages are
    # walked; below, the whole body is.
    limit=st.integers(4, 30),
)
def test_the_depth_verdict_is_the_whole_body_walk(where: str, height: int, limit: int) -> None:
    deep = _nested(height)
    call = {**_CALL, "metadata": {"m": deep}} if where == "call metadata" else _CALL
    user: dict[str, Any] = {"id": "u", "role": "user", "content": "hi"}
    if where == "metadata":
        user["metadata"] = {"m": deep}
    elif where == "extra":
        user["extra"] = deep
    elif where == "part":
        user["content"] = [{"type": "text", "text": "t", "metadata": deep}]
    messages = [user, {"id": "a", "role": "assistant", "toolCalls": [call]}]
    data = _body(messages)
    if where == "state":
        data["state"] = deep
    elif where == "props":
        data["forwardedProps"] = {"p": deep}
    _agree(data, depth_limit=limit)


def test_messages_in_the_usual_shapes_are_not_walked_for_depth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked: list[Any] = []

    def spy(value: Any, limit: int = 200) -> bool:
        walked.append(value)
        return too_deep(value, limit)

    monkeypatch.setattr(run_input, "too_deep", spy)
    for body in _request_bodies(load_fixture("client-server-fullstack")):
        walked.clear()
        read_run_input(body, depth_limit=200)
        assert not any(value is body or value is body["messages"] for value in walked)
    with_extra = _body([{"id": "u", "role": "user", "content": "x", "extra": 1}])
    read_run_input(with_extra, depth_limit=200)
    assert walked[-1] == with_extra  # an unknown field: the whole body is walked


def test_the_kept_reader_checks_only_the_dicts_it_has_not_seen() -> None:
    """An in-process client sends its kept dicts again with each request: their views are
    reused, a new dict is checked, and a dict that replaced one at the same place is too."""
    first = [{"id": "u", "role": "user", "content": "delete project apollo"},
             {"id": "a", "role": "assistant", "toolCalls": [_CALL]}]  # fmt: skip
    reader = KeptRunInputReader()
    before = reader(_body(first))
    assert isinstance(before.messages, History)
    result = {"id": "r", "role": "tool", "toolCallId": "c", "content": "done"}
    changed = {**first[1], "content": "Deleting it."}
    after = reader(_body([first[0], changed, result]))
    assert isinstance(after.messages, History)
    assert after.messages.views()[0] is before.messages.views()[0]
    assert after.messages.views()[1] is not before.messages.views()[1]
    _assert_same(after, RunAgentInput.model_validate(_body([first[0], changed, result])))
    assert list(before.messages) == RunAgentInput.model_validate(_body(first)).messages


def test_the_kept_reader_leaves_a_new_dict_it_cannot_check_to_pydantic() -> None:
    reader = KeptRunInputReader()
    good = {"id": "u", "role": "user", "content": "hello"}
    reader(_body([good]))
    bad = {"id": "x", "role": "robot", "content": "beep"}
    with pytest.raises(ValidationError) as refused:
        reader(_body([good, bad]))
    with pytest.raises(ValidationError) as expected:
        RunAgentInput.model_validate(_body([good, bad]))
    assert str(refused.value) == str(expected.value)


def test_the_kept_reader_keeps_what_only_the_lenient_views_take() -> None:
    """A field the schema does not name: pydantic ignores it, the shallow views refuse it."""
    odd = {"id": "t", "role": "tool", "content": "done", "toolCallId": "c", "x": 1}
    assert run_input._views_of([odd], _views.SHALLOW) is None
    reader = KeptRunInputReader()
    body = _body([_USER, {"id": "a", "role": "assistant", "toolCalls": [_CALL]}, odd])
    first, again = reader(body), reader(body)
    assert isinstance(first.messages, History) and isinstance(again.messages, History)
    assert again.messages.views()[2] is first.messages.views()[2]
    _assert_same(again, RunAgentInput.model_validate(body))


def test_the_kept_reader_forgets_dicts_no_longer_sent_and_keeps_those_still_sent() -> None:
    reader = KeptRunInputReader()
    for n in range(200):
        reader(_body([_USER, {"id": f"m{n}", "role": "user", "content": "x"}]))
    assert len(reader._kept) <= 2 * 2 + 64 + 1
    last = _body([_USER, {"id": "m199", "role": "user", "content": "x"}])
    before = reader(_body([_USER]))
    after = reader(last)
    assert isinstance(before.messages, History) and isinstance(after.messages, History)
    assert after.messages.views()[0] is before.messages.views()[0]


_USER = {"id": "u", "role": "user", "content": "hello"}

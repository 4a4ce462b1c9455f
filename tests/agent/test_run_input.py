"""`read_run_input`: the same verdict as `RunAgentInput.model_validate`, the same messages.

The messages are checked by a typed-dict copy of `ag_ui`'s schema and built only when read.
The reference is `ag_ui` itself: for every body, both accept or both refuse with the same
error text, the messages read back equal the models, and the fields the engine scans equal
the models' attributes.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import RunAgentInput
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from chat_app.agent import run_input
from chat_app.agent.messages import History, field_values
from chat_app.agent.run_input import read_run_input


def _verdict(read: Any, data: dict[str, Any]) -> RunAgentInput | str:
    try:
        return read(data)  # type: ignore[no-any-return]
    except ValidationError as error:
        return str(error)


def _body(messages: Any, **extra: Any) -> dict[str, Any]:
    return {"threadId": "t", "runId": "r", "state": {}, "messages": messages, "tools": [],
            "context": [], "forwardedProps": {}, **extra}  # fmt: skip


def _agree(data: dict[str, Any]) -> RunAgentInput | str:
    """Both readers on `data`; asserts they agree, returns the verdict."""
    expected = _verdict(RunAgentInput.model_validate, data)
    got = _verdict(read_run_input, data)
    if isinstance(expected, str):
        assert got == expected
        return expected
    assert isinstance(got, RunAgentInput)
    # Fields the engine scans, before anything is built, then the messages themselves.
    if isinstance(got.messages, History):
        for fields, model in zip(got.messages.fields(), expected.messages, strict=True):
            for name, value in fields.items():
                if name in type(model).model_fields:
                    assert _plain(value) == _plain(getattr(model, name)), name
    assert list(got.messages) == expected.messages
    others = [name for name in RunAgentInput.model_fields if name != "messages"]
    assert [getattr(got, name) for name in others] == [getattr(expected, name) for name in others]
    assert got.model_extra == expected.model_extra
    assert got.model_dump_json(by_alias=True) == expected.model_dump_json(by_alias=True)
    return got


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, BaseModel):  # its fields, and any extra ones it kept
        value = {**field_values(value), **(value.model_extra or {})}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    return value


def test_the_plain_path_is_on_for_the_installed_ag_ui() -> None:
    # Off would be safe (every body validated the ordinary way) but slow: a newer `ag_ui`
    # whose schema holds something the typed-dict copy does not know must be looked at.
    assert run_input._PLAIN_MESSAGES is not None
    got = read_run_input(_body([{"id": "u", "role": "user", "content": "hi"}]))
    assert isinstance(got.messages, History)


_CALL = {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": "{}"}}

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
_VALUES = st.one_of(
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

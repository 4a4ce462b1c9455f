"""`History`: a list of `ag_ui` messages to its readers, each built only when read.

Pinned against a plain list of the same models: every list operation leaves both with the
same messages, and the engine's scans read the same calls and positions from either.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ag_ui.core import AssistantMessage, Message, RunAgentInput, ToolMessage, UserMessage
from hypothesis import given, settings
from hypothesis import strategies as st

from chat_app.agent import messages as messages_module
from chat_app.agent.history import tool_calls, tool_result_positions
from chat_app.agent.messages import History
from chat_app.server.run_input import read_run_input


def _wire(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        out += [
            {"id": f"u{i}", "role": "user", "content": f"go {i}"},
            {"id": f"a{i}", "role": "assistant", "toolCalls": [call]},
            {"id": f"t{i}", "role": "tool", "toolCallId": f"c{i}", "content": "done"},
        ]
    return out


def _lazy(wire: list[dict[str, Any]]) -> History:
    body = {"threadId": "t", "runId": "r", "messages": wire}
    history = read_run_input(body).messages
    assert isinstance(history, History)
    return history


def _built(wire: list[dict[str, Any]]) -> list[Message]:
    """The reference: a plain list of the models pydantic builds."""
    return RunAgentInput.model_validate({"threadId": "t", "runId": "r", "messages": wire}).messages


class _Counting:
    """Counts the messages `History` builds, one at a time or many in one call."""

    def __init__(self) -> None:
        self.built = 0

    def spy(self, adapter: Any) -> Any:
        counter = self

        class Spy:
            def validate_python(self, value: Any) -> Any:
                counter.built += len(value) if isinstance(value, list) else 1
                return adapter.validate_python(value)

        return Spy()


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> _Counting:
    counter = _Counting()
    for name in ("_MESSAGE", "_MESSAGES"):
        monkeypatch.setattr(messages_module, name, counter.spy(getattr(messages_module, name)))
    return counter


def test_only_the_messages_read_are_built(counting: _Counting) -> None:
    history = _lazy(_wire(100))
    assert len(history) == 300 and counting.built == 0
    assert [ref.id for ref in tool_calls(history)] == [f"c{i}" for i in range(100)]
    assert tool_result_positions(history)["c7"] == 23
    assert counting.built == 0  # the scans read views only
    assert history[-1].tool_call_id == "c99" and history[1].id == "a0"  # type: ignore[union-attr]
    assert counting.built == 2
    assert history[-1] is history[299]  # built once, then the same object
    assert counting.built == 2


def test_reading_gives_the_models_validation_gives() -> None:
    wire = _wire(3)
    assert _lazy(wire) == _built(wire)
    assert list(_lazy(wire)) == _built(wire) and _lazy(wire)[2:5] == _built(wire)[2:5]


def test_a_message_changed_in_place_is_what_the_scans_read() -> None:
    history = _lazy(_wire(2))
    tool = history[2]
    assert isinstance(tool, ToolMessage)
    tool.tool_call_id = "moved"
    assert "moved" in tool_result_positions(history)
    turn = history[1]
    assert isinstance(turn, AssistantMessage) and turn.tool_calls
    turn.tool_calls[0].id = "renamed"
    assert [ref.id for ref in tool_calls(history)][0] == "renamed"


_NEW = st.sampled_from(
    [
        UserMessage(id="n1", content="new"),
        ToolMessage(id="n2", tool_call_id="c0", content="again"),
        AssistantMessage(id="n3", content="calls", tool_calls=None),
    ]
)
_OPS = st.one_of(
    st.tuples(st.just("append"), _NEW),
    st.tuples(st.just("insert"), st.integers(-8, 8), _NEW),
    st.tuples(st.just("set"), st.integers(-6, 5), _NEW),
    st.tuples(st.just("del"), st.integers(-6, 5)),
    st.tuples(
        st.just("slice-set"), st.integers(-6, 6), st.integers(-6, 6), st.lists(_NEW, max_size=3)
    ),
    st.tuples(st.just("slice-del"), st.integers(-6, 6), st.integers(-6, 6)),
    st.tuples(st.just("read"), st.integers(-6, 5)),
    st.tuples(st.just("slice-read"), st.integers(-6, 6), st.integers(-6, 6)),
    st.tuples(st.just("sort"),),
    st.tuples(st.just("pop"),),
    st.tuples(st.just("extend"), st.lists(_NEW, max_size=2)),
    st.tuples(st.just("reverse"),),
)  # fmt: skip


def _apply(target: Any, op: tuple[Any, ...]) -> Any:
    """The operation on `target`; what it returns, for the reads."""
    name, *args = op
    if name == "slice-read":
        return target[args[0] : args[1]]
    if name == "sort":
        return target.sort(key=lambda message: message.id)
    if name == "append":
        target.append(args[0])
    elif name == "insert":
        target.insert(args[0], args[1])
    elif name == "set":
        target[args[0]] = args[1]
    elif name == "del":
        del target[args[0]]
    elif name == "slice-set":
        target[args[0] : args[1]] = args[2]
    elif name == "slice-del":
        del target[args[0] : args[1]]
    elif name == "read":
        return target[args[0]]
    elif name == "pop":
        target.pop()
    elif name == "extend":
        target.extend(args[0])
    else:
        target.reverse()


@settings(max_examples=300, deadline=None)
@given(st.lists(_OPS, max_size=8))
def test_list_operations_match_a_list(ops: list[tuple[Any, ...]]) -> None:
    history, reference = _lazy(_wire(2)), _built(_wire(2))
    for op in ops:
        outcomes = []
        for target in (history, reference):
            try:
                outcomes.append(("ok", _apply(target, op)))
            except IndexError:
                outcomes.append(("IndexError", None))
        assert outcomes[0] == outcomes[1], op
    assert len(history) == len(reference)
    # The scans first (they read fields, not models), then the messages themselves.
    assert tool_result_positions(history) == tool_result_positions(reference)
    assert tool_calls(history) == tool_calls(reference)
    assert list(history) == reference


def test_iterating_sees_changes_made_meanwhile_as_a_list_does() -> None:
    for change in ("remove", "append"):
        history, reference = _lazy(_wire(2)), _built(_wire(2))
        seen = []
        for target in (history, reference):
            ids = []
            for message in target:
                ids.append(message.id)
                if change == "remove" and message.id == "a0":
                    target.remove(message)
                if change == "append" and len(target) < 7:
                    target.append(UserMessage(id=f"new{len(target)}", content="x"))
            seen.append(ids)
        assert seen[0] == seen[1], change
        assert list(history) == reference


def test_copies_and_the_list_operators_behave_as_a_list() -> None:
    history, reference = _lazy(_wire(2)), _built(_wire(2))
    for copied in (copy.copy(history), history.copy(), History.of(history)):
        assert copied is not history and copied == history
        copied.append(UserMessage(id="new", content="x"))
        del copied[0]
        assert len(history) == 6 and history[0].id == "u0"
        assert len(copied) == 6 and copied[-1].id == "new"
    assert history == reference and history != tuple(reference)
    extra = [UserMessage(id="e", content="x")]
    assert history + extra == reference + extra and extra + history == extra + reference


def test_a_window_keeps_what_its_readers_build(counting: _Counting) -> None:
    history = _lazy(_wire(100))
    window = history.window()
    history.append(UserMessage(id="later", content="x"))
    assert len(window) == 300 and window[-1].id == "t99" and window[1:3] == history[1:3]
    with pytest.raises(IndexError):
        window[300]
    list(window)  # a model adapter reads them all
    built = counting.built
    assert list(history.window())[:300] == list(window)
    assert counting.built == built  # the next turn builds nothing again

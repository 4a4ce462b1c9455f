"""The stream processor is a pure fold of AG-UI events into messages with parts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chat_app.client import (
    LEFT_BEHIND,
    StreamProcessor,
    StreamState,
    ToolResultPart,
    to_wire_messages,
)

P = StreamProcessor(new_id=lambda: "generated")
DENIED = '{"error":"User declined tool execution"}'


def fold(events: Iterable[dict[str, Any]], state: StreamState | None = None) -> StreamState:
    state = state or StreamState()
    for event in events:
        state = P.apply(state, event)
    return state


CALL = [
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "pay", "parentMessageId": "a"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"cents"'},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": ":1}"},
]


def test_text_deltas_accumulate_into_one_text_part_of_the_message() -> None:
    state = fold(
        [
            {"type": "RUN_STARTED", "runId": "r"},
            {"type": "TEXT_MESSAGE_START", "messageId": "a", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "Hel"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "lo"},
            {"type": "TEXT_MESSAGE_END", "messageId": "a"},
        ]
    )
    (message,) = state.messages
    assert (message.id, message.role, message.text, len(message.parts)) == (
        "a",
        "assistant",
        "Hello",
        1,
    )


def test_applying_an_event_never_mutates_the_previous_state() -> None:
    before = fold(CALL)
    after = P.apply(before, {"type": "TOOL_CALL_END", "toolCallId": "c1"})
    assert before.messages[0].tool_calls[0].status == "streaming"
    assert after.messages[0].tool_calls[0].status == "running"
    assert after.messages[0].tool_calls[0].input == {"cents": 1}


def test_a_tool_result_before_run_started_is_attached_to_its_call() -> None:
    state = fold([*CALL, {"type": "TOOL_CALL_END", "toolCallId": "c1"}])
    state = P.start_request(state)
    state = fold(
        [
            {
                "type": "TOOL_CALL_RESULT",
                "toolCallId": "c1",
                "messageId": "a",
                "content": '{"ok":true}',
                "role": "tool",
            },
            {"type": "RUN_STARTED", "runId": "r2"},
        ],
        state,
    )
    part = state.messages[0].tool_calls[0]
    assert (part.status, part.output, state.run_status) == ("done", {"ok": True}, "running")
    assert isinstance(state.messages[0].parts[-1], ToolResultPart)


def test_an_output_error_result_after_a_rejection_is_rejected_with_its_reason() -> None:
    state = fold([*CALL, {"type": "TOOL_CALL_END", "toolCallId": "c1"}])
    state = P.record_decision(state, "c1", "rejected")
    state = P.apply(
        state,
        {
            "type": "TOOL_CALL_RESULT",
            "toolCallId": "c1",
            "content": '{"reason":"no"}',
            "metadata": {"tanstack": {"state": "output-error"}},
        },
    )
    part = state.messages[0].tool_calls[0]
    assert (part.status, part.error) == ("rejected", "no")


def test_a_run_error_without_run_started_ends_the_run_with_its_message() -> None:
    state = fold([{"type": "RUN_ERROR", "message": "bad", "code": "invalid-payload"}])
    assert (state.run_status, state.error, state.error_code) == ("error", "bad", "invalid-payload")


def test_unknown_events_are_ignored() -> None:
    state = fold(CALL)
    assert fold([{"type": "SOMETHING_NEW", "x": 1}, {"no": "type"}], state) == state


def test_an_interrupt_outcome_marks_the_approval_call_awaiting_approval() -> None:
    descriptor = {
        "id": "approval_c1",
        "reason": "tool_call",
        "toolCallId": "c1",
        "metadata": {"kind": "approval", "toolName": "pay", "input": {}},
    }
    state = fold(
        [
            *CALL,
            {
                "type": "RUN_FINISHED",
                "runId": "r",
                "outcome": {"type": "interrupt", "interrupts": [descriptor]},
            },
        ]
    )
    part = state.messages[0].tool_calls[0]
    assert (state.run_status, part.status, part.approval_id) == (
        "interrupted",
        "awaiting-approval",
        "approval_c1",
    )
    assert state.interrupts == (descriptor,)


def test_a_new_message_leaves_the_turns_unfinished_calls_behind_and_says_so() -> None:
    """A batch that ended without its results is over once the person goes on: the calls
    still waiting read as abandoned (the model reads them as without a result), through a
    snapshot too; a rejection keeps its word, and earlier turns are not looked at."""
    calls = [
        {"type": "TOOL_CALL_START", "toolCallId": f"c{n}", "toolCallName": "pay",
         "parentMessageId": "a"}
        for n in (1, 2, 3)
    ]  # fmt: skip
    state = fold([*calls, {"type": "RUN_FINISHED", "runId": "r"}])
    state = P.record_decision(state, "c1", "approved")
    state = P.record_decision(state, "c2", "rejected")
    state = P.add_user_message(state, "go on", message_id="u2")
    parts = state.messages[0].tool_calls
    assert [(p.status, p.error) for p in parts] == [
        ("abandoned", LEFT_BEHIND),
        ("rejected", None),
        ("abandoned", LEFT_BEHIND),
    ]
    wire = to_wire_messages(state.messages)
    state = P.apply(state, {"type": "MESSAGES_SNAPSHOT", "messages": wire})
    assert [(p.status, p.error) for p in state.messages[0].tool_calls] == [
        (p.status, p.error) for p in parts
    ]
    # The next turn's own call is left alone by a message after it: it has its result.
    state = fold([{"type": "TOOL_CALL_START", "toolCallId": "c4", "toolCallName": "pay",
                   "parentMessageId": "b"},
                  {"type": "TOOL_CALL_RESULT", "toolCallId": "c4", "messageId": "t4",
                   "content": "{}"}], state)  # fmt: skip
    state = P.add_user_message(state, "thanks", message_id="u3")
    assert [p.status for m in state.messages for p in m.tool_calls] == [
        "abandoned", "rejected", "abandoned", "done"
    ]  # fmt: skip


def test_a_run_that_fails_stops_its_calls_in_flight_and_a_refusal_stops_none() -> None:
    """A run error (the ledger could not record the pause, a model's stream cut off) ends
    the calls that were still running: nothing will come of them in that run. A refused
    continuation's batch stands, to be answered again."""
    end = {"type": "TOOL_CALL_END", "toolCallId": "c1"}
    failed = fold([*CALL, end, {"type": "RUN_ERROR", "message": "The run stopped: …",
                                "code": "ledger-unavailable"}])  # fmt: skip
    assert [p.status for p in failed.messages[0].tool_calls] == ["stopped"]
    assert failed.error == "The run stopped: …"
    streaming = fold([*CALL, {"type": "RUN_ERROR", "message": "cut off"}])
    assert [p.status for p in streaming.messages[0].tool_calls] == ["stopped"]
    refused = fold([*CALL, end, {"type": "RUN_ERROR", "message": "No.",
                                 "code": "incomplete-batch"}])  # fmt: skip
    assert [p.status for p in refused.messages[0].tool_calls] == ["running"]


def test_a_snapshot_anchors_tool_results_and_keeps_what_the_wire_cannot_carry() -> None:
    state = fold([*CALL, {"type": "TOOL_CALL_END", "toolCallId": "c1"}])
    state = P.record_decision(state, "c1", "rejected")
    wire: list[dict[str, Any]] = [
        {"id": "u", "role": "user", "content": "pay"},
        {
            "id": "a",
            "role": "assistant",
            "content": "Sure.",
            "toolCalls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "pay", "arguments": '{"cents":1}'},
                }
            ],
        },
        {"id": "tool-c1", "role": "tool", "toolCallId": "c1", "content": DENIED, "error": "error"},
        {"id": "x", "role": "reasoning", "content": "hmm"},
    ]
    state = P.apply(state, {"type": "MESSAGES_SNAPSHOT", "messages": wire})
    assert [m.role for m in state.messages] == ["user", "assistant", "reasoning"]
    part = state.messages[1].tool_calls[0]
    assert (part.status, part.error) == ("rejected", "User declined tool execution")
    sent = to_wire_messages(state.messages)
    assert sent[2] == {**wire[2], "metadata": {"tanstack": {"toolResult": {}}}}
    assert sent[:2] + sent[3:] == wire[:2] + wire[3:]


def test_a_snapshot_keeps_the_objects_of_the_messages_it_brings_back_unchanged() -> None:
    """The request's wire dicts and the page's views and JSON are kept by identity: a pause's
    snapshot of a long history must not make them all anew. Only equal messages are kept."""
    state = fold([*CALL, {"type": "TOOL_CALL_END", "toolCallId": "c1"}])
    before = P.apply(state, {"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": "u", "role": "user", "content": "pay"},
        {"id": "v", "role": "user", "content": "and more"},
        *to_wire_messages(state.messages),
    ]})  # fmt: skip
    wire = to_wire_messages(before.messages)
    wire[1] = {**wire[1], "content": "and more, edited"}
    after = P.apply(before, {"type": "MESSAGES_SNAPSHOT", "messages": [
        *wire, {"id": "b", "role": "assistant", "content": "Done."}
    ]})  # fmt: skip
    kept = [new is old for new, old in zip(after.messages, before.messages, strict=False)]
    assert kept == [True, False, True]
    assert after.messages[1].text == "and more, edited"
    assert [m.id for m in after.messages] == ["u", "v", "a", "b"]
    assert to_wire_messages(after.messages)[:-1] == wire


def test_state_deltas_patch_the_latest_snapshot_without_mutating_it() -> None:
    snapshot = {"type": "STATE_SNAPSHOT", "snapshot": {"cart": ["tea"], "total": 4}}
    before = fold([snapshot])
    after = fold(
        [
            {
                "type": "STATE_DELTA",
                "delta": [
                    {"op": "add", "path": "/cart/-", "value": "cake"},
                    {"op": "replace", "path": "/total", "value": 9},
                ],
            }
        ],
        before,
    )
    assert after.agent_state == {"cart": ["tea", "cake"], "total": 9}
    assert before.agent_state == {"cart": ["tea"], "total": 4}


def test_a_state_delta_before_any_snapshot_patches_an_empty_object() -> None:
    state = fold([{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/step", "value": 1}]}])
    assert state.agent_state == {"step": 1}


def test_a_state_delta_that_does_not_apply_leaves_the_state_and_the_run_alone() -> None:
    start = fold([{"type": "STATE_SNAPSHOT", "snapshot": {"total": 4}}, *CALL])
    for delta in (
        [{"op": "remove", "path": "/missing"}],  # no such member
        [{"op": "test", "path": "/total", "value": 5}],  # a failed test voids the whole patch
        [{"op": "add", "path": "/total", "value": 5}, {"op": "explode", "path": "/"}],
        {"op": "add", "path": "/total", "value": 5},  # not a list
        "[]",  # not a list either (a string is not parsed)
    ):
        state = P.apply(start, {"type": "STATE_DELTA", "delta": delta})
        assert state.agent_state == {"total": 4}, delta
        assert state.messages == start.messages


def paused_then_approved() -> StreamState:
    """`c1` of message `a` paused for approval, approved, and a new request streaming."""
    metadata = {"kind": "approval", "toolName": "pay", "input": {"cents": 1}}
    descriptor = {"id": "approval_c1", "reason": "tool_call", "toolCallId": "c1",
                  "metadata": metadata}  # fmt: skip
    state = fold(
        [
            {"type": "RUN_STARTED", "runId": "r1"},
            {"type": "TEXT_MESSAGE_START", "messageId": "a", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "Pay?"},
            {"type": "TEXT_MESSAGE_END", "messageId": "a"},
            *CALL,
            {"type": "TOOL_CALL_END", "toolCallId": "c1"},
            {"type": "RUN_FINISHED", "runId": "r1",
             "outcome": {"type": "interrupt", "interrupts": [descriptor]}},
        ]
    )  # fmt: skip
    return P.start_request(P.record_decision(state, "c1", "approved"))


RESULT = {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "a",
          "content": '{"ok":true}', "role": "tool"}  # fmt: skip
REPLY = [
    {"type": "TEXT_MESSAGE_START", "messageId": "b", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "b", "delta": "Paid."},
    {"type": "TEXT_MESSAGE_END", "messageId": "b"},
    {"type": "RUN_FINISHED", "runId": "r2"},
]


def test_a_restated_call_keeps_its_one_part_and_takes_its_result() -> None:
    # What our server sends on a continuation (`docs/protocol.md` §3.7): the paused call started
    # and ended again, the history's arguments on the end, then its result.
    restated: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "runId": "r2", "parentRunId": "r1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "pay",
         "parentMessageId": "a"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1",
         "metadata": {"tanstack": {"input": {"cents": 1}}}},
        RESULT,
        *REPLY,
    ]  # fmt: skip
    state = fold(restated, paused_then_approved())
    assert [(m.id, m.role) for m in state.messages] == [("a", "assistant"), ("b", "assistant")]
    (part,) = [p for m in state.messages for p in m.tool_calls]
    assert (part.id, part.arguments, part.input, part.decision, part.status, part.output) == (
        "c1", '{"cents":1}', {"cents": 1}, "approved", "done", {"ok": True},
    )  # fmt: skip
    assert [p.kind for p in state.messages[0].parts] == ["text", "tool-call", "tool-result"]


def test_a_call_restated_with_its_arguments_again_does_not_double_them() -> None:
    # TanStack's engine restates a history call with no parent message and all its arguments.
    restated = [
        {"type": "RUN_STARTED", "runId": "r2"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "pay"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"cents":1}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        RESULT,
        *REPLY,
    ]
    state = fold(restated, paused_then_approved())
    assert [m.id for m in state.messages] == ["a", "b"]
    (part,) = [p for m in state.messages for p in m.tool_calls]
    assert (part.arguments, part.status, part.output) == ('{"cents":1}', "done", {"ok": True})


def test_an_end_carrying_the_input_fills_a_call_that_streamed_no_arguments() -> None:
    start = {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "pay",
             "parentMessageId": "a"}  # fmt: skip
    for end in (
        {"type": "TOOL_CALL_END", "toolCallId": "c1", "input": {"cents": 2}},
        {"type": "TOOL_CALL_END", "toolCallId": "c1",
         "metadata": {"tanstack": {"input": {"cents": 2}}}},
    ):  # fmt: skip
        (part,) = fold([start, end]).messages[0].tool_calls
        assert (part.arguments, part.input, part.status) == ('{"cents":2}', {"cents": 2}, "running")

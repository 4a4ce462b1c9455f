"""A continuation restates each call of the paused run right before its result.

`TOOL_CALL_START` (same id, name and `parentMessageId` as the history's call) and
`TOOL_CALL_END` carrying the history's arguments in `metadata.tanstack.input`, then the
`TOOL_CALL_RESULT` (`docs/protocol.md` §3.7): every result answers a call started in its own
run, which ag-ui-validate requires (AGUI207), and no client adds a second part for it
(`tests/client/test_processor.py`, `tests/interop/test_ag_ui_validate.py`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat_app.agent import Agent, tool
from chat_app.demo import build_demo_agent
from tests.agent.builders import collect, obj, say, turns, user


async def pause(phrase: str, agent: Agent | None = None) -> list[dict[str, Any]]:
    body = {"threadId": "t", "runId": "r1", "messages": [user(phrase, "u1")]}
    events = await collect(agent or build_demo_agent(), body)
    assert events[-1]["outcome"]["type"] == "interrupt"
    return events


async def resume(
    paused: list[dict[str, Any]],
    answers: list[dict[str, Any]],
    *,
    agent: Agent | None = None,
    history: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    body = {"threadId": "t", "runId": "r2", "parentRunId": "r1",
            "messages": history if history is not None else paused[-2]["messages"],
            "resume": answers}  # fmt: skip
    return await collect(agent or build_demo_agent(), body)


def items(paused: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = paused[-1]["outcome"]["interrupts"]
    return found


def entry(item: dict[str, Any], payload: Any = None, *, cancel: bool = False) -> dict[str, Any]:
    if cancel:
        return {"interruptId": item["id"], "status": "cancelled"}
    return {"interruptId": item["id"], "status": "resolved", "payload": payload}


def history_calls(paused: list[dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
    """Each call of the paused history: id -> (assistant message id, name, arguments)."""
    return {
        call["id"]: (message["id"], call["function"]["name"], call["function"]["arguments"])
        for message in paused[-2]["messages"] if message["role"] == "assistant"
        for call in message.get("toolCalls") or []
    }  # fmt: skip


def restated(paused: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    message_id, name, arguments = history_calls(paused)[call_id]
    end: dict[str, Any] = {"type": "TOOL_CALL_END", "toolCallId": call_id}
    if arguments.strip():
        end["metadata"] = {"tanstack": {"input": json.loads(arguments)}}
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name,
         "parentMessageId": message_id},
        end,
    ]  # fmt: skip


def tool_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool call events, without timestamps."""
    return [
        {key: value for key, value in event.items() if key != "timestamp"}
        for event in events
        if event["type"].startswith("TOOL_CALL_")
    ]


def result(events: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    [found] = [
        {key: value for key, value in event.items() if key != "timestamp"}
        for event in events
        if event["type"] == "TOOL_CALL_RESULT" and event["toolCallId"] == call_id
    ]
    return found


@pytest.mark.parametrize(
    ("phrase", "answer"),
    [
        ("transfer 25 to Ada", {"approved": True}),
        ("transfer 25 to Ada", {"approved": False, "payload": {"reason": "too much"}}),
        ("delete project apollo", {"approved": False}),
        ("delete project apollo", None),  # cancelled
    ],
)
async def test_each_answer_restates_its_call_right_before_the_result(
    phrase: str, answer: dict[str, Any] | None
) -> None:
    paused = await pause(phrase)
    [item] = items(paused)
    done = await resume(paused, [entry(item, answer, cancel=answer is None)])
    call_id = item["toolCallId"]
    assert done[0]["type"] == "RUN_STARTED"
    assert tool_events(done) == [*restated(paused, call_id), result(done, call_id)]


async def test_edited_arguments_run_but_the_restated_call_keeps_the_history_arguments() -> None:
    paused = await pause("email ada@example.com about Launch")
    [item] = items(paused)
    edited = {"to": "ada@example.com", "subject": "Launch day", "body": "Thursday."}
    done = await resume(paused, [entry(item, {"approved": True, "editedArgs": edited})])
    call_id = item["toolCallId"]
    assert tool_events(done) == [*restated(paused, call_id), result(done, call_id)]
    assert json.loads(result(done, call_id)["content"])["subject"] == "Launch day"
    assert restated(paused, call_id)[1]["metadata"]["tanstack"]["input"]["subject"] == "Launch"


async def test_a_batch_restates_each_call_before_its_own_result_in_history_order() -> None:
    paused = await pause("pay invoices")
    batch = items(paused)
    done = await resume(paused, [entry(item, {"approved": True}) for item in batch])
    expected: list[dict[str, Any]] = []
    for item in batch:
        expected += [*restated(paused, item["toolCallId"]), result(done, item["toolCallId"])]
    assert tool_events(done) == expected


async def test_a_continuation_that_pauses_again_without_a_result_restates_nothing() -> None:
    paused = await pause("share my location")
    [item] = items(paused)
    asked = await resume(paused, [entry(item, {"approved": True})])
    assert tool_events(asked) == []
    assert [i["id"] for i in items(asked)] == [f"client_tool_{item['toolCallId']}"]


async def test_a_result_the_history_holds_is_neither_sent_nor_restated() -> None:
    paused = await pause("what time is it")
    [item] = items(paused)
    output = {"time": "09:41", "timeZone": "Europe/Paris"}
    written = {"id": "tool-1", "role": "tool", "toolCallId": item["toolCallId"],
               "content": json.dumps(output)}  # fmt: skip
    done = await resume(
        paused, [entry(item, output)], history=[*paused[-2]["messages"], written]
    )
    assert tool_events(done) == []
    # Without it in the history, the server writes the result, restated first.
    done = await resume(paused, [entry(item, output)])
    call_id = item["toolCallId"]
    assert tool_events(done) == [*restated(paused, call_id), result(done, call_id)]


async def test_a_call_without_arguments_is_restated_without_an_input() -> None:
    ping = tool("ping", needs_approval=True, execute=lambda args: {"pong": True})
    agent = Agent(model=turns(say("Ping?", ("c1", "ping", {})), say("Pong.")), tools=[ping])
    paused = await pause("ping", agent)
    history = paused[-2]["messages"]
    history[1]["toolCalls"][0]["function"]["arguments"] = ""  # a no-argument call, as streamed
    done = await resume(paused, [entry(items(paused)[0], True)], agent=agent, history=history)
    start, end, _ = tool_events(done)
    assert start["toolCallId"] == end["toolCallId"] == "c1"
    assert "metadata" not in end


async def test_restating_costs_the_same_whatever_the_history_length() -> None:
    """Two events per answered call: nothing that grows with the history (no snapshot)."""
    transfer = tool(
        "transfer", input=obj({"cents": {"type": "number"}}, ["cents"]), needs_approval=True,
        execute=lambda args: {"receipt": "r-1"},
    )  # fmt: skip
    agent = Agent(model=turns(say("Sure.", ("c1", "transfer", {"cents": 1})), say("Done.")),
                  tools=[transfer])  # fmt: skip
    paused = await pause("pay", agent)
    answer = [entry(items(paused)[0], {"approved": True})]
    short = await resume(paused, answer, agent=agent)
    old = [user(f"message {n}", f"old{n}") for n in range(1000)]
    long = await resume(paused, answer, agent=agent, history=[*old, *paused[-2]["messages"]])
    assert [e["type"] for e in long] == [e["type"] for e in short]
    assert "MESSAGES_SNAPSHOT" not in [e["type"] for e in long]

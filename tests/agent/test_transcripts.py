"""Our streams equal the ones captured from TanStack AI's `chat()` for the same tools.

Normalized for timestamps, generated message/call ids and `createdAt`; consecutive text deltas
are merged (our scripted model streams word by word). Two deliberate differences: TanStack
streams a continuation's tool results before `RUN_STARTED` and sends a refused continuation's
`RUN_ERROR` without one; we always start with `RUN_STARTED`, as AG-UI requires, so the
expected streams are normalized the same way. And before each result for a call of the paused
run we start and end that call again (`docs/protocol.md` §3.7; `test_restated_calls.py`
pins how), which normalizing drops.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat_app.agent import Agent, tool
from tests.agent.builders import collect, obj, say, turns
from tests.fixtures.loader import load_fixture, parse_sse

CORE = load_fixture("wire-server-core")
BATCHES = load_fixture("wire-server-batches")


def normalize(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events = drop_restated(events)
    ids: dict[str, str] = {}

    def alias(value: str) -> str:
        return ids.setdefault(value, f"msg#{len(ids)}")

    out: list[dict[str, Any]] = []
    for event in events:
        event = json.loads(json.dumps(event))
        event.pop("timestamp", None)
        tanstack = event.get("metadata", {}).get("tanstack", {})
        tanstack.pop("model", None)
        for key in ("messageId", "parentMessageId"):
            if key in event:
                event[key] = alias(event[key])
        for message in event.get("messages", []):
            if message.get("role") == "assistant":
                message["id"] = alias(message["id"])
            message.pop("metadata", None)
        if (
            out
            and event["type"] == "TEXT_MESSAGE_CONTENT"
            and out[-1]["type"] == "TEXT_MESSAGE_CONTENT"
        ):
            out[-1]["delta"] += event["delta"]
            continue
        out.append(event)
    if out and out[0]["type"] == "RUN_ERROR":
        # TanStack sends a refused continuation's RUN_ERROR alone; we start the run first.
        tanstack = out[0]["metadata"]["tanstack"]
        out.insert(
            0, {"type": "RUN_STARTED", "runId": tanstack["runId"], "threadId": tanstack["threadId"]}
        )
    starts = [i for i, e in enumerate(out) if e["type"] == "RUN_STARTED"]
    if starts and starts[0] > 0:
        out.insert(0, out.pop(starts[0]))
    for event in out:
        if event["type"] == "RUN_STARTED":
            event.pop("parentRunId", None)
    return out


def drop_restated(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without the `TOOL_CALL_START`/`TOOL_CALL_END` pairs that restate a call right before its
    `TOOL_CALL_RESULT` (TanStack sends the result alone)."""
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(events):
        window = events[index : index + 3]
        if [e["type"] for e in window] == ["TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT"]:
            if len({e["toolCallId"] for e in window}) == 1:
                index += 2
                continue
        out.append(events[index])
        index += 1
    return out


def transfer_agent(*script: Any) -> Agent:
    transfer = tool(
        "transfer",
        input=obj({"cents": {"type": "number"}}, ["cents"]),
        approval={
            "approve": obj({"note": {"type": "string"}}, ["note"]),
            "reject": obj({"reason": {"type": "string"}}, ["reason"]),
        },
        needs_approval=True,
        execute=lambda args: {"receipt": f"r-{args['cents']}"},
    )
    return Agent(model=turns(*script), tools=[transfer])


PAUSE_BODY = {
    "threadId": "thread-1",
    "runId": "run-1",
    "messages": [{"id": "snapshot_run-1_0", "role": "user", "content": "pay"}],
}


async def test_approval_pause_matches() -> None:
    agent = transfer_agent(say("Need approval.", ("call_1", "transfer", {"cents": 100})))
    ours = await collect(agent, PAUSE_BODY)
    assert normalize(ours) == normalize(parse_sse(CORE["approvalPause"]))


def continuation(run_id: str, resume: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(CORE["approveContinuationBody"])
    body.update(runId=run_id, resume=resume)
    return body


@pytest.mark.parametrize(
    ("fixture", "run_id", "reply", "resume"),
    [
        ("approveContinuation", "run-2", "Done.", {"approved": True, "payload": {"note": "ok"}}),
        (
            "rejectContinuation",
            "run-3",
            "Ok, not sent.",
            {"approved": False, "payload": {"reason": "Too large"}},
        ),
        ("cancelContinuation", "run-4", "Cancelled.", None),
        ("invalidContinuation", "run-5", "x", {"approved": True}),
        (
            "editedArgsGood",
            "run-9",
            "x",
            {"approved": True, "editedArgs": {"cents": 7}, "payload": {"note": "ok"}},
        ),
    ],
)
async def test_continuations_match(fixture: str, run_id: str, reply: str, resume: Any) -> None:
    agent = transfer_agent(say("Need approval."), say(reply))
    entry: dict[str, Any] = {
        "interruptId": "approval_call_1",
        "status": "cancelled" if resume is None else "resolved",
    }
    if resume is not None:
        entry["payload"] = resume
    ours = await collect(agent, continuation(run_id, [entry]))
    assert normalize(ours) == normalize(parse_sse(CORE[fixture]))


async def test_unknown_interrupt_error_matches() -> None:
    agent = transfer_agent(say("x"))
    resume: list[dict[str, Any]] = [
        {
            "interruptId": "approval_call_1",
            "status": "resolved",
            "payload": {"approved": True, "payload": {"note": "ok"}},
        },
        {"interruptId": "nope", "status": "cancelled"},
    ]
    ours = await collect(agent, continuation("run-6", resume))
    expected = parse_sse(CORE["unknownIdContinuation"])
    assert normalize(ours) == normalize(expected)


async def test_batch_pause_and_partial_and_duplicate_answers_match() -> None:
    admit = tool(
        "admit",
        input=obj({"name": {"type": "string"}}, ["name"]),
        needs_approval=True,
        execute=lambda a: {"ok": True},
    )
    calls = [(f"c{i}", "admit", {"name": n}) for i, n in zip((1, 2, 3), "abc", strict=True)]
    agent = Agent(model=turns(say("Need approval.", *calls), say("done")), tools=[admit])
    pause = await collect(
        agent,
        {
            "threadId": "t",
            "runId": "r1",
            "messages": [{"id": "snapshot_r1_0", "role": "user", "content": "go"}],
        },
    )
    assert normalize(pause) == normalize(parse_sse(BATCHES["batchPause"]))
    history = pause[-2]["messages"]

    async def answer(run_id: str, resume: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return await collect(
            agent,
            {
                "threadId": "t",
                "runId": run_id,
                "parentRunId": "r1",
                "messages": history,
                "resume": resume,
            },
        )

    partial = await answer(
        "r2", [{"interruptId": "approval_c1", "status": "resolved", "payload": True}]
    )
    assert normalize(partial) == normalize(parse_sse(BATCHES["batchPartial"]))
    approve = {"status": "resolved", "payload": True}
    dup = await answer("r3", [{"interruptId": f"approval_c{i}", **approve} for i in (1, 1, 2, 3)])
    assert normalize(dup) == normalize(parse_sse(BATCHES["batchDup"]))
    mixed = await answer(
        "r4",
        [
            {"interruptId": "approval_c1", **approve},
            {"interruptId": "approval_c2", "status": "cancelled"},
            {"interruptId": "approval_c3", "status": "resolved", "payload": False},
        ],
    )
    assert normalize(mixed) == normalize(parse_sse(BATCHES["batchMixedOk"]))

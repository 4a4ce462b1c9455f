"""Boundary hooks, the resolution hook's continue / cancel / stop, and pydantic schemas."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from chat_app.agent import (
    Agent,
    Middleware,
    ModelRequest,
    Resolutions,
    RunContext,
    ScriptedModel,
    ScriptedTurn,
    combine_tool_resumes,
    define_interrupt,
    event_to_wire,
    tool,
)
from chat_app.agent.middleware import HookResult
from chat_app.client import ChatClient, InProcessConnection, read_manifest
from chat_app.interrupts import (
    ToolResume,
    generic_continuation_from_descriptor,
    hash_schema_input,
    wrap_generic_continuation,
)
from tests.agent.builders import collect, obj, say, turns

CHECK = define_interrupt("check", response=obj({"ok": {"type": "boolean"}}, ["ok"], draft=False))
executed: list[str] = []
ACT = tool("act", input=obj({}, []), needs_approval=True, execute=lambda a: executed.append("act"))


def _log(args: dict[str, object]) -> dict[str, object]:
    executed.append("log")
    return {"logged": True}


LOG = tool("log", input=obj({}, []), execute=_log)


class AskAt(Middleware):
    def __init__(self, phase: str, answer: ToolResume = "continue") -> None:
        self.phase, self.answer = phase, answer
        self.seen: list[Any] = []

    async def _ask(self, ctx: RunContext, phase: str) -> HookResult:
        if phase != self.phase or ctx.is_continuation:
            return None
        return [CHECK.request(key=phase, reason="check", message=f"Check at {phase}")]

    async def before_model(self, ctx: RunContext) -> HookResult:
        return await self._ask(ctx, "beforeModel")

    async def after_model(self, ctx: RunContext) -> HookResult:
        return await self._ask(ctx, "afterModel")

    async def before_tools(self, ctx: RunContext) -> HookResult:
        return await self._ask(ctx, "beforeTools")

    async def after_tools(self, ctx: RunContext) -> HookResult:
        return await self._ask(ctx, "afterTools")

    async def on_interrupt_resolution(
        self, ctx: RunContext, resolutions: Resolutions
    ) -> ToolResume:
        self.seen.extend(resolutions.all())
        return self.answer


@pytest.fixture(autouse=True)
def _reset() -> None:
    executed.clear()


def agent_with(middleware: AskAt) -> Agent:
    return Agent(
        model=turns(say("Working.", ("c1", "log", {})), say("Finished.")),
        tools=[ACT, LOG],
        interrupts=[CHECK],
        middleware=[middleware],
    )


async def start(agent: Agent) -> list[dict[str, Any]]:
    return await collect(
        agent,
        {
            "threadId": "t",
            "runId": "r1",
            "messages": [{"id": "u", "role": "user", "content": "go"}],
        },
    )


@pytest.mark.parametrize("phase", ["beforeModel", "afterModel", "beforeTools", "afterTools"])
async def test_every_boundary_can_pause_the_run(phase: str) -> None:
    middleware = AskAt(phase)
    agent = agent_with(middleware)
    events = await start(agent)
    assert [e["type"] for e in events[-2:]] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    [item] = events[-1]["outcome"]["interrupts"]
    assert item["message"] == f"Check at {phase}"
    assert executed == (["log"] if phase == "afterTools" else [])
    continuation = generic_continuation_from_descriptor(item)
    assert continuation is not None
    entry = {
        "interruptId": item["id"],
        "status": "resolved",
        "payload": {"ok": True},
        "metadata": wrap_generic_continuation(continuation),
    }
    done = await collect(
        agent,
        {
            "threadId": "t",
            "runId": "r2",
            "parentRunId": "r1",
            "messages": events[-2]["messages"],
            "resume": [entry],
        },
    )
    assert done[-1]["type"] == "RUN_FINISHED" and "outcome" not in done[-1]
    assert [r.response for r in middleware.seen] == [{"ok": True}]
    assert executed == ["log"], "the pending tool call runs exactly once"


async def resume_tool_batch(answer: ToolResume) -> tuple[list[dict[str, Any]], AskAt]:
    middleware = AskAt("beforeTools", answer)
    agent = Agent(
        model=turns(say("", ("c1", "act", {})), say("after")),
        tools=[ACT],
        interrupts=[CHECK],
        middleware=[middleware],
    )
    events = await start(agent)
    items = events[-1]["outcome"]["interrupts"]
    assert [i["id"] for i in items][0] == "approval_c1" and len(items) == 2
    generic = items[1]
    continuation = generic_continuation_from_descriptor(generic)
    assert continuation is not None
    resume = [
        {"interruptId": "approval_c1", "status": "resolved", "payload": {"approved": True}},
        {
            "interruptId": generic["id"],
            "status": "resolved",
            "payload": {"ok": True},
            "metadata": wrap_generic_continuation(continuation),
        },
    ]
    done = await collect(
        agent,
        {
            "threadId": "t",
            "runId": "r2",
            "parentRunId": "r1",
            "messages": events[-2]["messages"],
            "resume": resume,
        },
    )
    return done, middleware


async def test_continue_runs_the_approved_tool() -> None:
    done, _ = await resume_tool_batch("continue")
    assert executed == ["act"] and "after" in str(done)


async def test_cancel_cancels_every_pending_tool_call_even_approved_ones() -> None:
    done, _ = await resume_tool_batch("cancel")
    assert executed == []
    result = next(e for e in done if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == '{"error":"Tool execution cancelled"}'


async def test_stop_cancels_the_pending_calls_and_ends_the_run_without_the_model() -> None:
    """Every call of the batch gets its result, as with `cancel` (without one the next
    continuation would lack its answer, and the conversation could not go on); then the run
    ends at once with success, the model not asked."""
    done, _ = await resume_tool_batch("stop")
    assert executed == []
    result = next(e for e in done if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == '{"error":"Tool execution cancelled"}'
    assert "after" not in str(done)  # the model's next turn
    assert done[-1]["type"] == "RUN_FINISHED"
    assert done[-1]["outcome"] == {"type": "success"}
    assert done[-1]["metadata"]["tanstack"]["finishReason"] == "stop"


def test_stop_beats_cancel_beats_continue() -> None:
    assert combine_tool_resumes([]) == "continue"
    assert combine_tool_resumes([None, "continue"]) == "continue"
    assert combine_tool_resumes(["continue", "cancel"]) == "cancel"
    assert combine_tool_resumes(["stop", "cancel", None]) == "stop"


class Transfer(BaseModel):
    recipient: str
    amount: float


def test_pydantic_models_become_the_json_schema_that_is_hashed() -> None:
    made = tool("transfer", input=Transfer, approval={"reject": Transfer}, needs_approval=True)
    assert made.input_schema == Transfer.model_json_schema()
    assert made.input_schema_hash == hash_schema_input(Transfer.model_json_schema())
    assert made.approval.reject == Transfer.model_json_schema() and made.approval.approve is None


def test_duplicate_interrupt_definitions_are_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        Agent(model=turns(say("x")), interrupts=[CHECK, CHECK])


async def test_after_a_stop_the_conversation_goes_on() -> None:
    """A stopped batch's calls have their results, so the next message's pause is answered
    as any other: nothing is refused for lacking the stopped call's answer."""

    def play(request: ModelRequest) -> ScriptedTurn:
        asked = sum(message.role == "user" for message in request.messages)
        return say("", (f"c{asked}", "act", {}))

    agent = Agent(
        model=ScriptedModel(play), tools=[ACT], interrupts=[CHECK],
        middleware=[AskAt("beforeTools", "stop")],
    )  # fmt: skip
    connection = InProcessConnection(agent.run, encode=event_to_wire)
    client = ChatClient(
        connection, tools=read_manifest({"tools": agent.tool_manifest()}).tools,
        interrupts=[CHECK],
    )  # fmt: skip
    for message in ("go", "again"):
        await client.send(message)
        approval, check = client.interrupts
        await client.resolve_interrupt(approval.id, approved=True)
        await client.resolve_interrupt(check.id, response={"ok": True})
        assert client.error is None, client.error
        assert client.interrupts == ()
    calls = [call for m in client.messages for call in m.tool_calls]
    assert [(call.id, call.has_output) for call in calls] == [("c1", True), ("c2", True)]
    assert executed == []

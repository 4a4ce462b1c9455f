"""Every error code a continuation can earn (`docs/protocol.md` §3.6), each from a real request."""

from __future__ import annotations

from typing import Any

from chat_app.agent import (
    Agent,
    InterruptDefinition,
    Middleware,
    RunContext,
    define_interrupt,
    tool,
)
from chat_app.agent.middleware import HookResult
from chat_app.interrupts import generic_continuation_from_descriptor, wrap_generic_continuation
from tests.agent.builders import collect, obj, say, turns

REVIEW = define_interrupt(
    "review",
    response=obj({"approved": {"type": "boolean"}}, ["approved"], draft=False),
)


class AskReview(Middleware):
    """Asks `interrupt` (REVIEW) once, on the first run."""

    def __init__(
        self, expires_at: str | None = None, interrupt: InterruptDefinition = REVIEW
    ) -> None:
        self.expires_at, self.interrupt = expires_at, interrupt

    async def before_model(self, ctx: RunContext) -> HookResult:
        if ctx.is_continuation:
            return None
        return [
            self.interrupt.request(
                key="k", reason="review", message="Review?", expires_at=self.expires_at
            )
        ]


SEND = tool(
    "send",
    input=obj({"to": {"type": "string", "format": "email"}}, ["to"], draft=False),
    needs_approval=True,
    execute=lambda args: {"sent": args["to"]},
)
LOOKUP = tool("lookup", input=obj({}, []), output=obj({"id": {"type": "string"}}, ["id"]))
BROKEN = tool("broken", input=obj({}, []), output={"type": "not-a-type"})


def tool_agent() -> Agent:
    calls = [("c1", "send", {"to": "a@example.com"}), ("c2", "lookup", {}), ("c3", "broken", {})]
    return Agent(model=turns(say("", *calls), say("done")), tools=[SEND, LOOKUP, BROKEN])


async def paused(agent: Agent) -> list[dict[str, Any]]:
    return await collect(
        agent,
        {
            "threadId": "t",
            "runId": "r1",
            "messages": [{"id": "u", "role": "user", "content": "go"}],
        },
    )


async def answer(
    agent: Agent, pause: list[dict[str, Any]], resume: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    body = {
        "threadId": "t",
        "runId": "r2",
        "parentRunId": "r1",
        "messages": pause[-2]["messages"],
        "resume": resume,
        **extra,
    }
    events = await collect(agent, body)
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"], "refused: one RUN_ERROR"
    return events[1]


def codes(error: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (item["scope"], item["code"]) for item in error["metadata"]["tanstack"]["interruptErrors"]
    ]


OK_TOOLS: list[dict[str, Any]] = [
    {"interruptId": "approval_c1", "status": "resolved", "payload": {"approved": True}},
    {"interruptId": "client_tool_c2", "status": "resolved", "payload": {"id": "x"}},
    {"interruptId": "client_tool_c3", "status": "cancelled"},
]


def replace(entries: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [entry if e["interruptId"] == entry["interruptId"] else e for e in entries]


async def test_the_valid_batch_is_accepted() -> None:
    agent = tool_agent()
    events = await collect(
        agent,
        {
            "threadId": "t",
            "runId": "r2",
            "parentRunId": "r1",
            "messages": (await paused(agent))[-2]["messages"],
            "resume": OK_TOOLS,
        },
    )
    assert events[-1]["type"] == "RUN_FINISHED"


async def test_invalid_payload_for_a_non_boolean_decision() -> None:
    agent = tool_agent()
    error = await answer(
        agent,
        await paused(agent),
        replace(OK_TOOLS, {"interruptId": "approval_c1", "status": "resolved", "payload": "yes"}),
    )
    assert error["code"] == "invalid-payload"
    assert codes(error) == [("item", "invalid-payload"), ("batch", "item-validation-failed")]


async def test_invalid_edited_args_are_refused_with_their_path() -> None:
    agent = tool_agent()
    entry = {
        "interruptId": "approval_c1",
        "status": "resolved",
        "payload": {"approved": True, "editedArgs": {"to": "nope"}},
    }
    error = await answer(agent, await paused(agent), replace(OK_TOOLS, entry))
    item = error["metadata"]["tanstack"]["interruptErrors"][0]
    assert (item["code"], item["path"]) == ("invalid-edited-args", ["editedArgs", "to"])


async def test_invalid_tool_output() -> None:
    agent = tool_agent()
    entry = {"interruptId": "client_tool_c2", "status": "resolved", "payload": {"id": 7}}
    error = await answer(agent, await paused(agent), replace(OK_TOOLS, entry))
    assert error["code"] == "invalid-tool-output"
    assert "Tool lookup output is invalid" in error["message"]


async def test_invalid_response_schema_when_the_schema_itself_is_broken() -> None:
    agent = tool_agent()
    entry = {"interruptId": "client_tool_c3", "status": "resolved", "payload": {}}
    error = await answer(agent, await paused(agent), replace(OK_TOOLS, entry))
    item = error["metadata"]["tanstack"]["interruptErrors"][0]
    assert (item["code"], item["source"]) == ("invalid-response-schema", "server")


async def test_unknown_interrupt_and_incomplete_batch() -> None:
    agent = tool_agent()
    error = await answer(agent, await paused(agent), OK_TOOLS[:2])
    assert codes(error) == [
        ("item", "unknown-interrupt"),
        ("batch", "incomplete-batch"),
        ("batch", "item-validation-failed"),
    ]
    assert error["metadata"]["tanstack"]["interruptErrors"][1]["interruptIds"] == [
        "approval_c1",
        "client_tool_c2",
        "client_tool_c3",
    ]


async def test_conflict_for_duplicate_entries() -> None:
    agent = tool_agent()
    error = await answer(agent, await paused(agent), [*OK_TOOLS, OK_TOOLS[0]])
    assert error["code"] == "conflict"


async def test_stale_without_parent_run_id_when_ids_do_not_identify_the_batch() -> None:
    agent = tool_agent()
    pause = await paused(agent)
    events = await collect(
        agent,
        {
            "threadId": "t",
            "runId": "r2",
            "messages": pause[-2]["messages"],
            "resume": [{"interruptId": "nope", "status": "cancelled"}],
        },
    )
    assert events[-1]["code"] == "stale"
    assert events[-1]["metadata"]["tanstack"]["interruptErrors"][0]["scope"] == "batch"


async def test_a_plain_ag_ui_resume_without_parent_run_id_is_accepted_when_ids_name_it() -> None:
    agent = tool_agent()
    pause = await paused(agent)
    events = await collect(
        agent,
        {"threadId": "t", "runId": "r2", "messages": pause[-2]["messages"], "resume": OK_TOOLS},
    )
    assert events[-1]["type"] == "RUN_FINISHED"
    assert any(e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == "c1" for e in events)


def generic_agent(expires_at: str | None = None, interrupt: InterruptDefinition = REVIEW) -> Agent:
    return Agent(
        model=turns(say("ok")),
        interrupts=[interrupt],
        middleware=[AskReview(expires_at, interrupt)],
    )


def generic_entry(pause: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    descriptor = pause[-1]["outcome"]["interrupts"][0]
    continuation = generic_continuation_from_descriptor(descriptor)
    assert continuation is not None
    metadata: dict[str, Any] = wrap_generic_continuation(continuation)
    metadata["tanstack:interruptContinuation"].update(overrides)
    return {
        "interruptId": descriptor["id"],
        "status": "resolved",
        "payload": {"approved": True},
        "metadata": metadata,
    }


async def test_expired_generic_interrupt() -> None:
    agent = generic_agent("2001-01-01T00:00:00.000Z")
    pause = await paused(agent)
    error = await answer(agent, pause, [generic_entry(pause)])
    assert error["code"] == "expired"
    assert error["metadata"]["tanstack"]["interruptErrors"][0]["source"] == "server"


async def test_stale_when_the_continuation_no_longer_matches_its_definition() -> None:
    agent = generic_agent()
    pause = await paused(agent)
    error = await answer(agent, pause, [generic_entry(pause, responseSchemaHash="sha256:forged")])
    assert error["code"] == "stale"
    assert "does not match its definition" in error["message"]
    error = await answer(agent, pause, [generic_entry(pause, definitionId="gone")])
    assert error["message"] == "Generic interrupt definition gone is unavailable."
    error = await answer(agent, pause, [generic_entry(pause, batchIndex=-1)])
    assert error["message"] == "Generic interrupt continuation contains invalid fields."


async def test_generic_response_is_validated_against_its_schema() -> None:
    agent = generic_agent()
    pause = await paused(agent)
    error = await answer(agent, pause, [{**generic_entry(pause), "payload": {"approved": "yes"}}])
    item = error["metadata"]["tanstack"]["interruptErrors"][0]
    assert (item["code"], item["path"]) == ("invalid-payload", ["approved"])

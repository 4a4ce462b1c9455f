"""The acceptance scenarios (`docs/protocol.md` §9) through three backends: the in-process
engine, our server over SSE, and a real TanStack AI server over SSE. Same client, same
assertions."""

from __future__ import annotations

import pytest

from chat_app.client import (
    ChatClient,
    ClientState,
    GenericInterrupt,
    InterruptHandle,
    ToolApprovalInterrupt,
    ToolCallPart,
    UnboundInterrupt,
    UsageError,
)
from tests.client.conftest import Backend

CLOCK = {"time": "10:00", "timeZone": "UTC"}
HOME = {"latitude": 1.5, "longitude": 2.5, "label": "Home"}


def calls(client: ChatClient, name: str) -> list[ToolCallPart]:
    return [p for m in client.messages for p in m.tool_calls if p.name == name]


def only(client: ChatClient, name: str) -> ToolCallPart:
    (part,) = calls(client, name)
    return part


def approval(client: ChatClient) -> ToolApprovalInterrupt:
    (item,) = [i for i in client.interrupts if isinstance(i, ToolApprovalInterrupt)]
    return item


async def test_an_approved_server_tool_runs_and_the_run_completes(backend: Backend) -> None:
    client, _ = backend.client()
    await client.send("transfer 25 to Ada")
    item = approval(client)
    assert (item.tool_name, item.original_args, item.can_resolve) == (
        "transfer", {"recipient": "Ada", "amount": 25}, True,
    )  # fmt: skip
    assert only(client, "transfer").status == "awaiting-approval"
    await client.resolve_interrupt(item.id, approved=True)
    part = only(client, "transfer")
    assert isinstance(part.output, dict)
    assert (part.status, part.output["recipient"], client.interrupts, client.error) == (
        "done", "Ada", (), None,
    )  # fmt: skip
    assert client.messages[-1].role == "assistant" and client.messages[-1].text


async def test_a_rejection_needs_its_reason_and_the_tool_does_not_run(backend: Backend) -> None:
    client, connection = backend.client()
    await client.send("transfer 25 to Ada")
    item = approval(client)
    await client.resolve_interrupt(item.id, approved=False)
    assert approval(client).errors[0].message == "This approval branch requires a payload."
    assert len(connection.requests) == 1  # nothing was sent
    await client.resolve_interrupt(item.id, approved=False, payload={"reason": "too much"})
    part = only(client, "transfer")
    assert (part.status, part.error, part.output) == (
        "rejected",
        "too much",
        {"reason": "too much"},
    )
    assert connection.requests[1]["resume"] == [
        {
            "interruptId": item.id,
            "payload": {"approved": False, "payload": {"reason": "too much"}},
            "status": "resolved",
        }
    ]


async def test_a_payloadless_rejection_reports_the_default_denial(backend: Backend) -> None:
    client, _ = backend.client()
    await client.send("delete project apollo")
    await client.resolve_interrupt(approval(client).id, approved=False)
    part = only(client, "delete_project")
    assert (part.status, part.error) == ("rejected", "User declined tool execution")


async def test_cancelling_sends_no_payload_and_the_tool_is_cancelled(backend: Backend) -> None:
    client, connection = backend.client()
    await client.send("delete project apollo")
    item = approval(client)
    await client.cancel(item.id)
    assert connection.requests[1]["resume"] == [{"interruptId": item.id, "status": "cancelled"}]
    assert only(client, "delete_project").status == "cancelled"
    assert client.error is None


async def test_edited_arguments_are_validated_then_replace_the_original(backend: Backend) -> None:
    client, connection = backend.client()
    await client.send("email ada@example.com about Launch")
    item = approval(client)
    await client.resolve_interrupt(item.id, approved=True, edited_args={"to": "ada@example.com"})
    assert approval(client).errors[0].code == "invalid-edited-args"
    assert len(connection.requests) == 1
    edited = {"to": "ada@example.com", "subject": "Launch moved", "body": "See you Friday."}
    await client.resolve_interrupt(item.id, approved=True, edited_args=edited)
    part = only(client, "send_email")
    assert isinstance(part.output, dict) and isinstance(part.input, dict)
    assert (part.status, part.output["subject"]) == ("done", "Launch moved")
    assert part.input["subject"] == "Launch"  # the history keeps the original arguments


async def test_a_client_tool_runs_by_itself_and_its_result_goes_into_history(
    backend: Backend,
) -> None:
    client, connection = backend.client(get_local_time=lambda args: CLOCK)
    await client.send("what time is it")
    assert backend.executed == ["get_local_time"]
    part = only(client, "get_local_time")
    assert (part.status, part.output, client.interrupts) == ("done", CLOCK, ())
    assert client.state.answered == ()  # the output is the call's result, not an answer
    body = connection.requests[1]
    tool_message = [m for m in body["messages"] if m["role"] == "tool"]
    assert tool_message == [
        {
            "role": "tool",
            "id": f"tool-{part.id}",
            "toolCallId": part.id,
            "content": '{"time":"10:00","timeZone":"UTC"}',
            "metadata": {"tanstack": {"toolResult": {}}},
        }
    ]
    assert body["resume"] == [
        {"interruptId": f"client_tool_{part.id}", "payload": CLOCK, "status": "resolved"}
    ]


async def test_a_client_tool_without_a_function_waits_in_tool_requests_for_its_result(
    backend: Backend,
) -> None:
    """A client that has no function for the demo's clock does not answer it by itself: the
    call waits, listed in `tool_requests`, until `add_tool_result` answers it."""
    client, connection = backend.client()
    await client.send("what time is it")
    [request] = client.tool_requests
    part = only(client, "get_local_time")
    assert (request.call_id, request.name, request.args) == (part.id, "get_local_time", {})
    assert (backend.executed, len(connection.requests), client.error) == ([], 1, None)
    await client.add_tool_result(request.call_id, CLOCK)
    assert client.tool_requests == ()
    assert only(client, "get_local_time").status == "done"
    assert len(connection.requests) == 2 and "10:00" in client.messages[-1].text
    # A client that runs the tool itself lists nothing.
    runs, _ = backend.client(get_local_time=lambda args: CLOCK)
    await runs.send("what time is it")
    assert runs.tool_requests == ()


async def test_an_approved_client_tool_runs_after_approval(backend: Backend) -> None:
    client, connection = backend.client(get_location=lambda args: HOME)
    await client.send("share my location")
    assert backend.executed == []
    await client.resolve_interrupt(approval(client).id, approved=True)
    assert backend.executed == ["get_location"]
    assert only(client, "get_location").output == HOME
    assert client.state.answered == ()
    assert len(connection.requests) == 3
    assert connection.requests[2]["parentRunId"] == connection.requests[1]["runId"]


async def test_a_denied_or_cancelled_client_tool_never_runs(backend: Backend) -> None:
    client, _ = backend.client(get_location=lambda args: HOME)
    await client.send("share my location")
    await client.resolve_interrupt(approval(client).id, approved=False)
    await client.send("share my location")
    await client.cancel(approval(client).id)
    assert backend.executed == []
    assert [p.status for p in calls(client, "get_location")] == ["rejected", "cancelled"]


async def test_a_batch_approved_with_true_runs_all_three_in_one_submission(
    backend: Backend,
) -> None:
    client, connection = backend.client()
    await client.send("pay invoices")
    assert [i.kind for i in client.interrupts] == ["tool-approval"] * 3
    await client.resolve_interrupts(True)
    assert [p.status for p in calls(client, "pay_invoice")] == ["done"] * 3
    assert len(connection.requests) == 2


async def test_a_batch_rejected_with_false_runs_nothing(backend: Backend) -> None:
    client, _ = backend.client()
    await client.send("pay invoices")
    await client.resolve_interrupts(False)
    assert [p.status for p in calls(client, "pay_invoice")] == ["rejected"] * 3
    assert client.error is None


async def test_cancel_interrupts_cancels_the_whole_batch(backend: Backend) -> None:
    client, connection = backend.client()
    await client.send("pay invoices")
    await client.cancel_interrupts()
    assert [p.status for p in calls(client, "pay_invoice")] == ["cancelled"] * 3
    assert all(entry["status"] == "cancelled" for entry in connection.requests[1]["resume"])


async def test_a_batch_answered_item_by_item_is_sent_once(backend: Backend) -> None:
    client, connection = backend.client()
    await client.send("pay invoices")
    first, second, third = client.interrupts
    await client.resolve_interrupt(first.id, approved=True)
    await client.resolve_interrupt(second.id, approved=False)
    assert len(connection.requests) == 1
    await client.resolve_interrupt(third.id, approved=True)
    assert len(connection.requests) == 2
    assert [p.status for p in calls(client, "pay_invoice")] == ["done", "rejected", "done"]


async def test_a_batch_answered_by_a_resolver_callback(backend: Backend) -> None:
    client, _ = backend.client()
    await client.send("pay invoices")

    def decide(item: InterruptHandle) -> None:
        assert isinstance(item.item, ToolApprovalInterrupt)
        item.resolve_interrupt(item.item.original_args["amount"] < 500)  # type: ignore[index]

    await client.resolve_interrupts(decide)
    assert [p.status for p in calls(client, "pay_invoice")] == ["done", "rejected", "done"]


async def test_a_generic_form_is_validated_then_answered(backend: Backend) -> None:
    client, connection = backend.client()
    await client.send("ship order 42")
    (item,) = client.interrupts
    assert isinstance(item, GenericInterrupt)
    assert (item.definition_id, item.can_resolve, item.response_schema is not None) == (
        "shipping-speed", True, True,
    )  # fmt: skip
    await client.resolve_interrupt(item.id, response={"speed": "warp", "giftWrap": False})
    assert client.interrupts[0].errors[0].code == "invalid-payload"
    assert len(connection.requests) == 1
    await client.resolve_interrupt(item.id, response={"speed": "express", "giftWrap": True})
    assert (client.interrupts, client.error) == ((), None)
    assert "express" in client.messages[-1].text
    resume = connection.requests[1]["resume"][0]
    assert resume["metadata"]["tanstack:interruptContinuation"]["definitionId"] == "shipping-speed"


async def test_a_generic_form_can_be_cancelled(backend: Backend) -> None:
    client, connection = backend.client()
    await client.send("ship order 7")
    await client.cancel(client.interrupts[0].id)
    entry = connection.requests[1]["resume"][0]
    assert (entry["status"], "payload" in entry, client.error) == ("cancelled", False, None)
    [kept] = client.state.answered
    assert kept.resolution["status"] == "cancelled"


async def test_an_answered_question_is_kept_where_it_was_asked(backend: Backend) -> None:
    """Neither the question nor its answer is a message: the client keeps them, after the
    message it was asked at, through a reload and the conversation's later pauses."""
    client, _ = backend.client()
    await client.send("ship order 42")
    (item,) = client.interrupts
    asked_at = client.messages[-1].id
    await client.resolve_interrupt(item.id, response={"speed": "express", "giftWrap": True})
    [kept] = client.state.answered
    assert (kept.item.id, kept.item.message, kept.after) == (item.id, item.message, asked_at)
    assert kept.resolution["payload"] == {"speed": "express", "giftWrap": True}
    assert client.messages[-1].id != asked_at  # the reply came after it

    restored = ChatClient.restore(
        ClientState.from_json(client.state.to_json()), backend.client()[1],
        tools=list(client.tools.values()), interrupts=backend.definitions,
    )  # fmt: skip
    assert restored.state.answered == client.state.answered
    await restored.send("ship order 7")
    (second,) = restored.interrupts
    await restored.cancel(second.id)
    assert [q.item.id for q in restored.state.answered] == [item.id, second.id]
    assert restored.state.answered[1].resolution["status"] == "cancelled"


async def test_an_answer_on_its_way_when_the_page_reloads_is_not_kept(backend: Backend) -> None:
    """Restored from a state saved while the answer was on its way, the send counts as failed
    (the client cannot tell it arrived): the question is open again, not also answered, and
    what is kept is the answer that goes next."""
    client, _ = backend.client()
    await client.send("ship order 42")
    (item,) = client.interrupts
    saved: list[str] = []
    client.on_change = lambda c: saved.append(c.state.to_json()) if c.state.resuming else None
    await client.resolve_interrupt(item.id, response={"speed": "express", "giftWrap": False})
    in_flight = ClientState.from_json(saved[-1])  # mid-reply, the answer still unconfirmed
    assert [q.item.id for q in in_flight.answered] == [item.id]

    restored = ChatClient.restore(
        in_flight, backend.client()[1], tools=list(client.tools.values()),
        interrupts=backend.definitions,
    )  # fmt: skip
    assert [i.id for i in restored.interrupts] == [item.id]
    assert not restored.state.answered
    await restored.cancel(item.id)  # this time, not the express shipping
    [kept] = restored.state.answered
    assert kept.resolution["status"] == "cancelled"


async def test_a_refused_answer_is_not_kept(backend: Backend) -> None:
    client, _ = backend.client()
    await client.send("ship order 42")
    (item,) = client.interrupts
    await client.resolve_interrupt(item.id, response={"speed": "fast"})  # no giftWrap
    assert client.state.answered == ()  # refused here: nothing was sent


async def test_a_foreign_unbound_pause_is_shown_and_does_not_block(backend: Backend) -> None:
    client, connection = backend.client()
    await client.send("deploy")
    kinds = sorted(i.kind for i in client.interrupts)
    assert kinds == ["tool-approval", "unbound"]
    (foreign,) = [i for i in client.interrupts if isinstance(i, UnboundInterrupt)]
    assert (foreign.can_resolve, foreign.message is not None) == (False, True)
    try:
        await client.resolve_interrupt(foreign.id, response={})
        raise AssertionError("an unbound item must not be answerable")
    except UsageError:
        pass
    ours = approval(client).id
    await client.resolve_interrupt(ours, approved=True)
    assert [e["interruptId"] for e in connection.requests[1]["resume"]] == [ours]
    assert only(client, "deploy").status == "done"


async def test_a_pending_generic_resumes_after_the_state_is_serialized_and_restored(
    backend: Backend,
) -> None:
    client, _ = backend.client()
    await client.send("ship order 9")
    await client.resolve_interrupt(client.interrupts[0].id, response={"speed": "fast"})
    saved = client.state.to_json()
    await client.aclose()

    restored = ChatClient.restore(
        ClientState.from_json(saved),
        backend.client()[1],
        tools=list(client.tools.values()),
        interrupts=backend.definitions,
    )
    (item,) = restored.interrupts
    assert (item.kind, item.status, item.draft) == (
        "generic",
        "error",
        {"response": {"speed": "fast"}},
    )
    assert [m.text for m in restored.messages] == [m.text for m in client.messages]
    await restored.resolve_interrupt(item.id, response={"speed": "standard", "giftWrap": False})
    assert (restored.interrupts, restored.error) == ((), None)
    assert "standard" in restored.messages[-1].text


async def test_a_client_tool_result_its_schema_refuses_is_not_sent_and_the_call_still_waits(
    backend: Backend,
) -> None:
    """The demo's clock answers `{time, timeZone}`: a failure (`{"error": …}`) or an output
    without `time` has no place in that schema. Given by hand, either is refused at once,
    nothing is sent or written, and the call waits for a result that fits."""
    client, connection = backend.client()
    await client.send("what time is it")
    [request] = client.tool_requests
    for output, error, said in (
        (None, "clock unavailable", "get_local_time failed (clock unavailable), and its output "
         "schema has no room for a failure"),
        ({"timeZone": "UTC"}, None, "The result of get_local_time was not sent: "),
    ):  # fmt: skip
        try:
            await client.add_tool_result(request.call_id, output, error=error)
        except UsageError as refused:
            assert said in str(refused) and "'time' is a required property" in str(refused)
        else:
            raise AssertionError("the refused result was taken")
        assert (client.tool_requests, len(connection.requests)) == ((request,), 1)
        assert only(client, "get_local_time").status != "done" and client.error is None
    await client.add_tool_result(request.call_id, CLOCK)
    assert client.tool_requests == () and "10:00" in client.messages[-1].text
    # Or the call is given up, its failure told in the history; nothing is left to give up.
    await client.send("what time is it")
    [request] = list(client.tool_requests)
    await client.cancel_tool_call(request.call_id, error="clock unavailable")
    assert client.tool_requests == () and client.error is None
    part = calls(client, "get_local_time")[-1]
    assert (part.status, part.error) == ("error", "clock unavailable")
    assert connection.requests[-1]["resume"] == [
        {"interruptId": f"client_tool_{part.id}", "status": "cancelled"}
    ]
    try:
        await client.cancel_tool_call(request.call_id)
    except UsageError as nothing:
        assert "waits for a result" in str(nothing)
    else:
        raise AssertionError("a call already given up was given up again")


async def test_a_client_tool_whose_failure_its_schema_refuses_is_cancelled_and_the_run_goes_on(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool function that raises, where the output schema has no room for a failure: the
    call is cancelled (the protocol's answer for a tool not run), so the agent goes on
    rather than wait for ever; the history (and the call) carries the failure, the log why
    it was not sent as the tool's result."""

    def broken(args: object) -> object:
        raise RuntimeError("clock unavailable")

    client, connection = backend.client(get_local_time=broken)
    await client.send("what time is it")
    part = only(client, "get_local_time")
    assert len(connection.requests) == 2, "the cancelled call went, and the run went on"
    assert connection.requests[1]["resume"] == [
        {"interruptId": f"client_tool_{part.id}", "status": "cancelled"}
    ]
    assert (client.error, client.tool_requests, client.interrupts) == (None, (), ())
    assert (part.status, part.error) == ("error", "clock unavailable")
    assert any(m.get("role") == "tool" and m.get("error") == "clock unavailable"
               for m in connection.requests[1]["messages"])  # fmt: skip
    assert client.state.status == "ready" and client.messages[-1].role == "assistant"
    [logged] = [r.getMessage() for r in caplog.records if "Cancelled client tool" in r.message]
    assert "get_local_time failed (clock unavailable)" in logged

"""The client's state round-trips through JSON, and a restored client picks up where it was."""

from __future__ import annotations

from chat_app.client import ChatClient, ClientState, MockConnection
from tests.client.builders import THREAD, approval, plain_tool
from tests.client.test_chat_client import finished, paused_client


async def test_client_state_survives_a_json_round_trip_unchanged() -> None:
    client, _ = paused_client()
    await client.send("go")
    await client.resolve_interrupt("approval_c1", approved=True, payload={"not": "allowed"})
    state = client.state
    assert ClientState.from_json(state.to_json()) == state
    assert state.interrupts[0].errors[0].code == "invalid-payload"


async def test_a_submission_in_flight_when_saved_is_retryable_after_restore() -> None:
    client, _ = paused_client()
    await client.send("go")
    client.manager.resolve("approval_c1", approved=True)  # staged and "sent", never settled
    saved = client.state.to_json()
    connection = MockConnection(lambda body: finished(str(body["runId"])))
    restored = ChatClient.restore(saved, connection, tools=[plain_tool()])
    (error,) = restored.interrupt_errors
    assert (error.code, error.retryable, restored.interrupts[0].status) == (
        "transport",
        True,
        "error",
    )
    await restored.retry_interrupts()
    (body,) = connection.requests
    assert (body["threadId"], body["parentRunId"]) == (THREAD, "run-1")
    assert body["resume"] == [
        {"interruptId": "approval_c1", "payload": {"approved": True}, "status": "resolved"}
    ]
    assert restored.interrupts == ()


async def test_a_restored_batch_keeps_staged_answers_and_submits_when_complete() -> None:
    tool = plain_tool()
    stream = [
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "run-1",
            "outcome": {
                "type": "interrupt",
                "interrupts": [approval(tool, "a"), approval(tool, "b")],
            },
        },
    ]
    client = ChatClient(
        MockConnection(lambda body: stream), tools=[tool], thread_id="t", new_id=lambda: "run-1"
    )
    await client.send("go")
    await client.resolve_interrupt("approval_a", approved=False)
    connection = MockConnection(lambda body: finished("run-2"))
    restored = ChatClient.restore(client.state.to_json(), connection, tools=[tool])
    assert [i.status for i in restored.interrupts] == ["staged", "pending"]
    await restored.resolve_interrupt("approval_b", approved=True)
    resume = connection.requests[0]["resume"]
    assert isinstance(resume, list)
    assert [e["interruptId"] for e in resume] == ["approval_a", "approval_b"]

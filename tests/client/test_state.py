"""The client's state round-trips through JSON, and a restored client picks up where it was."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Mapping

import pytest

from chat_app.client import INTERRUPTED, ChatClient, ClientState, MockConnection, UsageError
from chat_app.client._chat import CUT_OFF_AFTER_APPLIED
from tests.client.builders import THREAD, approval, plain_tool
from tests.client.test_chat_client import finished, pause, paused_client


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


async def _saved_mid_continuation(*, result_back: bool) -> str:
    """A client's state saved while its continuation streams (`result_back`: after its
    tool's result came back), as the desk stores a run it carries."""
    saved_now = asyncio.Event()

    async def continuation() -> AsyncIterator[Mapping[str, object]]:
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": "run-2"}
        if result_back:
            yield {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "r",
                   "content": '{"ok":true}', "role": "tool"}  # fmt: skip
        yield {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Deleted"}
        saved_now.set()
        await asyncio.Event().wait()

    replies = iter([pause(), continuation()])
    client = ChatClient(
        MockConnection(lambda body: next(replies)), tools=[plain_tool()], thread_id="t",
        new_id=iter(["run-1", "run-2"]).__next__,
    )  # fmt: skip
    await client.send("go")
    return await _saved_once(client, client.resolve_interrupt("approval_c1", approved=True),
                             saved_now)  # fmt: skip


async def _saved_once(client: ChatClient, run: Awaitable[None], saved_now: asyncio.Event) -> str:
    """`client`'s state as saved once `saved_now` is set while `run` streams; `run` is then
    cut, as a process that stopped cuts it."""
    running = asyncio.ensure_future(run)
    await saved_now.wait()
    saved = client.state.to_json()
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    return saved


async def test_a_submission_the_server_applied_is_not_sent_again_after_a_restore() -> None:
    """The state was saved while the continuation streamed, after its tool's result came
    back (a worker that died mid-reply): the answer stands, nothing is retried."""
    saved = await _saved_mid_continuation(result_back=True)
    assert ClientState.from_json(saved).resuming

    connection = MockConnection(lambda body: finished(str(body["runId"])))
    restored = ChatClient.restore(saved, connection, tools=[plain_tool()])
    state = restored.state
    assert (state.interrupts, state.interrupt_errors, state.can_retry) == ((), (), False)
    assert state.error == CUT_OFF_AFTER_APPLIED and not state.refused
    (call,) = [part for m in restored.messages for part in m.tool_calls]
    assert (call.status, call.output) == ("done", {"ok": True})
    assert connection.requests == []


async def test_a_snapshot_of_a_run_going_on_elsewhere_is_shown_running_not_failed() -> None:
    """Restored with `running` (the desk stored it mid-run and carries it on), a snapshot
    whose answer is in flight is neither cut off nor a failed send: it streams as it stood,
    with nothing to retry, and the client sends nothing of it."""
    for result_back in (True, False):
        saved = await _saved_mid_continuation(result_back=result_back)
        connection = MockConnection(lambda body: finished(str(body["runId"])))
        shown = ChatClient.restore(saved, connection, tools=[plain_tool()], running=True)
        state = shown.state
        assert shown.running_elsewhere and state.status == "streaming" and state.resuming
        assert (state.error, state.interrupt_errors, state.can_retry) == (None, (), False)
        assert not state.can_resend and state.messages[-1].text == "Deleted"
        for act in (shown.send("more"), shown.go_on(), shown.resend()):
            with pytest.raises(UsageError, match="running elsewhere"):
                await act
        with pytest.raises(UsageError):  # its answer is in flight
            await shown.retry_interrupts()
        assert connection.requests == []

        # As a reload reads it: the reply cut off, or the send failed and to retry.
        failed = ChatClient.restore(saved, connection, tools=[plain_tool()]).state
        if result_back:
            assert failed.error == CUT_OFF_AFTER_APPLIED
        else:
            assert failed.can_retry and failed.interrupt_errors


async def _saved_mid_reply(*, tool_ran: bool) -> str:
    """A client's state saved while its message's own run streams (`tool_ran`: after a tool
    the agent ran without asking returned), as a page saves it token by token."""
    saved_now = asyncio.Event()

    async def reply() -> AsyncIterator[Mapping[str, object]]:
        yield {"type": "RUN_STARTED", "threadId": "t", "runId": "run-1"}
        if tool_ran:
            yield {"type": "TOOL_CALL_START", "toolCallId": "k", "toolCallName": "lookup",
                   "parentMessageId": "a"}  # fmt: skip
            yield {"type": "TOOL_CALL_END", "toolCallId": "k"}
            yield {"type": "TOOL_CALL_RESULT", "toolCallId": "k", "messageId": "r",
                   "content": '{"rate":3}', "role": "tool"}  # fmt: skip
        yield {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "I'm"}
        saved_now.set()
        await asyncio.Event().wait()

    client = ChatClient(MockConnection(lambda body: reply()), thread_id="t")
    return await _saved_once(client, client.send("go"), saved_now)


async def test_a_reply_stored_mid_stream_by_a_process_that_died_is_retried_not_ended() -> None:
    """`died`: the message's own run stopped with the process that stored it. Its cut reply
    is a failed send that Retry runs again (once), or, where a tool already ran for the
    message, one that goes on from its result. Without `died` the reply stands as if ended."""
    saved = await _saved_mid_reply(tool_ran=False)
    connection = MockConnection(lambda body: finished(str(body["runId"])))

    as_ended = ChatClient.restore(saved, connection).state
    assert (as_ended.status, as_ended.error, as_ended.can_resend) == ("ready", None, False)

    cut = ChatClient.restore(saved, connection, died=True)
    state = cut.state
    assert (state.status, state.error, state.error_code) == ("error", INTERRUPTED, "transport")
    assert (state.can_resend, state.can_go_on) == (True, False)
    await cut.resend()
    (body,) = connection.requests
    sent = body["messages"]
    assert isinstance(sent, list) and [m["content"] for m in sent] == ["go"]  # cut words dropped
    assert cut.state.status == "ready" and cut.messages[-1].text == "ok"

    ran = await _saved_mid_reply(tool_ran=True)
    state = ChatClient.restore(ran, connection, died=True).state
    assert (state.error, state.can_resend, state.can_go_on) == (INTERRUPTED, False, True)

    # A continuation in flight is the same failed send, `died` or not.
    mid = await _saved_mid_continuation(result_back=False)
    assert ChatClient.restore(mid, connection, died=True).state == (
        ChatClient.restore(mid, connection).state
    )


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

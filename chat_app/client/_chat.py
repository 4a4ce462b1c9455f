"""`ChatClient`: Python's counterpart of `@tanstack/ai-client`'s ChatClient.

Owns `ChatClient`. Sends messages, folds the event stream into messages with parts, hands
each interrupt batch to the `InterruptManager`, runs registered client tools by itself, and
sends the continuation (fresh run id, same thread, `parentRunId`, full history, canonical
`resume`) when a batch is complete. Run and transport failures never raise: they land on
`error` (and, for a continuation, on the interrupt errors, with retry when retryable).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from chat_app.interrupts import (
    ABSENT,
    APPROVAL_ID_PREFIX,
    Decision,
    InterruptError,
    check_decision,
    interrupt_error_from_wire,
    raw_interrupt_binding,
    read_decision,
    tanstack_metadata,
    tool_call_id_of,
)

from ._connections import Connection
from ._errors import ClientError, RunError, TransportError, UsageError
from ._items import (
    AnsweredQuestion,
    GenericInterrupt,
    InterruptItem,
    Submission,
    ToolApprovalInterrupt,
)
from ._manager import ChangeSource, InterruptManager, TransactionResolver
from ._messages import ChatMessage, WireMessages
from ._processor import StreamProcessor, StreamState, new_message_id
from ._records import client_tool_target, same_batch
from ._request import build_run_input, new_run_id
from ._state import INTERRUPTED, ClientState, ClientStatus
from ._tools import ClientInterruptDefinition, ClientTool, DefinitionLike, ToolRequest

__all__ = ["ChatClient"]

_log = logging.getLogger(__name__)

_CONTINUATION_FAILED = "Interrupt continuation could not be started."
#: A stream that ended with neither `RUN_FINISHED` nor `RUN_ERROR`.
UNFINISHED_RUN = "The agent's stream ended without finishing the run."
#: A client restored while its continuation was in flight, after the server had applied it.
CUT_OFF_AFTER_APPLIED = (
    "Your answer was applied, but the rest of the agent's reply was lost: the connection "
    "broke while it was streaming."
)
#: What a client restored from a run still going on elsewhere says when asked to act.
RUNNING_ELSEWHERE = "The conversation is running elsewhere: wait for its reply."
#: What a person is told of answers the server refused as a replay (`answered_before`).
ANSWERED_BEFORE = (
    "The ledger already holds these answers, from an earlier send whose end was lost (the "
    "app stopped, or the ledger answered too late), so they are not sent again. What they "
    "approved may not have run: check, and ask again in a new message if it did not."
)


class ChatClient:
    """A headless chat client for any AG-UI agent, with human-in-the-loop interrupts.

    Example::

        client = ChatClient(SSEConnection(url), tools=ClientTool.from_manifest(manifest))
        await client.send("transfer 25 to Ada")
        await client.resolve_interrupt(client.interrupts[0].id, approved=True)

    Parameters:
        connection: where requests go (`InProcessConnection`, `SSEConnection`, …).
        tools: client tools: run in the client when they have `execute`, and used to type
            tool approvals (their schema hashes must match the server's).
        interrupts: generic interrupt definitions this client answers with typed responses.
        thread_id: the conversation id (generated when absent).
        on_change: called with the client after every change, for UIs.
    """

    def __init__(
        self,
        connection: Connection,
        *,
        tools: Iterable[ClientTool] = (),
        interrupts: Iterable[DefinitionLike] = (),
        thread_id: str | None = None,
        forwarded_props: Mapping[str, object] | None = None,
        context: Sequence[Mapping[str, object]] = (),
        on_change: Callable[[ChatClient], None] | None = None,
        new_id: Callable[[], str] = new_run_id,
        processor: StreamProcessor | None = None,
    ) -> None:
        self.connection = connection
        self.tools = {tool.name: tool for tool in tools}
        self.thread_id = thread_id or new_message_id("thread")
        self.forwarded_props = dict(forwarded_props or {})
        self.context = [dict(item) for item in context]
        self.on_change = on_change
        self._new_id = new_id
        self._processor = processor or StreamProcessor()
        self._stream = StreamState()
        #: Each message's wire form, kept between requests (a request carries them all).
        self._wire = WireMessages()
        self._manager = InterruptManager(
            tools=self.tools.values(),
            definitions=[ClientInterruptDefinition.of(item) for item in interrupts],
            on_change=self._manager_changed,
        )
        self._error: ClientError | None = None
        #: The last message's own run failed: `resend()` may run it again.
        self._resend = False
        #: The last answers were applied (their tools' results came back) and the reply
        #: after them failed: `go_on()` asks for the reply; sending them again would be a
        #: replay, and running the message again would ask for the tools again.
        self._go_on = False
        self._streaming = False
        #: Restored from a run going on elsewhere (`restore(running=True)`): it only shows it.
        self._elsewhere = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._current_run_id: str | None = None
        self._submitting: Submission | None = None
        self._submission_errors: list[InterruptError] | None = None
        self._answered: tuple[AnsweredQuestion, ...] = ()

    # --- reading ------------------------------------------------------------------------

    @property
    def messages(self) -> tuple[ChatMessage, ...]:
        return self._stream.messages

    @property
    def interrupts(self) -> tuple[InterruptItem, ...]:
        return self._manager.interrupts

    @property
    def tool_requests(self) -> tuple[ToolRequest, ...]:
        """Client tools the agent is waiting for this client to run, and that it does not run
        by itself (no `execute` registered): each is answered with `add_tool_result`."""
        return tuple(
            ToolRequest(call_id, name, dict(args) if isinstance(args, Mapping) else {})
            for call_id, name, args in self._manager.client_tool_requests()
            if (tool := self.tools.get(name)) is None or tool.execute is None
        )

    @property
    def interrupt_errors(self) -> tuple[InterruptError, ...]:
        return self._manager.errors

    @property
    def resuming(self) -> bool:
        return self._manager.resuming

    @property
    def error(self) -> ClientError | None:
        return self._error

    @property
    def can_go_on(self) -> bool:
        """`go_on()` applies: the answers were applied and only the reply after them failed."""
        return self._go_on and not self._streaming

    @property
    def running_elsewhere(self) -> bool:
        """Restored from a snapshot of a run still going on elsewhere (`restore`): the client
        shows it and sends nothing; a newer snapshot replaces it."""
        return self._elsewhere

    @property
    def status(self) -> ClientStatus:
        if self._streaming or self._elsewhere:
            return "streaming"
        return "error" if self._error is not None else "ready"

    @property
    def manager(self) -> InterruptManager:
        return self._manager

    @property
    def state(self) -> ClientState:
        """A serializable snapshot (see `ChatClient.restore`)."""
        return ClientState(
            thread_id=self.thread_id,
            messages=self._stream.messages,
            interrupts=self._manager.interrupts,
            interrupt_errors=self._manager.errors,
            resuming=self._manager.resuming,
            can_retry=self._manager.can_retry,
            can_resend=self._resend and not self._streaming,
            can_go_on=self.can_go_on,
            can_approve_all=self._manager.can_resolve_all(True),
            can_reject_all=self._manager.can_resolve_all(False),
            status=self.status,
            error=self._error.message if self._error else None,
            error_code=_error_code(self._error),
            agent_state=self._stream.agent_state,
            manager=self._manager.snapshot(),
            answered=self._answered,
        )

    @classmethod
    def restore(
        cls,
        state: ClientState | str | bytes,
        connection: Connection,
        *,
        tools: Iterable[ClientTool] = (),
        interrupts: Iterable[DefinitionLike] = (),
        forwarded_props: Mapping[str, object] | None = None,
        on_change: Callable[[ChatClient], None] | None = None,
        running: bool = False,
        died: bool = False,
    ) -> ChatClient:
        """Rebuild a client from `client.state` (or its JSON), e.g. after a page reload.

        A continuation that was in flight is a failed send, with retry (`InterruptManager.
        restore`), unless the server had already applied it: a result of one of its tool
        calls came back (the server records the answers before anything runs). Then it is not
        sent again, the batch is over, and `error` says that the reply was cut off.

        `running`: the snapshot was taken of a run that is still going on elsewhere (a desk
        worker, another tab, storing it as it streams). Nothing of it failed: it shows as it
        stands, streaming, its continuation still in flight, and the client sends nothing
        (`running_elsewhere`; every action raises `UsageError`) until a newer snapshot
        replaces it.

        `died`: the snapshot was stored mid-run by a process that has stopped since (a
        restart, a worker that died). A message's own run stored mid-stream is then a failed
        send that Retry runs again, or, where tools ran for the message already, one that
        goes on from their results (running the message again would ask for them again, and
        run them twice once approved); without `died` it stands as if it had ended, its reply
        cut off with nothing to retry. A continuation in flight is failed either way (above).
        """
        if not isinstance(state, ClientState):
            state = ClientState.from_json(state)
        client = cls(
            connection, tools=tools, interrupts=interrupts, thread_id=state.thread_id,
            forwarded_props=forwarded_props, on_change=on_change,
        )  # fmt: skip
        client._stream = StreamState(messages=state.messages, agent_state=state.agent_state)
        client._answered = state.answered
        if running:
            client._manager.restore(state.manager, in_flight=True)
            client._elsewhere = True
            return client
        in_flight = state.manager.active_submission
        if in_flight is not None and _applied(in_flight, state.messages):
            client._error = TransportError(CUT_OFF_AFTER_APPLIED)
            client._go_on = True
            return client
        client._manager.restore(state.manager)
        if in_flight is not None:  # a failed send now: its answers were not given after all
            client._forget_answers(in_flight, client._expired_ids())
        client._resend = state.can_resend
        client._go_on = state.can_go_on
        if died and state.status == "streaming" and in_flight is None and not client._resend:
            client._error = TransportError(INTERRUPTED)
            if state.results_since_asked:
                client._go_on = True
            else:
                client._resend = True
            return client
        if state.error is not None:  # still shown after a reload, until the next run
            client._error = (
                TransportError(state.error)
                if state.error_code == "transport"
                else RunError(state.error, run_code=state.error_code)
            )
        return client

    # --- conversation -------------------------------------------------------------------

    async def send(self, text: str) -> None:
        """Add a user message and run the agent (and any continuation that follows)."""
        if not text.strip():
            return
        self._check_idle()
        # A batch the server refused as a replay is over (`docs/protocol.md` §4.8): nothing
        # sends it again, so a new message goes on rather than wait for it.
        if self._manager.has_open_items and not self.state.answered_before:
            raise UsageError("Resolve or cancel the pending interrupts before sending.")
        self._manager.reset()
        self._stream = self._processor.add_user_message(self._stream, text)
        self._resend = await self._request() == "error"
        await self._drive(None)

    async def resend(self) -> None:
        """Run the last message again after its run failed (`state.can_resend`): a network
        failure, an HTTP error, a broken stream, a `RUN_ERROR`.

        What the failed run left after the message (a reply cut off mid-way) is dropped
        first, and the message is not added again. A tool the agent ran in the failed run
        without asking anyone may run again (as when the person sends the message again).
        """
        self._check_idle()
        if not self._resend:
            raise UsageError("There is no failed message to send again.")
        messages = self._stream.messages
        last = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
        if last is None:
            raise UsageError("There is no failed message to send again.")
        self._manager.reset()
        self._stream = replace(self._stream, messages=messages[: last + 1])
        self._resend = await self._request() == "error"
        await self._drive(None)

    async def go_on(self) -> None:
        """Ask the agent to go on from the conversation as it stands, with no new message:
        after the reply to applied answers failed (`can_go_on`: the model or the stream
        failed once the tools had run, or `ChatClient.restore` found the reply cut off), the
        model reads the tools' results and answers. Nothing that was answered is sent again,
        so nothing runs twice; a run that fails again may go on again."""
        self._check_idle()
        if self._manager.has_open_items:
            raise UsageError("Resolve or cancel the pending interrupts before going on.")
        messages = self._stream.messages
        if not messages:
            raise UsageError("There is no conversation to go on with.")
        if _cut_reply(messages):
            # The model answers again from the results: kept, the half sentence would stay
            # above the new reply, and the model would read it as said.
            self._stream = replace(self._stream, messages=messages[:-1])
        self._manager.reset()
        self._go_on = await self._request() == "error"
        self._resend = False
        await self._drive(None)

    async def run_again(self) -> None:
        """Whatever failed last, again, the one way that runs nothing twice: the
        continuation (`can_retry`), the reply after applied answers (`can_go_on`), or the
        message (`can_resend`). Raises `UsageError` when nothing failed."""
        if self._manager.can_retry:
            await self.retry_interrupts()
        elif self.can_go_on:
            await self.go_on()
        else:
            await self.resend()

    async def resolve_interrupt(
        self,
        interrupt_id: str,
        approved: bool | None = None,
        *,
        edited_args: object = ABSENT,
        payload: object = ABSENT,
        response: object = ABSENT,
    ) -> None:
        """Answer one item; when the batch is complete, send the continuation and await it.

        Tool approvals take `approved` (+ `edited_args`, `payload`); generic interrupts take
        `response`. An invalid answer puts an error on the item; nothing is sent.
        """
        submission = self._manager.resolve(
            interrupt_id, approved=approved, edited_args=edited_args, payload=payload,
            response=response,
        )  # fmt: skip
        await self._drive(submission)

    async def cancel(self, interrupt_id: str) -> None:
        """Abandon one item (a `cancelled` resume entry, no payload)."""
        await self._drive(self._manager.cancel_item(interrupt_id))

    async def expire(self, interrupt_id: str, note: str) -> None:
        """Close one item nobody decided in time: the same `cancelled` resume entry as
        `cancel`, which a server reads as the expiry once the item's time is up. The item
        (and its tool call) shows as expired with `note` ("Expired: nobody decided within 1
        day.") at once, and nothing can answer it any more; when the batch is complete, the
        continuation is sent and awaited, as for any answer."""
        # Read before: a batch this completes is submitting, and its items hidden.
        call_id = next(
            (
                item.tool_call_id
                for item in self._manager.interrupts
                if item.id == interrupt_id and isinstance(item, ToolApprovalInterrupt)
            ),
            None,
        )
        submission = self._manager.expire_item(interrupt_id, note)
        if call_id is not None:
            self._stream = self._processor.record_expiry(self._stream, call_id, note)
            self._notify()
        await self._drive(submission)

    def clear_resolution(self, interrupt_id: str) -> None:
        """Drop an item's staged answer and error."""
        self._manager.clear_item(interrupt_id)

    async def resolve_interrupts(self, resolution: bool | TransactionResolver) -> None:
        """Approve or reject all (payloadless approvals only), or answer all in one callback.

        The callback receives each answerable item's `InterruptHandle` and must call its
        methods synchronously and return `None`; otherwise nothing is staged.
        """
        if isinstance(resolution, bool):
            submission = self._manager.resolve_all(resolution)
        else:
            submission = self._manager.transaction(resolution)
        await self._drive(submission)

    async def cancel_interrupts(self) -> None:
        await self._drive(self._manager.cancel_all())

    async def retry_interrupts(self) -> None:
        """Re-send the identical submission after a retryable failure."""
        await self._drive(self._manager.retry())

    async def add_tool_result(
        self, tool_call_id: str, output: object = None, *, error: str | None = None
    ) -> None:
        """Report a client tool's result by hand (for tools registered without `execute`).

        A result the tool's output schema refuses is not sent, nor written into the history:
        `UsageError` says why, and the call still waits in `tool_requests`. A failure goes as
        `{"error": error}`, the protocol's shape for it, so it too must fit that schema."""
        name = self._manager.client_tool_name(tool_call_id)
        refused = _refused_result(self.tools.get(name or ""), tool_call_id, output, error)
        if refused is not None:
            raise UsageError(refused)
        await self._drive(self._deliver_tool_result(tool_call_id, output, error))

    async def cancel_tool_call(self, tool_call_id: str, error: str | None = None) -> None:
        """Give up a client tool's call: the agent reads it as cancelled (with `error`, the
        reason, in the history where its schema has no room for it as the tool's result)."""
        if self._manager.client_tool_name(tool_call_id) is None:
            raise UsageError(f"No client tool call {tool_call_id} waits for a result.")
        if error is None:
            await self._drive(self._manager.cancel_client_tool(tool_call_id))
        else:
            await self._drive(self._cancel_tool_call(tool_call_id, error))

    async def aclose(self) -> None:
        await self.connection.aclose()

    # --- driving runs -------------------------------------------------------------------

    def _check_idle(self) -> None:
        if self._elsewhere:
            raise UsageError(RUNNING_ELSEWHERE)
        if self._streaming or self._manager.resuming:
            raise UsageError("A run is already in progress.")

    async def _drive(self, submission: Submission | None) -> None:
        if self._elsewhere and submission is not None:
            raise UsageError(RUNNING_ELSEWHERE)
        while True:
            if submission is not None:
                await self._perform(submission)
            submission = await self._run_client_tools()
            if submission is None:
                return

    async def _perform(self, submission: Submission) -> None:
        await self._idle.wait()  # a continuation waits for the current stream to settle
        for entry in submission.resolutions:
            self._mirror_decision(entry)
        self._note_answers(submission)
        self._submitting = submission
        self._submission_errors = None
        try:
            outcome = await self._request(
                thread_id=submission.thread_id,
                parent_run_id=submission.interrupted_run_id,
                resume=submission.resolutions,
            )
        finally:
            self._submitting = None
        errors = self._submission_errors
        self._submission_errors = None
        # The run failed after the server took the answers: they were given, and only the
        # reply is owed (`docs/protocol.md` §4.8).
        applied = (
            not errors
            and outcome == "error"
            and (_applied(submission, self._stream.messages) or _model_failed(self._error))
        )
        self._go_on = applied
        if not applied and (errors or outcome not in ("finished", "interrupted")):
            self._manager.submission_failed(
                submission, message=_CONTINUATION_FAILED, errors=errors or ()
            )
            # Nothing was decided after all; an expiry not refused stays (it goes again).
            expired = self._expired_ids()
            self._forget_answers(submission, expired)
            for entry in submission.resolutions:
                interrupt_id = str(entry.get("interruptId", ""))
                call_id = tool_call_id_of(interrupt_id)
                if call_id is not None and interrupt_id not in expired:
                    self._stream = self._processor.forget_decision(self._stream, call_id)
        else:
            hydration = self._manager.hydration
            if (
                hydration is not None
                and hydration.interrupted_run_id == submission.interrupted_run_id
            ):
                self._manager.reset()
        self._manager.submission_settled(submission)

    async def _request(
        self,
        *,
        thread_id: str | None = None,
        parent_run_id: str | None = None,
        resume: Sequence[Mapping[str, object]] | None = None,
    ) -> str:
        """Stream one request; return how it ended (`finished`, `interrupted`, `error`)."""
        run_id = self._new_id()
        body = build_run_input(
            thread_id=thread_id or self.thread_id,
            run_id=run_id,
            parent_run_id=parent_run_id,
            resume=resume,
            messages=self._wire(self._stream.messages),
            tools=[tool.wire() for tool in self.tools.values()],
            context=self.context,
            forwarded_props=self.forwarded_props,
            # The agent's state goes back with the next request (a stateless server needs it);
            # `{}` until the agent has sent any, as TanStack's client always sends.
            state=self._stream.agent_state,
        )
        self._current_run_id = run_id
        self._streaming = True
        self._idle.clear()
        self._error = None
        self._resend = False
        self._go_on = False
        self._stream = self._processor.start_request(self._stream)
        self._notify()
        try:
            async for event in self.connection.stream(body):
                self._on_event(event)
            if self._stream.run_status not in ("finished", "interrupted", "error"):
                raise TransportError(UNFINISHED_RUN)
            if self._stream.run_status == "error":
                self._error = RunError(
                    self._stream.error or "The run failed.", run_code=self._stream.error_code
                )
            # The messages this run added or changed (a pause's `MESSAGES_SNAPSHOT` too) get
            # their wire form now, so that the continuation an Approve sends does not wait.
            self._wire(self._stream.messages)
            return self._stream.run_status
        except TransportError as error:
            self._error = error
            return "error"
        except Exception as error:  # a bug on this side must end the run, not leave it open
            _log.exception("Reading run %s failed", run_id)
            reason = str(error) or type(error).__name__
            self._error = ClientError(f"The agent's answer could not be read: {reason}")
            return "error"
        finally:
            self._streaming = False
            self._current_run_id = None
            self._idle.set()
            self._notify()

    def _on_event(self, event: Mapping[str, object]) -> None:
        kind = event.get("type")
        if kind == "RUN_ERROR" and self._submitting is not None:
            errors = self._correlated_failure(event, self._submitting)
            if errors is not None:
                self._submission_errors = errors
        self._stream = self._processor.apply(self._stream, event)
        if kind == "RUN_FINISHED" or kind == "RUN_ERROR":
            self._observe_terminal(event)
        self._notify()

    def _observe_terminal(self, event: Mapping[str, object]) -> None:
        if event.get("type") == "RUN_ERROR" and self._submitting is not None:
            return  # a failed continuation is a submission failure, handled after the stream
        if event.get("type") == "RUN_FINISHED" and self._stream.interrupts:
            run_id = event.get("runId")
            interrupted = self._current_run_id or (run_id if isinstance(run_id, str) else "")
            thread = event.get("threadId")
            self._manager.hydrate(
                thread_id=thread if isinstance(thread, str) and thread else self.thread_id,
                interrupted_run_id=interrupted,
                generation=_generation(self._stream.interrupts),
                descriptors=self._stream.interrupts,
            )
            return
        self._manager.reset()

    def _correlated_failure(
        self, event: Mapping[str, object], submission: Submission
    ) -> list[InterruptError] | None:
        """The structured errors of a `RUN_ERROR` that answers this submission, else `None`."""
        tanstack = tanstack_metadata(event)
        raw = tanstack.get("interruptErrors")
        if not isinstance(raw, list) or not raw:
            return None
        run_id = event.get("runId")
        if run_id is None:
            run_id = tanstack.get("runId")
        if run_id is not None and run_id != self._current_run_id:
            return None
        thread = event.get("threadId")
        if isinstance(thread, str) and thread != submission.thread_id:
            return None
        errors: list[InterruptError] = []
        for item in raw:
            error = interrupt_error_from_wire(item) if isinstance(item, Mapping) else None
            if error is None or not same_batch(error, submission):
                return None
            errors.append(error)
        return errors

    def _mirror_decision(self, entry: Mapping[str, object]) -> None:
        interrupt_id = str(entry.get("interruptId", ""))
        if not interrupt_id.startswith(APPROVAL_ID_PREFIX):
            return
        call_id = next(
            (
                part.id
                for message in reversed(self._stream.messages)  # the pause is at the end
                for part in message.tool_calls
                if part.approval_id == interrupt_id
            ),
            None,
        )
        if call_id is None:
            return
        decision = read_decision(entry, "approval")
        if isinstance(decision, Decision):
            outcome = decision.outcome
            if outcome != "answered":
                self._stream = self._processor.record_decision(self._stream, call_id, outcome)

    def _note_answers(self, submission: Submission) -> None:
        """Keep the questions this submission answers, with their answers, where the
        conversation stands (an expiry's cancellation too: the page says it expired). A
        question noted before (an answer sent again, or another answer after a failed send)
        keeps its place and takes this answer."""
        notes = {question.item.id: question for question in self._answered}
        entries = {str(entry.get("interruptId", "")): entry for entry in submission.resolutions}
        here = self._stream.messages[-1].id if self._stream.messages else ""
        tools = self._manager.client_tool_item_ids()  # their output is shown at the call
        for item in self._manager.items_of(entries):
            if isinstance(item, GenericInterrupt) and item.id not in tools:
                before = notes.get(item.id)
                notes[item.id] = AnsweredQuestion(
                    item=item,
                    resolution=dict(entries[item.id]),
                    after=before.after if before is not None else here,
                )
        self._answered = tuple(notes.values())

    def _forget_answers(self, submission: Submission, expired: set[str]) -> None:
        """Drop the notes of a send that failed, but the `expired` items' (they stay, and go
        again)."""
        sent = set(submission.interrupt_ids) - expired
        self._answered = tuple(q for q in self._answered if q.item.id not in sent)

    def _expired_ids(self) -> set[str]:
        return {i.id for i in self._manager.snapshot().items if i.status == "expired"}

    # --- client tools -------------------------------------------------------------------

    async def _run_client_tools(self) -> Submission | None:
        submission: Submission | None = None
        for call_id, name, args in self._manager.client_tool_requests():
            tool = self.tools.get(name)
            if tool is None or tool.execute is None or self._manager.resuming:
                continue
            error: str | None = None
            output: object = None
            try:
                output = await tool.run(dict(args) if isinstance(args, Mapping) else {})
            except Exception as failure:  # the tool's failure is reported, not raised
                error = str(failure) or type(failure).__name__
            if error is None:
                problems = check_decision(
                    Decision.answer(call_id, output), client_tool_target(tool), side="client"
                )
                if problems:
                    error, output = problems[0].message, None
            if error is not None and (refused := _refused_result(tool, call_id, None, error)):
                # Its schema has no room for a failure: the call is cancelled, and the agent
                # goes on without it, rather than wait for a result nobody can give.
                _log.warning("Cancelled client tool call %s: %s", call_id, refused)
                submission = self._cancel_tool_call(call_id, error) or submission
                continue
            submission = self._deliver_tool_result(call_id, output, error) or submission
        return submission

    def _cancel_tool_call(self, tool_call_id: str, error: str) -> Submission | None:
        # The failure is written into the history, where the model reads it (the call shows
        # it too); its item is answered as cancelled, the protocol's answer for a tool that
        # did not run.
        self._stream = self._processor.add_tool_result(self._stream, tool_call_id, None, error)
        self._notify()
        return self._manager.cancel_client_tool(tool_call_id)

    def _deliver_tool_result(
        self, tool_call_id: str, output: object, error: str | None
    ) -> Submission | None:
        self._stream = self._processor.add_tool_result(self._stream, tool_call_id, output, error)
        self._notify()
        _, submission = self._manager.resolve_client_tool_output(
            tool_call_id, {"error": error} if error is not None else output
        )
        return submission

    # --- notifications ------------------------------------------------------------------

    def _manager_changed(self, source: ChangeSource) -> None:
        self._notify()

    def _notify(self) -> None:
        if self.on_change is not None:
            self.on_change(self)


def _refused_result(
    tool: ClientTool | None, tool_call_id: str, output: object, error: str | None
) -> str | None:
    """Why the client will not send this result of `tool` (its output schema refuses it),
    or None. A failure is sent as `{"error": error}` and checked as such."""
    if tool is None:
        return None  # nothing to check it against: the server decides
    value = {"error": error} if error is not None else output
    problems = check_decision(Decision.answer(tool_call_id, value), client_tool_target(tool),
                              side="client")  # fmt: skip
    if not problems:
        return None
    if error is None:
        return (f"The result of {tool.name} was not sent: {problems[0].message}. Send one its "
                "output schema allows, or give the call up with cancel_tool_call().")
    return (f"{tool.name} failed ({error}), and its output schema has no room for a failure "
            f"(sent as {{\"error\": …}}: {problems[0].message}): the failure was not sent. "
            "Give the call up with cancel_tool_call(call_id, error=…), or send an output.")


def _applied(submission: Submission, messages: Sequence[ChatMessage]) -> bool:
    """Whether the server sent back a result of a tool call the submission approved or
    rejected: it records a continuation's answers before it runs anything."""
    answered = set(submission.interrupt_ids)
    return any(
        part.approval_id in answered and part.has_output
        for message in messages
        for part in message.tool_calls
    )


def _model_failed(error: ClientError | None) -> bool:
    """The run ended with the agent's model failing (`RUN_ERROR` code `model-…`): this
    server's agent asks it only after a continuation's answers are applied."""
    return isinstance(error, RunError) and (error.run_code or "").startswith("model-")


def _error_code(error: ClientError | None) -> str | None:
    """`ClientState.error_code`: the `RUN_ERROR`'s own code for a run error (a refused
    continuation's is an interrupt error code), `transport` for any other failure."""
    if error is None:
        return None
    return error.run_code if isinstance(error, RunError) else error.code


def _generation(descriptors: Sequence[Mapping[str, object]]) -> int:
    """The common binding generation of the batch, else 0 (`interruptGeneration`)."""
    generation: int | None = None
    for descriptor in descriptors:
        binding = raw_interrupt_binding(descriptor)
        value = binding.get("generation") if binding is not None else None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return 0
        if generation is not None and generation != value:
            return 0
        generation = value
    return generation or 0


def _cut_reply(messages: Sequence[ChatMessage]) -> bool:
    """Whether the last message is the words of a reply to tools' results that was cut off
    (text alone, after a message that called tools), which going on replaces."""
    if len(messages) < 2:
        return False
    last = messages[-1]
    return (
        last.role == "assistant" and last.raw is None and not last.tool_calls
        and bool(messages[-2].tool_calls)
    )  # fmt: skip

"""The agent and its run loop: stream a turn, pause for people, continue statelessly.

Owns `Agent`. `Agent.run(input)` is an async iterator of AG-UI events. A run that needs
decisions ends with exactly one `RUN_FINISHED` carrying an interrupt outcome, right after
`MESSAGES_SNAPSHOT`. A continuation (a new run whose `resume` answers that batch, with the
full history) is validated as a whole before anything runs, then picks up where the paused
run stopped. Nothing is kept between runs.

Deliberate differences from TanStack's `chat()`: `RUN_STARTED` is always the first event of a
continuation, as AG-UI requires (TanStack streams tool results before it, and sends a refused
continuation's `RUN_ERROR` alone); and a continuation's result for a call the paused run made
comes right after a `TOOL_CALL_START`/`TOOL_CALL_END` of that call, so every result answers a
call started in its own run (`docs/protocol.md` §3.7, §7.1).
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    RunAgentInput,
    RunErrorEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from chat_app.interrupts import (
    ABSENT,
    APPROVAL_ID_PREFIX,
    CANCELLED_RESULT,
    CLIENT_TOOL_ID_PREFIX,
    DEFAULT_DENIED_RESULT,
    POLICY_METADATA_KEY,
    BatchInterruptError,
    BatchInterruptErrorCode,
    BoundaryPhase,
    InterruptError,
    InterruptResumeValidationError,
    ItemInterruptError,
    ItemInterruptErrorCode,
    JSONSchema,
    expired_result,
    tool_call_id_of,
)
from chat_app.trust import (
    ANONYMOUS,
    AuditEntry,
    Identity,
    Ledger,
    LedgerUnavailable,
    Policy,
    Rule,
    Sealer,
    expiry_words,
    iso_from_epoch,
    pause_record,
    policy_decision_record,
    refusal_record,
    verified_by,
)

from . import events
from .definitions import InterruptDefinition, InterruptRequest, Resolutions
from .descriptors import (
    approval_descriptor,
    client_tool_descriptor,
    generic_descriptor,
    generic_fields,
    new_generic_interrupt_id,
)
from .gate import Gate, Requester, check_policy
from .history import (
    answers_at,
    arguments_are_valid_json,
    parse_arguments,
    tool_message,
    tool_result_positions,
)
from .messages import History
from .middleware import Middleware, RunContext, combine_tool_resumes, run_boundary
from .models import Model, ModelError, ModelRequest, TextDelta, ToolCallDelta
from .resume import PendingCall, ResumePlan, plan_continuation
from .tools import Tool

logger = logging.getLogger(__name__)

#: The `RUN_ERROR` code of a run the ledger stopped by not answering (`docs/protocol.md` §4.8).
LEDGER_UNAVAILABLE = "ledger-unavailable"
#: How much of a call's unreadable arguments its error result quotes.
SENT_ARGUMENTS_SHOWN = 200


#: The policy of an agent that has none: no rule names anyone, so whoever asked decides.
_NO_RULES = Policy.empty()


class Agent:
    """Tools, generic interrupt definitions, middleware and a model.

    Example::

        agent = Agent(model=ScriptedModel(script), tools=[transfer])
        async for event in agent.run(run_input):
            ...
    """

    def __init__(
        self,
        *,
        model: Model,
        tools: Sequence[Tool] = (),
        interrupts: Sequence[InterruptDefinition] = (),
        middleware: Sequence[Middleware] = (),
        max_turns: int = 8,
        clock: Callable[[], float] = time.time,
        sealer: Sealer | None = None,
        ledger: Ledger | None = None,
        policy: Policy | None = None,
    ) -> None:
        names = [item.id for item in interrupts]
        if len(set(names)) != len(names):
            raise ValueError("Interrupt definition ids must be unique.")
        self.model = model
        self.tools = {item.name: item for item in tools}
        self.definitions = {item.id: item for item in interrupts}
        self.middleware = list(middleware)
        self.max_turns = max_turns
        self.clock = clock
        #: Authenticates what the server proposes (see `chat_app.trust.seal`).
        self.sealer = sealer
        #: Records pauses, answers (exactly once) and executions (see `chat_app.trust.ledger`).
        self.ledger = ledger
        #: Who may decide what (see `chat_app.trust.policy`); `None`: whoever asked.
        if policy is not None:
            check_policy(policy, self.tools, self.definitions)
        self.policy = policy

    def tool_manifest(self) -> list[dict[str, object]]:
        return [item.manifest() for item in self.tools.values()]

    def input_schemas(self) -> dict[str, JSONSchema | None]:
        """Each tool's input schema, by the tool's name."""
        return {name: tool.input_schema for name, tool in self.tools.items()}

    async def run(
        self,
        input: RunAgentInput,
        *,
        identity: Identity = ANONYMOUS,
        cosigners: Mapping[str, Sequence[Identity]] | None = None,
        deciders: Mapping[str, Identity] | None = None,
        kept_by_desk: bool = False,
    ) -> AsyncIterator[BaseEvent]:
        """Stream one run's AG-UI events, for `identity` (verified by the caller: a session,
        a trusted proxy or a token; never the request body).

        `cosigners` is for a trusted caller in this process only (the approval desk, which
        collects and stores approvals): by interrupt id as the resume entry names it, the
        verified people who approved that item earlier, not including `identity` (whose
        answer is this run's resume entry). They count only towards a policy rule's quorum,
        and each must be allowed by the rule; the trail's decision record lists them. The
        HTTP route never passes any: a request body cannot claim who approved.

        `deciders`, from the same trusted caller, names by interrupt id the verified person
        who gave that item's answer when it is not `identity` (a batch decided by several
        people): each answer is checked, and recorded, as theirs.

        `kept_by_desk`, from the same kind of caller: the conversation is one the approval
        desk keeps, so its pauses are sealed for the desk (`Sealer.for_desk`) and only the
        desk decides them; the HTTP route, a client's, is refused them.
        """
        run = _Run(self, input, identity, cosigners or {}, deciders or {}, kept_by_desk)
        try:
            async for event in run.events():
                yield event
        except ModelError as error:  # the provider said no: its words, no traceback
            logger.warning("agent run %s: %s", input.run_id, error)
            yield RunErrorEvent(message=str(error), code=f"model-{error.code}", timestamp=run.now())
        except LedgerUnavailable as error:  # where it is and why, for operators: in the log
            logger.warning("agent run %s: %s", input.run_id, error)
            yield RunErrorEvent(
                message=run.ledger_failure(error), code=LEDGER_UNAVAILABLE, timestamp=run.now()
            )
        except Exception as error:  # a tool or model bug must end the stream, not hang it
            logger.exception("agent run %s failed", input.run_id)
            yield RunErrorEvent(
                message=f"The agent failed: {error}", code="agent-error", timestamp=run.now()
            )


class _Run:
    def __init__(
        self,
        agent: Agent,
        input: RunAgentInput,
        identity: Identity,
        cosigners: Mapping[str, Sequence[Identity]],
        deciders: Mapping[str, Identity],
        kept_by_desk: bool,
    ) -> None:
        self.agent = agent
        self.input = input
        self.identity = identity
        sealer = agent.sealer
        self.sealer = sealer.for_desk() if sealer is not None and kept_by_desk else sealer
        # Without a policy no rule names anyone: the person who asked decides (the gate says
        # so, from the sealed ids); the page is told nothing it needs no telling of. The
        # cosigners are copied: the caller's mapping may change while the run streams.
        self.gate = Gate(
            agent.policy or _NO_RULES,
            self.sealer,
            identity,
            {item: tuple(people) for item, people in cosigners.items()},
            dict(deciders),
        )
        #: For whom new items are sealed: the person running a new request; on a continuation,
        #: whoever the resumed batch was for (set once it is checked).
        self.requester = Requester(
            tag=self.sealer.requester_tag(identity.email) if self.sealer else None,
            email=identity.email,
        )
        # Read only where needed: a long history's messages are mostly never built.
        self.messages = History.of(input.messages)
        self._tool_positions: dict[str, int] | None = None
        #: Client tool calls approved in this continuation and handed to the client to run.
        self._granted: list[str] = []
        self.model_name = agent.model.name
        #: A continuation's answers are in the ledger (`_commit`): from here on, they count.
        self.committed = False
        self.ctx = RunContext(
            thread_id=input.thread_id,
            run_id=input.run_id,
            parent_run_id=input.parent_run_id,
            messages=self.messages,
            state=input.state,
        )

    def now(self) -> int:
        return int(self.agent.clock() * 1000)

    @property
    def actor(self) -> str | None:
        """Who acted, as verified; `forwardedProps.actor` is never believed."""
        return self.identity.email or None

    def _audit(self, kind: str, data: dict[str, Any], *, by: Identity | None = None) -> AuditEntry:
        return AuditEntry(
            kind=kind,
            thread_id=self.input.thread_id,
            run_id=self.input.run_id,
            actor=(by.email or None) if by is not None else self.actor,
            data=data,
        )

    def _decision_entry(self, interrupt_id: str, plan: ResumePlan) -> AuditEntry:
        """The trail's record of one answer, as its decider's; an expiry is nobody's (its
        cancellation came on the requester's behalf: they are named, but did not decide)."""
        decider = self.gate.decider_of(interrupt_id)
        record = plan.audit_record(interrupt_id)
        if interrupt_id in plan.expired:
            entry = self._audit("decision", {**record, "closedFor": decider.email or None})
            return replace(entry, actor=None)
        return self._audit("decision", {**record, **verified_by(decider)}, by=decider)

    def ledger_failure(self, error: LedgerUnavailable) -> str:
        """What a person is told when the ledger did not answer: before a continuation's
        answers were recorded nothing ran, and they may be sent again (a ledger that
        answered too late may have recorded them: a Retry then says so, and runs nothing)."""
        if self.input.resume and not self.committed and error.late:
            return (
                "Nothing ran: the approval ledger did not answer in time, so whether it "
                "recorded the answers is not known. Retry once it is back: answers it "
                "recorded are not run twice."
            )
        if self.input.resume and not self.committed:
            return (
                "Nothing ran: the approval ledger could not be reached to record the answers. "
                "Retry once it is back."
            )
        return (
            "The run stopped: the approval ledger could not be reached to keep the audit "
            "trail. What ran before it stopped may not show here: check before asking again."
        )

    async def _commit(self, plan: ResumePlan) -> None:
        """Record the answers exactly once, before anything runs; a replay is a `conflict`."""
        ledger = self.agent.ledger
        if ledger is None:
            return
        await self._check_granted(ledger, plan)
        resume = self.input.resume or []
        ids = sorted({entry.interrupt_id for entry in resume})
        taken = await ledger.commit_batch_async(
            thread_id=self.input.thread_id,
            interrupt_ids=ids,
            entries=[self._decision_entry(entry.interrupt_id, plan) for entry in resume],
        )
        if taken:
            raise self._refused(
                plan,
                [(item, "conflict", f"Interrupt {item} was already resolved.") for item in taken],
                ids, "conflict", "This batch was already answered; nothing ran.",
            )  # fmt: skip

    async def _check_granted(self, ledger: Ledger, plan: ResumePlan) -> None:
        """A client tool that needs approval runs in the client once approved: its output
        is taken only for a call the ledger says was approved and handed out
        (`_grant`), never in place of the approval, nor after a refusal."""
        # Only an output: a cancellation carries none (whoever asked may withdraw it anyway),
        # and a call left unanswered (beside a question) has nothing to take.
        gated = [
            p.call for p in plan.calls
            if p.kind == "client" and p.tool.needs_approval
            and (answer := plan.decisions.get(CLIENT_TOOL_ID_PREFIX + p.call.id)) is not None
            and answer.kind != "cancel"
        ]  # fmt: skip
        if not gated:
            return
        ids = [call.id for call in gated]
        granted = set(await ledger.granted_async(thread_id=self.input.thread_id, call_ids=ids))
        refused = [call for call in gated if call.id not in granted]
        if refused:
            raise self._refused(
                plan,
                [
                    (CLIENT_TOOL_ID_PREFIX + call.id, "forbidden",
                     f"Tool call {call.id} ({call.name}) has no approval to run in the client: "
                     f"its output is taken once {APPROVAL_ID_PREFIX}{call.id} is approved.")
                    for call in refused
                ],
                [CLIENT_TOOL_ID_PREFIX + call.id for call in refused],
                "item-validation-failed", "One or more interrupt resolutions are invalid.",
            )  # fmt: skip

    def _refused(
        self,
        plan: ResumePlan,
        items: Sequence[tuple[str, ItemInterruptErrorCode, str]],
        batch_ids: Sequence[str],
        batch_code: BatchInterruptErrorCode,
        batch_message: str,
    ) -> InterruptResumeValidationError:
        """A refusal of this continuation: one error per `(interrupt id, code, message)`, then
        the batch's, each naming the thread and the interrupted run."""
        thread_id, interrupted = self.input.thread_id, plan.interrupted_run_id
        errors: list[InterruptError] = [
            ItemInterruptError(
                thread_id=thread_id, interrupted_run_id=interrupted, interrupt_id=item,
                code=code, message=message, source="server",
            )
            for item, code, message in items
        ]  # fmt: skip
        errors.append(
            BatchInterruptError(
                thread_id=thread_id, interrupted_run_id=interrupted,
                interrupt_ids=tuple(batch_ids), code=batch_code, message=batch_message,
                source="server",
            )
        )  # fmt: skip
        return InterruptResumeValidationError(errors)

    async def _grant(self) -> None:
        """Put the client tools approved in this continuation in the ledger before the
        client hears of them (`_check_granted`)."""
        if self._granted and self.agent.ledger is not None:
            await self.agent.ledger.grant_async(
                thread_id=self.input.thread_id, call_ids=self._granted
            )

    @property
    def _verified(self) -> dict[str, Any]:
        """How the person acting was verified, for the trail (and which token, if one)."""
        return verified_by(self.identity)

    async def _record_refusals(self, error: InterruptResumeValidationError) -> None:
        """Put every answer the policy refused in the trail, with who tried and why."""
        refused = [
            item for item in error.errors
            if isinstance(item, ItemInterruptError) and item.code == "forbidden"
        ]  # fmt: skip
        if refused and self.agent.ledger is not None:
            # Each as the answer's own decider's: a batch sent as its last decider holds the
            # others' answers too (one held at the desk from before a policy change).
            deciders = [self.gate.decider_of(item.interrupt_id) for item in refused]
            await self.agent.ledger.append_async(
                [
                    self._audit(
                        "refusal",
                        {**self._refusal_of(item.interrupt_id, item.message),
                         **verified_by(decider)},
                        by=decider,
                    )
                    for item, decider in zip(refused, deciders, strict=True)
                ]
            )  # fmt: skip

    def _refusal_of(self, interrupt_id: str, reason: str) -> dict[str, Any]:
        """The refusal's record, naming the tool call it refused and the rule of that call
        (found in the history: a refusal is rare, the search cheap)."""
        call_id = tool_call_id_of(interrupt_id)
        found = next(
            (call for message in reversed(self.messages)
             for call in (getattr(message, "tool_calls", None) or ()) if call.id == call_id),
            None,
        )  # fmt: skip
        if found is None:
            return refusal_record(interrupt_id, reason)
        name = found.function.name
        rule = None
        if self.agent.policy is not None:
            try:
                args = json.loads(found.function.arguments or "{}")
            except ValueError:
                args = None
            matched = self.agent.policy.rule_for_tool(name, args)
            rule = matched.name if matched is not None else None
        return refusal_record(interrupt_id, reason, tool_name=name, rule=rule)

    def _requester_of(self, plan: ResumePlan) -> Requester:
        """Who asked, for what this continuation proposes next: whoever the resumed batch was
        proposed for (an approver moves the request on; they do not become its requester)."""
        sealer = self.sealer
        tag = next(
            (found for sealed in plan.sealed if (found := Sealer.tag_of(sealed)) is not None),
            None,
        )
        if sealer is None or tag is None:
            return self.requester
        asked = sealer.is_tag_of(tag, self.identity.email)
        return Requester(tag=tag, email=self.identity.email if asked else None)

    def _tell_who_decides(self, descriptor: dict[str, Any], rule: Rule | None) -> None:
        """Put in an item which rule governs it and who asked, for the page. Only with a
        policy: without one the person who asked decides, and there is nothing to tell."""
        if self.agent.policy is not None:
            descriptor["metadata"][POLICY_METADATA_KEY] = self.gate.describe(rule, self.requester)

    def _call_expiry(self, call_id: str) -> str | None:
        return self.sealer.tool_call_expiry(call_id) if self.sealer else None

    async def events(self) -> AsyncIterator[BaseEvent]:
        thread_id, run_id = self.input.thread_id, self.input.run_id
        if self.input.resume:
            try:
                plan = plan_continuation(
                    thread_id=thread_id,
                    run_id=run_id,
                    parent_run_id=self.input.parent_run_id,
                    messages=self.messages,
                    resume=self.input.resume,
                    tools=self.agent.tools,
                    definitions=self.agent.definitions,
                    now_ms=self.agent.clock() * 1000,
                    sealer=self.sealer,
                    gate=self.gate,
                )
                await self._commit(plan)
                self.committed = True
                self.requester = self._requester_of(plan)
            except InterruptResumeValidationError as error:
                await self._record_refusals(error)
                # AG-UI wants RUN_STARTED first; TanStack sends the RUN_ERROR alone, and its
                # client reads the errors either way (checked by the interop tests).
                yield events.run_started(thread_id, run_id, self.input.parent_run_id, self.now())
                yield events.resume_error(error, thread_id, run_id, self.now())
                return
            yield events.run_started(thread_id, run_id, self.input.parent_run_id, self.now())
            resolutions = Resolutions(plan.generic)
            self.ctx.resolutions = resolutions
            tool_resume = "continue"
            if plan.generic:
                tool_resume = combine_tool_resumes(
                    [
                        await item.on_interrupt_resolution(self.ctx, resolutions)
                        for item in self.agent.middleware
                    ]
                )
            client_requests: list[dict[str, Any]] = []
            # `stop` answers the batch's calls as `cancel` does (each has its result in the
            # history, or the next continuation would lack their answers), and then ends the
            # run without the model's turn.
            cancel_all = tool_resume in ("cancel", "stop")
            for pending in plan.calls:
                async for event in self._resume_call(pending, plan, cancel_all, client_requests):
                    call = pending.call
                    if isinstance(event, ToolCallResultEvent) and event.tool_call_id == call.id:
                        # The call started in the paused run: start and end it again in this
                        # one, so the result answers a call of its own run
                        # (`docs/protocol.md` §3.7). Two events a call, whatever the history.
                        for restated in events.tool_call_restated(
                            call.id, call.name, call.message_id, call.arguments, self.now()
                        ):
                            yield restated
                    yield event
            if tool_resume == "stop":
                yield events.run_finished(
                    thread_id,
                    run_id,
                    self.now(),
                    finish_reason="stop",
                    model=self.model_name,
                    success_outcome=True,
                )
                return
            if client_requests:
                await self._grant()
                for event in await self._pause(client_requests):
                    yield event
                return
        else:
            yield events.run_started(thread_id, run_id, None, self.now())
        async for event in self._loop():
            yield event

    async def _resume_call(
        self,
        pending: PendingCall,
        plan: ResumePlan,
        cancel_all: bool,
        client_requests: list[dict[str, Any]],
    ) -> AsyncIterator[BaseEvent]:
        call, tool = pending.call, pending.tool
        interrupt_id = pending.interrupt_id or ""
        answer = plan.decisions.get(interrupt_id)
        if answer is not None and interrupt_id in plan.expired:
            # Nobody decided in time: the model reads that it expired, not that someone said no.
            if not call.has_result:
                within = f"within {plan.expired[interrupt_id] or 'the time it was given'}"
                people, quorum = plan.short_of_quorum.get(interrupt_id, ((), 1))
                approved_by = [person.name or person.email for person in people]
                error = expiry_words(within, approved_by, quorum)
                expired = expired_result(error=error, approved_by=approved_by, quorum=quorum)
                yield self._record_result(call.message_id, call.id, expired, error=True)
            return
        if cancel_all or (answer is not None and answer.kind == "cancel"):
            if not call.has_result:
                yield self._record_result(call.message_id, call.id, CANCELLED_RESULT, error=True)
            return
        if pending.kind == "approval":
            decision = answer
            assert decision is not None  # the continuation check required every approval
            if not decision.approved:
                result = (
                    decision.payload if decision.payload is not ABSENT else DEFAULT_DENIED_RESULT
                )
                yield self._record_result(call.message_id, call.id, result, error=True)
                return
            args = decision.edited_args if decision.edited_args is not ABSENT else call.args
            if tool.execute is None:
                self._granted.append(call.id)
                client_requests.append(
                    client_tool_descriptor(
                        tool, call.id, args, self.input.run_id, self._call_expiry(call.id)
                    )
                )
                return
            yield await self._execute(tool, call.message_id, call.id, args)
            return
        if pending.kind == "client":
            if answer is not None:
                if not call.has_result:
                    output = None if answer.payload is ABSENT else answer.payload
                    yield self._record_result(call.message_id, call.id, output)
                return
            client_requests.append(
                client_tool_descriptor(
                    tool, call.id, call.args, self.input.run_id, self._call_expiry(call.id)
                )
            )
            return
        yield await self._execute(tool, call.message_id, call.id, call.args)

    def _record_result(
        self, message_id: str, call_id: str, content: Any, *, error: bool = False
    ) -> BaseEvent:
        # TanStack's client writes a placeholder tool message for an answered approval
        # (`{"approved":…,"pendingExecution":true,…}`); the real result replaces it, so the
        # model sees exactly one result per call (as TanStack's engine does, issue #532).
        message = tool_message(call_id, content, error=error)
        # One pass over the history per run, not one per result; again only if a hook has
        # moved the messages since (they are the context's too).
        positions = self._tool_positions
        index = positions.get(call_id) if positions is not None else None
        if positions is None or (
            index is not None and not answers_at(self.messages, index, call_id)
        ):
            positions = self._tool_positions = tool_result_positions(self.messages)
            index = positions.get(call_id)
        if index is not None:
            self.messages[index] = message
        else:
            positions[call_id] = len(self.messages)
            self.messages.append(message)
        return events.tool_result(message_id, call_id, content, self.now(), error=error)

    async def _decided_by_policy(
        self, rule: Rule, tool: Tool, message_id: str, call_id: str, args: Any
    ) -> list[BaseEvent]:
        """A call the policy decides alone: say so (a `CUSTOM` event the page shows on the
        card), put it in the trail, and for a rejection give the model the rule's reason."""
        approved = rule.decide == "approve"
        said: list[BaseEvent] = [
            events.policy_decision(call_id, tool.name, rule.name, approved, rule.reason,
                                   self.now())
        ]  # fmt: skip
        if self.agent.ledger is not None:
            record = policy_decision_record(
                approved=approved, rule=rule.name, reason=rule.reason, tool_name=tool.name,
                tool_call_id=call_id, shown_args=args,
            )  # fmt: skip
            await self.agent.ledger.append_async([self._audit("decision", record)])
        if not approved:
            result = {"error": f"Rejected by policy {rule.name}", "reason": rule.reason}
            said.append(self._record_result(message_id, call_id, result, error=True))
        return said

    async def _execute(self, tool: Tool, message_id: str, call_id: str, args: Any) -> BaseEvent:
        try:
            result = await tool.run(args)
        except Exception as error:  # the model reads the failure and can recover
            logger.warning("tool %s failed: %s", tool.name, error)
            result, failed = {"error": str(error)}, True
        else:
            failed = False
        if self.agent.ledger is not None:
            record = {"toolCallId": call_id, "toolName": tool.name, "args": args,
                      "result": result, "error": failed}  # fmt: skip
            await self.agent.ledger.append_async([self._audit("execution", record)])
        return self._record_result(message_id, call_id, result, error=failed)

    async def _pause(self, interrupts: list[dict[str, Any]]) -> list[BaseEvent]:
        interrupts = interrupts + self.ctx.foreign_interrupts
        self.ctx.foreign_interrupts = []
        if self.agent.ledger is not None:
            shown = [pause_record(item) for item in interrupts]
            await self.agent.ledger.append_async([self._audit("pause", {"interrupts": shown})])
        return events.interrupt_terminal(
            self.input.thread_id,
            self.input.run_id,
            self.now(),
            messages=self.messages,
            state=self.input.state,
            interrupts=interrupts,
            model=self.model_name,
        )

    async def _boundary(
        self, phase: BoundaryPhase, tool_items: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        requests: list[InterruptRequest] = await run_boundary(
            self.agent.middleware, phase, self.ctx
        )
        items = list(tool_items or [])
        sealer = self.sealer
        for request in requests:
            interrupt_id, batch_index = new_generic_interrupt_id(), len(items)
            rule = self.gate.policy.rule_for_interrupt(request.definition.id, request.payload)
            # With a sealer every interrupt expires (the TTL stands in for a rule's
            # `expires_after`); without one, only a rule's `expires_after` sets a deadline.
            lifetime = self.gate.lifetime(rule)
            if request.expires_at is None and lifetime is not None:
                if sealer is not None:
                    expires = sealer.expiry(lifetime)
                else:
                    expires = int(self.agent.clock() + lifetime)
                request = replace(request, expires_at=iso_from_epoch(expires))
            key = None
            if sealer is not None:
                key = sealer.seal_key(
                    request.key,
                    thread_id=self.input.thread_id,
                    run_id=self.input.run_id,
                    interrupt_id=interrupt_id,
                    fields=generic_fields(request, request.key, batch_index),
                    tag=self.requester.tag,
                )
            descriptor = generic_descriptor(
                request, interrupt_id, batch_index, self.input.run_id, key=key
            )
            self._tell_who_decides(descriptor, rule)
            items.append(descriptor)
        return items

    async def _loop(self) -> AsyncIterator[BaseEvent]:
        thread_id, run_id = self.input.thread_id, self.input.run_id
        for turn in range(self.agent.max_turns):
            self.ctx.iteration = turn
            pause = await self._boundary("beforeModel")
            if pause:
                for event in await self._pause(pause):
                    yield event
                return
            calls: list[ToolCall] = []
            async for event in self._model_turn(calls):
                yield event
            pause = await self._boundary("afterModel")
            if pause:
                for event in await self._pause(pause):
                    yield event
                return
            if not calls:
                yield events.run_finished(
                    thread_id, run_id, self.now(), finish_reason="stop", model=self.model_name
                )
                return
            async for event in self._tool_phase(calls):
                yield event
            if self._paused:
                return
            pause = await self._boundary("afterTools")
            if pause:
                for event in await self._pause(pause):
                    yield event
                return
        yield events.run_finished(
            thread_id, run_id, self.now(), finish_reason="length", model=self.model_name
        )

    _paused = False

    async def _tool_phase(self, calls: list[ToolCall]) -> AsyncIterator[BaseEvent]:
        message_id = self.messages[-1].id
        approvals: list[dict[str, Any]] = []
        client_items: list[dict[str, Any]] = []
        runnable: list[tuple[Tool, ToolCall, dict[str, Any]]] = []
        for call in calls:
            tool = self.agent.tools.get(call.function.name)
            problem = self._argument_problem(tool, call)
            if tool is None or problem is not None:
                yield self._record_result(message_id, call.id, {"error": problem}, error=True)
                continue
            args = parse_arguments(call.function.arguments)
            if tool.needs_approval:
                # One look at the policy per call: it decides alone, or says who decides.
                rule = self.gate.policy.rule_for_tool(tool.name, args)
                if rule is not None and rule.decide is not None:
                    for event in await self._decided_by_policy(
                        rule, tool, message_id, call.id, args
                    ):
                        yield event
                    if rule.decide == "approve":  # decided: it runs now, whatever else waits
                        yield await self._execute(tool, message_id, call.id, args)
                    continue
                descriptor = approval_descriptor(
                    tool, call.id, args, self.input.run_id, self._call_expiry(call.id)
                )
                self._tell_who_decides(descriptor, rule)
                approvals.append(descriptor)
            elif tool.execute is None:
                client_items.append(
                    client_tool_descriptor(
                        tool, call.id, args, self.input.run_id, self._call_expiry(call.id)
                    )
                )
            else:
                runnable.append((tool, call, args))
        tool_items = approvals + client_items
        pause = await self._boundary("beforeTools", tool_items)
        asks_generic = len(pause) > len(tool_items)
        # Batch gating: with a decision pending, no side effect happens before people decide;
        # the deferred calls run on the continuation.
        if not approvals and not asks_generic:
            for tool, call, args in runnable:
                yield await self._execute(tool, message_id, call.id, args)
        if pause:
            self._paused = True
            for event in await self._pause(pause):
                yield event

    def _argument_problem(self, tool: Tool | None, call: ToolCall) -> str | None:
        if tool is None:
            return f"Unknown tool {call.function.name}."
        if not arguments_are_valid_json(call.function.arguments):
            # What was sent, since a provider's history may carry `{}` in its place.
            sent = call.function.arguments
            shown = sent if len(sent) <= SENT_ARGUMENTS_SHOWN else sent[:SENT_ARGUMENTS_SHOWN] + "…"
            return f"Tool {tool.name} arguments are not a JSON object; they were: {shown}"
        return tool.arguments_problem(parse_arguments(call.function.arguments))

    async def _model_turn(self, calls: list[ToolCall]) -> AsyncIterator[BaseEvent]:
        message_id = f"msg_{secrets.token_hex(6)}"
        text: list[str] = []
        text_open = False
        open_call: str | None = None
        buffered: list[tuple[str, str, list[str]]] = []
        request = ModelRequest(
            messages=self.messages.window(),
            tools=tuple(self.agent.tools.values()),
            notes=tuple(self.ctx.model_notes),
        )
        async for delta in self.agent.model.stream(request):
            if isinstance(delta, TextDelta):
                if not text_open:
                    text_open = True
                    yield TextMessageStartEvent(
                        message_id=message_id, role="assistant", timestamp=self.now()
                    )
                text.append(delta.text)
                yield TextMessageContentEvent(
                    message_id=message_id, delta=delta.text, timestamp=self.now()
                )
            elif isinstance(delta, ToolCallDelta) and self.sealer is not None:
                # Sealed: the id covers name and arguments, so a call is announced whole.
                if not buffered or buffered[-1][0] != delta.id:
                    buffered.append((delta.id, delta.name or "", []))
                buffered[-1][2].append(delta.arguments)
            elif isinstance(delta, ToolCallDelta):
                if text_open:
                    text_open = False
                    yield TextMessageEndEvent(message_id=message_id, timestamp=self.now())
                if delta.id != open_call:
                    if open_call is not None:
                        yield ToolCallEndEvent(tool_call_id=open_call, timestamp=self.now())
                    open_call = delta.id
                    calls.append(
                        ToolCall(
                            id=delta.id,
                            type="function",
                            function=FunctionCall(name=delta.name or "", arguments=""),
                        )
                    )
                    yield ToolCallStartEvent(
                        tool_call_id=delta.id,
                        tool_call_name=delta.name or "",
                        parent_message_id=message_id,
                        timestamp=self.now(),
                    )
                if delta.arguments:
                    calls[-1].function.arguments += delta.arguments
                    yield ToolCallArgsEvent(
                        tool_call_id=delta.id, delta=delta.arguments, timestamp=self.now()
                    )
        if text_open:
            yield TextMessageEndEvent(message_id=message_id, timestamp=self.now())
        if open_call is not None:
            yield ToolCallEndEvent(tool_call_id=open_call, timestamp=self.now())
        for _, name, parts in buffered:
            arguments = "".join(parts)
            assert self.sealer is not None
            args = parse_arguments(arguments)
            # The rule that will govern the approval says how long it may wait.
            rule = self.gate.policy.rule_for_tool(name, args)
            sealed = self.sealer.seal_tool_call(
                self.input.thread_id,
                name,
                args,
                tag=self.requester.tag,
                ttl_seconds=self.gate.lifetime(rule),
            )
            calls.append(
                ToolCall(id=sealed.id, type="function",
                         function=FunctionCall(name=name, arguments=arguments))
            )  # fmt: skip
            yield ToolCallStartEvent(
                tool_call_id=sealed.id, tool_call_name=name, parent_message_id=message_id,
                timestamp=self.now(),
            )  # fmt: skip
            if arguments:
                yield ToolCallArgsEvent(
                    tool_call_id=sealed.id, delta=arguments, timestamp=self.now()
                )
            yield ToolCallEndEvent(tool_call_id=sealed.id, timestamp=self.now())
        if text or calls:
            self.messages.append(
                AssistantMessage(
                    id=message_id,
                    role="assistant",
                    content="".join(text) or None,
                    tool_calls=calls or None,
                )
            )

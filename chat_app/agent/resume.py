"""Validating a continuation: rebuild the paused batch from the history, check every answer.

Owns `plan_continuation` (`docs/protocol.md` §3.4). The whole batch is validated before
anything runs; a failure raises `InterruptResumeValidationError` with item and batch errors in
TanStack's order, and the run turns it into one `RUN_ERROR`. Each answer is read and checked
as a `Decision` (`chat_app.interrupts`); what only the engine knows (the seals, the history's
arguments, expiry) is checked here. A cancellation of an item whose expiry has passed is
the expiry itself (the approval desk sends one for a request nobody decided in time): it is
accepted, and recorded and reported as expired; any other answer to it is refused
`expired`. Stricter than TanStack: raw JSON
Schemas are validated with `jsonschema`, and a payload on an approval branch without a schema
is refused. Cost is linear in the history.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import partial
from typing import Any, Literal

from ag_ui.core import Message, ResumeEntry

from chat_app.interrupts import (
    ABSENT,
    APPROVAL_ID_PREFIX,
    CLIENT_TOOL_ID_PREFIX,
    INTERRUPT_CONTINUATION_METADATA_KEY,
    BatchInterruptError,
    Decision,
    DecisionProblem,
    DecisionTarget,
    InterruptError,
    InterruptResumeValidationError,
    ItemInterruptError,
    ItemInterruptErrorCode,
    UnusableSchemaError,
    check_decision,
    collation_key,
    parse_js_date,
    read_decision,
    read_generic_continuation,
    schema_problem,
    tool_call_id_of,
)
from chat_app.interrupts.strict_json import MAX_NESTING, strict_loads, too_deep
from chat_app.trust import (
    Identity,
    Rule,
    SealCheck,
    Sealer,
    asking_a_person,
    decision_record,
    describe_duration,
    rule_lifetime,
)

from .definitions import GenericResolution, InterruptDefinition, InterruptRequest
from .gate import Gate
from .history import ToolCallRef, arguments_are_valid_json, tool_calls
from .tools import Tool

PendingKind = Literal["approval", "client", "plain"]


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingCall:
    """A tool call of the paused turn that has no result yet (or is answered now)."""

    call: ToolCallRef
    tool: Tool
    kind: PendingKind

    @property
    def interrupt_id(self) -> str | None:
        if self.kind == "approval":
            return APPROVAL_ID_PREFIX + self.call.id
        if self.kind == "client":
            return CLIENT_TOOL_ID_PREFIX + self.call.id
        return None


@dataclass(kw_only=True)
class ResumePlan:
    """What a valid continuation asks for: every answer's `Decision` by interrupt id, and the
    generic ones as middleware reads them, in batch order."""

    interrupted_run_id: str
    calls: list[PendingCall] = field(default_factory=list)
    decisions: dict[str, Decision] = field(default_factory=dict)
    generic: list[GenericResolution] = field(default_factory=list)
    #: The policy rule that allowed each answer (`None`: no rule; the requester decided).
    rules: dict[str, str | None] = field(default_factory=dict)
    #: The sealed ids and keys of the items answered (they say who asked).
    sealed: list[str] = field(default_factory=list)
    #: Who approved an item earlier, counted towards its rule's quorum (by interrupt id).
    cosigners: dict[str, tuple[Identity, ...]] = field(default_factory=dict)
    #: The items cancelled once past their expiry, which expired unanswered: by interrupt id,
    #: how long they had waited for a decision ("1 day"; "" when not known).
    expired: dict[str, str] = field(default_factory=dict)
    #: Of those, the ones some approved short of their rule's quorum: who, and the quorum.
    short_of_quorum: dict[str, tuple[tuple[Identity, ...], int]] = field(default_factory=dict)

    def audit_record(self, interrupt_id: str) -> dict[str, Any]:
        """What the trail says about the answer to `interrupt_id` (with the tool call it
        answers, as the history shows it)."""
        call_id = tool_call_id_of(interrupt_id)
        call = next((pending.call for pending in self.calls if pending.call.id == call_id), None)
        decision = self.decisions[interrupt_id]
        cosigners = self.cosigners.get(interrupt_id, ())
        expired = interrupt_id in self.expired
        if call is None:
            record = decision_record(decision, cosigners=cosigners, expired=expired)
        else:
            record = decision_record(
                decision, tool_name=call.name, tool_call_id=call.id, shown_args=call.args,
                cosigners=cosigners, expired=expired,
            )  # fmt: skip
        if self.expired.get(interrupt_id):
            record["expiredAfter"] = self.expired[interrupt_id]
        if interrupt_id in self.short_of_quorum:
            people, quorum = self.short_of_quorum[interrupt_id]
            record["approvedBy"] = [person.email for person in people]
            record["quorum"] = quorum
        if interrupt_id in self.rules:
            record["rule"] = self.rules[interrupt_id]
        return record


@dataclass(frozen=True, kw_only=True, slots=True)
class _GenericRecord:
    interrupt_id: str
    request: InterruptRequest
    batch_index: int
    #: The key as the continuation carries it (sealed: it says who asked).
    sealed_key: str


class _Errors:
    """Collects errors with the correlation every one of them carries."""

    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id, self.run_id = thread_id, run_id
        self.items: dict[str, list[ItemInterruptError]] = {}

    def item(
        self,
        interrupt_id: str,
        code: ItemInterruptErrorCode,
        message: str,
        *,
        path: Sequence[str | int] | None = None,
        source: Literal["client", "server"] = "client",
    ) -> None:
        self.items.setdefault(interrupt_id, []).append(
            ItemInterruptError(
                thread_id=self.thread_id,
                interrupted_run_id=self.run_id,
                interrupt_id=interrupt_id,
                code=code,
                message=message,
                path=tuple(path) if path else None,
                source=source,
            )
        )

    def batch(
        self, code: Any, message: str, ids: Sequence[str], source: Any = "client"
    ) -> BatchInterruptError:
        return BatchInterruptError(
            thread_id=self.thread_id,
            interrupted_run_id=self.run_id,
            interrupt_ids=tuple(ids),
            code=code,
            message=message,
            source=source,
        )


def plan_continuation(
    *,
    thread_id: str,
    run_id: str,
    parent_run_id: str | None,
    messages: Sequence[Message],
    resume: Sequence[ResumeEntry],
    tools: Mapping[str, Tool],
    definitions: Mapping[str, InterruptDefinition],
    now_ms: float,
    sealer: Sealer | None = None,
    gate: Gate | None = None,
) -> ResumePlan:
    """Validate the whole batch; return the plan, or raise `InterruptResumeValidationError`.

    With a `sealer`, every tool call about to be answered or run must carry this server's
    seal over its thread, name and arguments, and every generic interrupt's key a seal over
    its thread, paused run and metadata; anything else is `stale` (or `expired`).
    With a `gate`, every answer must come from someone its policy rule allows (`forbidden`);
    a rule's quorum counts the gate's cosigners of the item with the person answering.
    """
    ids = [entry.interrupt_id for entry in resume]
    calls = _pending_calls(messages, tools, set(ids))
    for pending in calls:
        if not _readable_arguments(pending.call.arguments):
            raise _stale(
                _Errors(thread_id, parent_run_id or run_id),
                f"Tool call {pending.call.id} ({pending.call.name}) arguments in the history "
                "cannot be read back: NaN, Infinity, a number out of range, or nesting deeper "
                f"than {MAX_NESTING}.",
            )
    seals = _check_seals(calls, thread_id, run_id, sealer) if sealer else {}
    batch_calls = [call for call in calls if call.kind != "plain"]
    tool_ids = {call.interrupt_id for call in batch_calls}
    if not parent_run_id:
        # A plain AG-UI client sends no parentRunId. Its answers are accepted when every id
        # names an item of the batch rebuilt from the history (see README, "Resuming").
        if not ids or not all(
            item in tool_ids or _has_continuation(e) for item, e in zip(ids, resume, strict=True)
        ):
            errors = _Errors(thread_id, run_id)
            raise InterruptResumeValidationError(
                [
                    errors.batch(
                        "stale",
                        "Interrupt continuation requires parentRunId to identify the "
                        "interrupted run.",
                        ids,
                        "server",
                    )
                ]
            )
    interrupted = parent_run_id or run_id
    errors = _Errors(thread_id, interrupted)
    for call in calls:
        problem = _history_arguments_problem(call) if call.kind == "plain" else None
        if problem is not None:
            raise _stale(errors, problem)
    generics = _generic_records(resume, definitions, errors, sealer, thread_id, interrupted)
    approvals = [call for call in batch_calls if call.kind == "approval"]
    clients = [call for call in batch_calls if call.kind == "client"]
    pending_ids = [str(call.interrupt_id) for call in approvals + clients] + [
        record.interrupt_id for record in generics
    ]
    counts = Counter(ids)
    first: dict[str, ResumeEntry] = {}
    for entry in resume:
        first.setdefault(entry.interrupt_id, entry)
    for interrupt_id, count in counts.items():
        if count > 1:
            errors.item(
                interrupt_id, "conflict", f"Interrupt {interrupt_id} has duplicate resume entries."
            )
    generic_satisfied = bool(generics) and all(record.interrupt_id in first for record in generics)
    plan = ResumePlan(interrupted_run_id=interrupted, calls=calls)
    incomplete = False
    for call in approvals + clients:
        interrupt_id = str(call.interrupt_id)
        tool_entry = first.get(interrupt_id)
        if tool_entry is None:
            if generic_satisfied and call.kind == "client":
                continue
            incomplete = True
            errors.item(
                interrupt_id,
                "unknown-interrupt",
                f"Missing resume entry for interrupt {interrupt_id}.",
            )
            continue
        if seals.get(call.call.id, "ok") != "ok":
            if seals[call.call.id] == "expired" and _is_cancel(tool_entry, call.kind):
                # The expiry itself, sent as the standard cancellation: nothing runs.
                plan.decisions[interrupt_id] = Decision.cancel(interrupt_id)
                assert sealer is not None  # only a sealer says "expired"
                rule = gate.policy.rule_for_tool(call.call.name, call.call.args) if gate else None
                plan.expired[interrupt_id] = _within(rule_lifetime(rule, sealer.ttl_seconds))
                if gate is not None and rule is not None:
                    _note_short_of_quorum(plan, interrupt_id, rule, gate)
                continue
            _seal_error(errors, interrupt_id, call.call.id, seals[call.call.id])
            continue
        _guard(interrupt_id, errors, partial(_check_tool_entry, call, tool_entry, errors, plan))
    for record in generics:
        generic_entry = first.get(record.interrupt_id)
        if generic_entry is None:
            incomplete = True
            errors.item(
                record.interrupt_id,
                "unknown-interrupt",
                f"Missing resume entry for interrupt {record.interrupt_id}.",
            )
            continue
        lifetime = _generic_lifetime(record, gate, sealer)
        _guard(
            record.interrupt_id,
            errors,
            partial(_check_generic_entry, record, generic_entry, errors, plan, now_ms, lifetime),
        )
    if gate is not None:
        _check_deciders(gate, plan, approvals, clients, generics, errors, now_ms)
    known = set(pending_ids)
    for entry in resume:
        if entry.interrupt_id not in known:
            incomplete = True
            errors.item(
                entry.interrupt_id,
                "unknown-interrupt",
                f"Resume entry references unknown interrupt {entry.interrupt_id}.",
            )
    if errors.items or incomplete:
        ordered: list[InterruptError] = []
        for interrupt_id in _collated(errors.items):
            ordered.extend(errors.items[interrupt_id])
        if incomplete:
            ordered.append(
                errors.batch(
                    "incomplete-batch",
                    "Resume entries must resolve or cancel the complete interrupt batch.",
                    pending_ids,
                )
            )
        ordered.append(
            errors.batch(
                "item-validation-failed",
                "One or more interrupt resolutions are invalid.",
                pending_ids,
            )
        )
        raise InterruptResumeValidationError(ordered)
    plan.generic.sort(key=lambda resolution: _batch_index(generics, resolution))
    plan.sealed = [call.call.id for call in batch_calls] + [r.sealed_key for r in generics]
    return plan


def _check_deciders(
    gate: Gate,
    plan: ResumePlan,
    approvals: Sequence[PendingCall],
    clients: Sequence[PendingCall],
    generics: Sequence[_GenericRecord],
    errors: _Errors,
    now_ms: float,
) -> None:
    """Refuse, as `forbidden`, every valid answer its rule does not allow this person (with
    the item's cosigners, for a quorum, and its `escalate_to` once escalated) to give; the
    plan keeps the rule that allowed each of the others, and the cosigners it counted."""
    policy = gate.policy
    for call in approvals:
        interrupt_id = str(call.interrupt_id)
        decision = plan.decisions.get(interrupt_id)
        if decision is None:
            continue
        shown = policy.rule_for_tool(call.call.name, call.call.args)
        rules = [shown]
        if decision.edited:
            rules.append(policy.rule_for_tool(call.call.name, decision.edited_args))
        # From the id as a number: its ISO form would be parsed back (~30 µs a cycle).
        expires = gate.sealer.tool_call_expires(call.call.id) if gate.sealer else None
        waited = gate.waited(shown, None if expires is None else expires * 1000.0, now_ms)
        # An expired call's cancellation is its expiry, which whoever may decide it closes;
        # any other is a withdrawal, whoever asked's alone.
        approval = interrupt_id not in plan.expired
        allowed = _gate_one(gate, plan, errors, decision, call.call.id, rules, waited,
                            approval=approval, shown_args=call.call.args)  # fmt: skip
        fixed_by = asking_a_person(shown)
        if allowed and decision.edited and fixed_by is not None:
            # What the rule keeps runs as shown, not as a client wrote it again (`1.0`).
            pinned = fixed_by.pinned(call.call.args, decision.edited_args)
            plan.decisions[interrupt_id] = replace(decision, edited_args=pinned)
    for call in clients:
        # A client tool's output comes from the client of whoever asked: nobody else's.
        client_decision = plan.decisions.get(str(call.interrupt_id))
        if client_decision is not None:
            _gate_one(gate, plan, errors, client_decision, call.call.id, [None])
    for record in generics:
        decision = plan.decisions.get(record.interrupt_id)
        if decision is None:
            continue
        definition_id = record.request.definition.id
        rule = policy.rule_for_interrupt(definition_id, record.request.payload)
        waited = gate.waited(rule, _ms(record.request.expires_at), now_ms)
        _gate_one(gate, plan, errors, decision, record.sealed_key, [rule], waited)


def _gate_one(
    gate: Gate,
    plan: ResumePlan,
    errors: _Errors,
    decision: Decision,
    sealed: str,
    rules: list[Rule | None],
    waited: float | None = None,
    *,
    approval: bool = False,
    shown_args: object = ABSENT,
) -> bool:
    """Whether `decision` is allowed (else its item's error is noted)."""
    gate = gate.for_item(decision.interrupt_id)
    problem = gate.check(decision, sealed=sealed, rules=rules, waited=waited, approval=approval,
                         shown_args=shown_args)  # fmt: skip
    if problem is not None:
        errors.item(decision.interrupt_id, problem.code, problem.message, source=problem.source)
        return False
    plan.rules[decision.interrupt_id] = next((rule.name for rule in rules if rule), None)
    cosigners = gate.cosigners_of(decision, rules)
    if cosigners:
        plan.cosigners[decision.interrupt_id] = cosigners
    return True


def _ms(iso: str | None) -> float | None:
    return parse_js_date(iso) if iso else None


def _is_cancel(entry: ResumeEntry, kind: PendingKind) -> bool:
    """Whether `entry` is a well-formed cancellation (what ends an expired item)."""
    read = read_decision(entry, "client-tool" if kind == "client" else "approval")
    return isinstance(read, Decision) and read.kind == "cancel"


def _note_short_of_quorum(plan: ResumePlan, interrupt_id: str, rule: Rule, gate: Gate) -> None:
    """Who approved an expired call short of its `rule`'s quorum: the desk's cosigners, as
    an approval counts them (`Gate.distinct_cosigners`), when fewer than the quorum."""
    approved = gate.distinct_cosigners(interrupt_id)
    if 0 < len(approved) < rule.quorum:
        plan.short_of_quorum[interrupt_id] = (approved, rule.quorum)
        plan.rules[interrupt_id] = rule.name


def _generic_lifetime(
    record: _GenericRecord, gate: Gate | None, sealer: Sealer | None
) -> float | None:
    """The lifetime a question's `expiresAt` was set from, when this server set it."""
    request = record.request
    rule = gate.policy.rule_for_interrupt(request.definition.id, request.payload) if gate else None
    return rule_lifetime(rule, sealer.ttl_seconds if sealer is not None else None)


def _within(lifetime: float | None) -> str:
    return "" if lifetime is None else describe_duration(timedelta(seconds=lifetime))


def _collated(ids: Collection[str]) -> list[str]:
    # The collation key is built character by character in Python (~10 us an id); a batch
    # usually fails on one item, which needs no ordering.
    return sorted(ids, key=collation_key) if len(ids) > 1 else list(ids)


def _batch_index(records: Sequence[_GenericRecord], resolution: GenericResolution) -> int:
    for record in records:
        if record.request is resolution.request:
            return record.batch_index
    return 0


def _has_continuation(entry: ResumeEntry) -> bool:
    return (
        isinstance(entry.metadata, dict) and INTERRUPT_CONTINUATION_METADATA_KEY in entry.metadata
    )


def _pending_calls(
    messages: Sequence[Message], tools: Mapping[str, Tool], resume_ids: set[str]
) -> list[PendingCall]:
    pending: list[PendingCall] = []
    seen: set[str] = set()
    # Only a call the resume answers again can be pending once it has a result: `tool_calls`
    # leaves out every other answered call.
    reopened = {call_id for item in resume_ids if (call_id := tool_call_id_of(item)) is not None}
    for call in tool_calls(messages, reopened=reopened):
        if call.id in seen:
            continue
        tool = tools.get(call.name)
        if tool is None:
            continue  # its ids then fail as unknown interrupts
        seen.add(call.id)
        client_execution = tool.execute is None and CLIENT_TOOL_ID_PREFIX + call.id in resume_ids
        if tool.needs_approval and not client_execution:
            kind: PendingKind = "approval"
        elif tool.execute is None:
            kind = "client"
        else:
            kind = "plain"
        pending.append(PendingCall(call=call, tool=tool, kind=kind))
    return pending


def _stale(errors: _Errors, message: str) -> InterruptResumeValidationError:
    return InterruptResumeValidationError([errors.batch("stale", message, [], "server")])


def _generic_records(
    resume: Sequence[ResumeEntry],
    definitions: Mapping[str, InterruptDefinition],
    errors: _Errors,
    sealer: Sealer | None = None,
    thread_id: str = "",
    run_id: str = "",
) -> list[_GenericRecord]:
    records: list[_GenericRecord] = []
    seen_ids: set[str] = set()
    seen_indexes: set[int] = set()
    for entry in resume:
        if "metadata" not in entry.model_fields_set or entry.metadata is None:
            if "metadata" in entry.model_fields_set and entry.metadata is None:
                raise _stale(errors, "Generic interrupt resume metadata must be an object.")
            continue
        read = read_generic_continuation(entry.metadata)
        if read.status == "absent":
            continue
        if read.status == "invalid" or read.continuation is None:
            raise _stale(errors, str(read.message))
        continuation = read.continuation
        definition = definitions.get(continuation.definition_id)
        if definition is None:
            raise _stale(
                errors, f"Generic interrupt definition {continuation.definition_id} is unavailable."
            )
        if entry.interrupt_id in seen_ids or continuation.batch_index in seen_indexes:
            raise _stale(errors, "Generic interrupt continuation contains duplicate entries.")
        seen_ids.add(entry.interrupt_id)
        seen_indexes.add(continuation.batch_index)
        key = continuation.key
        if sealer is not None:
            key = Sealer.unsealed_key(continuation.key)
            fields: dict[str, object] = {
                "definitionId": continuation.definition_id,
                "key": key,
                "batchIndex": continuation.batch_index,
                "reason": continuation.reason,
                "message": continuation.message,
                "expiresAt": _string_or_none(continuation.expires_at),
                "responseSchemaHash": continuation.response_schema_hash,
                "payloadSchemaHash": continuation.payload_schema_hash,
            }
            if continuation.payload is not ABSENT:
                fields["payload"] = continuation.payload
            check = sealer.check_key(
                continuation.key,
                thread_id=thread_id,
                run_id=run_id,
                interrupt_id=entry.interrupt_id,
                fields=fields,
            )
            if check == "desk":
                raise _stale(errors, _kept_by_desk(f"Interrupt {entry.interrupt_id}"))
            if check != "ok":
                raise _stale(
                    errors,
                    f"Generic interrupt continuation {entry.interrupt_id} was not issued by this "
                    "server for this run.",
                )
        try:
            request = definition.request(
                key=key,
                # The reader accepted these only as strings.
                reason=str(continuation.reason),
                message=str(continuation.message),
                payload=continuation.payload,
                expires_at=_string_or_none(continuation.expires_at),
            )
        except ValueError as error:
            raise _stale(
                errors, f"Generic interrupt continuation {entry.interrupt_id} is invalid: {error}"
            ) from None
        if (
            continuation.response_schema_hash != definition.response_schema_hash
            or continuation.payload_schema_hash != definition.payload_schema_hash
        ):
            raise _stale(
                errors,
                f"Generic interrupt continuation {entry.interrupt_id} "
                "does not match its definition.",
            )
        records.append(
            _GenericRecord(
                interrupt_id=entry.interrupt_id,
                request=request,
                batch_index=continuation.batch_index,
                sealed_key=continuation.key,
            )
        )
    return records


def _check_seals(
    calls: Sequence[PendingCall], thread_id: str, run_id: str, sealer: Sealer
) -> dict[str, SealCheck]:
    results: dict[str, SealCheck] = {}
    for pending in calls:
        call = pending.call
        result = sealer.check_tool_call(thread_id, call.id, call.name, call.args)
        if result != "ok" and pending.kind == "plain":
            # A call that would run without any approval: refuse the whole continuation.
            message = (
                _kept_by_desk(f"Tool call {call.id}")
                if result == "desk"
                else f"Tool call {call.id} in the history was not proposed by this server"
                + (" or has expired." if result == "expired" else ".")
            )
            code = "stale" if result == "desk" else result
            raise InterruptResumeValidationError(
                [_Errors(thread_id, run_id).batch(code, message, [], "server")]
            )
        results[call.id] = result
    return results


def _kept_by_desk(what: str) -> str:
    """Why a client may not answer a pause the desk keeps (`Sealer.for_desk`)."""
    return (
        f"{what} belongs to a conversation the approval desk keeps: decide it there (the "
        "app's Inbox, or POST /api/inbox/{decisionId}), where it is decided once for everyone."
    )


def _seal_error(errors: _Errors, interrupt_id: str, call_id: str, result: SealCheck) -> None:
    if result == "desk":
        errors.item(
            interrupt_id, "stale", _kept_by_desk(f"Interrupt {interrupt_id}"), source="server"
        )
    elif result == "expired":
        errors.item(
            interrupt_id, "expired", f"Interrupt {interrupt_id} has expired.", source="server"
        )
    else:
        errors.item(
            interrupt_id,
            "stale",
            f"Tool call {call_id} was not proposed by this server, or its arguments were changed.",
            source="server",
        )


def _guard(interrupt_id: str, errors: _Errors, check: Callable[[], None]) -> None:
    """Run one item's checks; a schema that cannot validate anything is the item's error."""
    try:
        check()
    except UnusableSchemaError as error:
        errors.item(
            interrupt_id,
            "invalid-response-schema",
            f"Interrupt {interrupt_id} could not be validated: {error}",
            source="server",
        )


def _string_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _check_generic_entry(
    record: _GenericRecord,
    entry: ResumeEntry,
    errors: _Errors,
    plan: ResumePlan,
    now_ms: float,
    lifetime: float | None = None,
) -> None:
    interrupt_id = record.interrupt_id
    expires_at = record.request.expires_at
    if expires_at is not None:
        expiry = parse_js_date(expires_at)
        if expiry is None:
            errors.item(
                interrupt_id,
                "invalid-payload",
                f"Interrupt {interrupt_id} has an invalid expiresAt.",
                source="server",
            )
            return
        if expiry <= now_ms:
            read = read_decision(entry, "generic")
            if isinstance(read, Decision) and read.kind == "cancel":
                # The expiry itself, sent as the standard cancellation.
                plan.decisions[interrupt_id] = read
                plan.expired[interrupt_id] = _within(lifetime)
                plan.generic.append(GenericResolution(request=record.request, status="expired"))
                return
            errors.item(
                interrupt_id, "expired", f"Interrupt {interrupt_id} has expired.", source="server"
            )
            return
    target = DecisionTarget(
        kind="generic", response_schema=record.request.definition.response_schema
    )
    decision = _decided(entry, target, errors)
    if decision is None:
        return
    plan.decisions[interrupt_id] = decision
    if decision.kind == "cancel":
        plan.generic.append(GenericResolution(request=record.request, status="cancelled"))
        return
    plan.generic.append(
        GenericResolution(
            request=record.request,
            status="resolved",
            response=None if decision.payload is ABSENT else decision.payload,
        )
    )


def _decided(entry: ResumeEntry, target: DecisionTarget, errors: _Errors) -> Decision | None:
    """The entry's decision when it is a valid answer to `target`; otherwise its problems are
    recorded and the answer is `None`."""
    read = read_decision(entry, target.kind)
    problems: list[DecisionProblem] = (
        [read] if isinstance(read, DecisionProblem) else check_decision(read, target)
    )
    for problem in problems:
        errors.item(
            entry.interrupt_id,
            problem.code,
            problem.message,
            path=problem.path,
            source=problem.source,
        )
    return None if problems or isinstance(read, DecisionProblem) else read


def _check_tool_entry(
    call: PendingCall, entry: ResumeEntry, errors: _Errors, plan: ResumePlan
) -> None:
    tool = call.tool
    if call.kind == "client":
        target = DecisionTarget(
            kind="client-tool", response_schema=tool.output_schema, tool_name=tool.name
        )
    else:
        target = DecisionTarget(
            kind="approval",
            input_schema=tool.input_schema,
            approve_schema=tool.approval.branch(True),
            reject_schema=tool.approval.branch(False),
        )
    decision = _decided(entry, target, errors)
    if decision is None:
        return
    if decision.kind == "approve" and not decision.edited:
        altered = _history_arguments_problem(call)
        if altered is not None:
            errors.item(entry.interrupt_id, "stale", altered)
            return
    plan.decisions[entry.interrupt_id] = decision


def _readable_arguments(text: str | None) -> bool:
    """False for arguments no JavaScript peer reads as we do: NaN or Infinity, a number past
    1.8e308, more digits than Python converts, nesting deeper than the request allows (or the
    parser takes). Text that is not JSON at all stays for `parse_arguments` (it reads `{}`)."""
    try:
        value = strict_loads((text or "").strip() or "{}")
    except json.JSONDecodeError:
        return True
    except (ValueError, RecursionError):
        return False
    return not isinstance(value, dict | list) or not too_deep(value)


def _history_arguments_problem(call: PendingCall) -> str | None:
    """Why the history's arguments of `call` must not run as they are, if they must not.

    A run never pauses on a call whose arguments its tool refuses (it records an error result
    instead), so a pending call with such arguments comes from an altered history.
    """
    ref, tool = call.call, call.tool
    if not arguments_are_valid_json(ref.arguments):
        return f"Tool call {ref.id} ({tool.name}) arguments in the history are not a JSON object."
    if tool.input_schema is None:
        return None
    problem = schema_problem(tool.input_schema, ref.args)
    if problem is None:
        return None
    where = "/".join(str(part) for part in problem.path)
    place = f" at {where}" if where else ""
    return (
        f"Tool call {ref.id} ({tool.name}) arguments in the history are invalid{place}: "
        f"{problem.message}"
    )

"""Who may decide, enforced by the engine: the policy at the pause and at the continuation.

Owns `Gate`. At the pause, a rule with `decide` settles a tool call without asking anyone,
and every other item carries, in its metadata, the rule that governs it (so a page can say
who may decide). At the continuation, each answer is checked against its rule and against
who asked, before anything runs: a refusal is the item's `forbidden` error, saying who may
decide (`docs/protocol.md` §3.6).

Who asked is read from the sealed id itself (`Sealer.asked_by`): a stateless server needs no
database to know it, and a client cannot change it. Without a sealer nobody is known to have
asked, so only the roles a rule names are checked.

A rule with `escalate_after` lets its `escalate_to` people decide too once that long has
passed since the pause. Stateless again: the pause's moment is the item's expiry (in the
sealed id, or a generic question's sealed `expiresAt`) less the lifetime it was given (the
rule's `expires_after`, else the sealer's TTL).

A rule with a quorum counts the person answering and the item's cosigners: the people who
approved it earlier, as a trusted caller in the same process says (the approval desk, which
collects and stores them). Nobody else can name them: the HTTP route never passes any, so a
request body cannot claim who approved (`docs/protocol.md` §6.7).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chat_app.interrupts import ABSENT, Decision, DecisionProblem
from chat_app.trust import (
    ANONYMOUS,
    Identity,
    Policy,
    PolicyError,
    Rule,
    Sealer,
    asking_a_person,
    cancel_refusal,
    edited_refusal,
    rule_lifetime,
)

from .tools import Tool

__all__ = ["Gate", "Requester", "check_policy", "policy_problems"]


@dataclass(frozen=True, slots=True)
class Requester:
    """Who asked: the tag sealed into what their run proposes, and their email when known
    (a continuation run by an approver knows the tag, not the email)."""

    tag: str | None
    email: str | None


@dataclass(frozen=True, slots=True)
class Gate:
    """The policy, the sealer that knows who asked, the person answering, and who approved
    each item before them (by interrupt id, as the resume entry names it)."""

    policy: Policy
    sealer: Sealer | None = None
    decider: Identity = ANONYMOUS
    #: Verified people who approved an item earlier, by its interrupt id (not including
    #: `decider`); counted only towards a rule's quorum. Only a trusted in-process caller
    #: (the approval desk) gives them, never a request body.
    cosigners: Mapping[str, Sequence[Identity]] = field(default_factory=dict)
    #: Who gave an item's answer when it is not `decider` (a batch decided by several people),
    #: by interrupt id; from the same trusted caller only.
    deciders: Mapping[str, Identity] = field(default_factory=dict)

    def decider_of(self, interrupt_id: str) -> Identity:
        """Who answered this item."""
        return self.deciders.get(interrupt_id, self.decider)

    def for_item(self, interrupt_id: str) -> Gate:
        """This gate as the person who answered `interrupt_id`."""
        decider = self.deciders.get(interrupt_id)
        return self if decider is None else replace(self, decider=decider)

    def lifetime(self, rule: Rule | None) -> float | None:
        """How long, in seconds, an item under `rule` waits before it expires: the rule's
        `expires_after`, else the sealer's TTL (`None` without either: nothing expires it)."""
        return rule_lifetime(rule, self.sealer.ttl_seconds if self.sealer is not None else None)

    def waited(self, rule: Rule | None, expires_ms: float | None, now_ms: float) -> float | None:
        """Seconds since an item under `rule` that expires at `expires_ms` paused (its expiry
        less its lifetime), or `None` when that cannot be known."""
        lifetime = self.lifetime(rule)
        if expires_ms is None or lifetime is None:
            return None
        return (now_ms - expires_ms) / 1000 + lifetime

    def describe(self, rule: Rule | None, requester: Requester) -> dict[str, Any]:
        """What a pause tells the page about who may decide an item."""
        asked = {"requester": requester.email or None, "requesterTag": requester.tag}
        if rule is None:
            return {"rule": None, **asked, "waitingFor": "the requester"}
        return {
            "rule": rule.name,
            **asked,
            "approvers": list(rule.approvers),
            "notRequester": rule.not_requester,
            "quorum": rule.quorum,
            "editable": None if rule.editable is None else list(rule.editable),
            "waitingFor": self.policy.describe_approvers(rule),
        }

    def check(
        self,
        decision: Decision,
        *,
        sealed: str,
        rules: list[Rule | None],
        waited: float | None = None,
        approval: bool = False,
        shown_args: object = ABSENT,
    ) -> DecisionProblem | None:
        """Why `self.decider` may not give `decision`, if they may not.

        `sealed` is the item's sealed tool call id or generic key (who asked); `rules` the
        rules of what was shown and, for edited arguments, of what would run (each must
        allow the decider: editing cannot move a call out of its rule's reach). An approval
        or answer under a rule with a quorum also needs enough distinct allowed people among
        the decider and the item's cosigners; a rejection or cancellation decides alone.
        `waited` is how many seconds ago the item paused (`Gate.waited`), when known: a rule whose
        `escalate_after` has passed lets its `escalate_to` decide too. An `approval`'s
        cancellation is its requester's withdrawal: nobody else's. Edited arguments (a
        second rule) may change from `shown_args` (the call's as shown; required with them)
        only what the rule of what was shown lists in `editable`, judged before the rule of
        what would run, in the desk's order.
        """
        if len(rules) > 1 and shown_args is ABSENT:
            raise ValueError("edited arguments are judged against the call's as shown")
        asked = self._is_requester(sealed)
        if decision.kind == "cancel" and asked:
            return None  # whoever asked may always withdraw the request
        if decision.kind == "cancel":
            known = asked if self.sealer is not None else None  # the seal says who asked
            refused = cancel_refusal(approval=approval, asked=known)
            if refused is not None:
                return _forbidden(refused)
        for index, rule in enumerate(rules):
            rejected = rule.refuses_approval() if rule is not None else None
            if rejected is not None and decision.kind == "approve":
                return _forbidden(rejected)
            if index == 1:  # edited: first, whether the rule shown lets this be changed
                shown = asking_a_person(rules[0])
                fixed = shown.refuses_edit(shown_args, decision.edited_args) if shown else None
                if fixed is not None:
                    return _forbidden(fixed)
            if index == 0:
                # What was shown is answered by its rule's approvers; a rule that now decides
                # such calls alone has none. What editing would run is only checked against
                # its rule, which may approve it alone.
                rule = asking_a_person(rule)
            if rule is None:
                # No rule: the person who asked decides, as without a policy.
                if self.sealer is not None and not asked:
                    if index == 0:
                        return _forbidden("Only the person who asked decides this.")
                    return _forbidden(edited_refusal(None, "only the person who asked runs it so."))
                continue
            if rule.decide is not None:
                continue
            escalated = _escalated(rule, waited)
            message = self.policy.check(
                rule, self.decider, decider_is_requester=asked, escalated=escalated
            )
            if message is not None:
                return _forbidden(message if index == 0 else edited_refusal(rule, message))
            if rule.quorum > 1 and decision.kind in ("approve", "answer"):
                message = self._quorum_problem(decision, rule, sealed, escalated)
                if message is not None:
                    return _forbidden(message)
        return None

    def cosigners_of(
        self, decision: Decision, rules: Sequence[Rule | None]
    ) -> tuple[Identity, ...]:
        """The earlier approvers counted with `decision` (for the trail): for an approval or
        answer under a rule with a quorum, the item's distinct cosigners other than the
        decider, in the order given; otherwise none."""
        if decision.kind not in ("approve", "answer") or not any(
            rule is not None and rule.decide is None and rule.quorum > 1 for rule in rules
        ):
            return ()
        return self.distinct_cosigners(decision.interrupt_id, besides=self.decider.email)

    def distinct_cosigners(self, interrupt_id: str, besides: str = "") -> tuple[Identity, ...]:
        """The item's cosigners, each named person once, in the order given, leaving out
        `besides` (the decider, who counts on their own)."""
        seen = {besides.lower()}
        counted: list[Identity] = []
        for person in self.cosigners.get(interrupt_id, ()):
            email = person.email.lower()
            if email and not person.anonymous and email not in seen:
                seen.add(email)
                counted.append(person)
        return tuple(counted)

    def _quorum_problem(
        self, decision: Decision, rule: Rule, sealed: str, escalated: bool
    ) -> str | None:
        """Why the decider and the item's cosigners are not enough for `rule`'s quorum, if
        they are not (the decider is already known to be allowed)."""
        who = self.policy.describe_approvers(rule, escalated=escalated)
        given = self.cosigners.get(decision.interrupt_id, ())
        if not given:
            return (
                f"Needs {rule.quorum} approvals from {who} (rule {rule.name}): the approval "
                "desk collects them; a stateless continuation cannot."
            )
        if decision.edited:
            return (
                f"Cosigners approved the arguments as shown; edited arguments need approvals "
                f"of their own (rule {rule.name})."
            )
        for person in given:
            if person.anonymous:
                return f"A cosigner must be a verified person, not anonymous (rule {rule.name})."
            refusal = self.policy.check(
                rule,
                person,
                decider_is_requester=self._is_requester(sealed, person),
                escalated=escalated,
            )
            if refusal is not None:
                return f"Cosigner {person.email} may not approve (rule {rule.name}): {refusal}"
        approvers = list(dict.fromkeys(p.email.lower() for p in (self.decider, *given)))
        if len(approvers) >= rule.quorum:
            return None
        return (
            f"Needs {rule.quorum} approvals from {who} (rule {rule.name}): "
            f"{len(approvers)} given ({', '.join(approvers)})."
        )

    def _is_requester(self, sealed: str, person: Identity | None = None) -> bool:
        """Whether `person` (the decider by default) is the one who asked, by the sealed id."""
        if self.sealer is None:
            return False
        return self.sealer.asked_by(sealed, (person or self.decider).email)


def check_policy(policy: Policy, tools: Mapping[str, Tool], definitions: Collection[str]) -> None:
    """Refuse a rule that could never apply to this agent (a typo'd tool would leave the calls
    it meant to guard to whoever asked): `PolicyError` naming the rule and what to fix."""
    problems = policy_problems(policy, tools, definitions)
    if problems:
        raise problems[0]


def policy_problems(
    policy: Policy,
    tools: Mapping[str, Tool],
    definitions: Collection[str] | None,
    *,
    whose: str = "this agent",
) -> list[PolicyError]:
    """Each rule that could never apply to an agent with `tools` and the questions
    `definitions` (`None`: not known, so not checked), as `check_policy` would refuse it;
    `whose` names the agent in the words."""
    problems: list[PolicyError] = []
    for rule in policy.rules:
        where = f"rule '{rule.name}'"
        if rule.tool is not None:
            tool = tools.get(rule.tool)
            if tool is None:
                known = ", ".join(sorted(name for name, t in tools.items() if t.needs_approval))
                problems.append(PolicyError(
                    policy.source, f"names tool '{rule.tool}', which {whose} does not have; "
                    f"its tools that need approval are: {known or 'none'}", rule=where,
                ))  # fmt: skip
            elif not tool.needs_approval:
                problems.append(PolicyError(
                    policy.source, f"names tool '{rule.tool}', which runs without asking anyone; "
                    "give the tool needs_approval, or remove the rule", rule=where,
                ))  # fmt: skip
        if (rule.interrupt is not None and definitions is not None
                and rule.interrupt not in definitions):  # fmt: skip
            problems.append(PolicyError(
                policy.source, f"names question '{rule.interrupt}', which {whose} never asks; "
                f"its questions are: {', '.join(sorted(definitions)) or 'none'}", rule=where,
            ))  # fmt: skip
    return problems


def _escalated(rule: Rule, waited: float | None) -> bool:
    return (
        rule.escalate_after is not None
        and waited is not None
        and waited >= rule.escalate_after.total_seconds()
    )


def _forbidden(message: str) -> DecisionProblem:
    return DecisionProblem(code="forbidden", message=message, source="server")

"""Who may see and decide a desk's decisions, by the policy in force.

Owns `Judge`: the filing a pause gets (who finds it in their inbox, who may decide, how many
must, when they are told), and for a person and an answer, whether the policy lets them give
it, reckoned as the engine's gate will reckon it when the continuation runs. The desk asks
before it stores anything, so a refused approver reads why on the card and nothing is sent;
it decides *when* (a decision still open, its expiry), the policy *who*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from chat_app.client import GenericInterrupt, InterruptItem, ToolApprovalInterrupt
from chat_app.interrupts import POLICY_METADATA_KEY, parse_js_date
from chat_app.trust import (
    Identity,
    Policy,
    Rule,
    asking_a_person,
    cancel_refusal,
    editable_shown,
    edited_refusal,
)

from .records import (
    Answer,
    DeskError,
    InboxItem,
    Vote,
    arguments_line,
    waiting_for_requester,
)
from .store import DecisionDraft, Filing, route_of

__all__ = ["ADMIN_ROLE", "Judge"]

#: The role that sees every conversation and every pending decision.
ADMIN_ROLE = "admin"


class Judge:
    """The desk's reading of its policy. Its settings are the desk's and change with it (a
    policy reloaded, a test's own): `Desk.policy` and the rest write through to here."""

    def __init__(
        self,
        policy: Policy | None,
        *,
        agent_reads_policy: bool,
        clock: Callable[[], datetime],
        notify_idle_seconds: float,
    ) -> None:
        self.policy = policy
        #: The agent gates its answers by this same `policy` (it runs in this process); a
        #: remote agent's own rules are known only by the name its pauses give.
        self.agent_reads_policy = agent_reads_policy
        self.clock = clock
        #: A requester's own decision (no rule) is notified only this long after the pause
        #: and only if their page is not open on it then: they may be answering it already.
        self.notify_idle_seconds = notify_idle_seconds

    def draft(self, item: InterruptItem, owner_email: str, owner_name: str) -> DecisionDraft:
        shown = (item.metadata or {}).get(POLICY_METADATA_KEY)
        shown = shown if isinstance(shown, Mapping) else {}
        requester = str(shown.get("requester") or owner_email).lower()
        requester_name = owner_name if requester == owner_email else requester
        kind: Literal["tool", "question"]
        if isinstance(item, ToolApprovalInterrupt):
            kind, name, args = "tool", item.tool_name, item.original_args
        elif isinstance(item, GenericInterrupt):
            name = item.definition_id or item.message or "question"
            kind, args = "question", item.payload
        else:  # pragma: no cover - unbound items are never answerable
            kind, name, args = "question", item.message or "", None
        filing = self.filing(
            self.governing(kind, name, args, named=shown.get("rule")), requester, requester_name
        )
        expiry = parse_js_date(item.expires_at) if item.expires_at else None
        return DecisionDraft(
            item_id=item.id, kind=kind, name=name, summary=arguments_line(args), args=args,
            requester_email=requester, requester_name=requester_name,
            expires_at=None if expiry is None else datetime.fromtimestamp(expiry / 1000, UTC),
            run_id=item.interrupted_run_id or None, filing=filing,
        )  # fmt: skip

    def filing_in_force(self, item: InboxItem) -> Filing:
        """A pending decision's filing had it paused under the policy in force."""
        rule = self.governing(item.kind, item.name, item.args, named=item.rule)
        return self.filing(rule, item.requester_email, item.requester_name)

    def filing(self, rule: Rule | None, requester: str, requester_name: str) -> Filing:
        """What `rule` decides of a decision's filing: who finds it in their inbox, who may
        decide and how many must, what it is waiting for, and when it is told, reminded and
        escalated."""
        if rule is None or self.policy is None:
            return Filing(
                rule=None, approvers=(), not_requester=False, quorum=1,
                routes=(f"user:{requester}",),
                waiting_for=waiting_for_requester(requester_name),
                notify_after=timedelta(seconds=self.notify_idle_seconds),
            )  # fmt: skip
        return Filing(
            rule=rule.name, approvers=tuple(rule.approvers), not_requester=rule.not_requester,
            quorum=rule.quorum,
            # Approvers by role or email; a rule naming nobody ("someone else") is everyone's.
            routes=tuple(route_of(a) for a in rule.approvers) or ("*",),
            waiting_for=self.policy.waiting_for(rule, viewer_is_requester=False),
            notify_after=timedelta(0), remind_after=rule.remind_after,
            escalate_after=rule.escalate_after, escalate_to=rule.escalate_to,
        )  # fmt: skip

    def governing(
        self, kind: Literal["tool", "question"], name: str, args: Any, *, named: object
    ) -> Rule | None:
        """The rule the engine's gate will judge an answer by. A tool call's, when the agent
        reads this policy, is found as the gate finds it, by the tool and its arguments, so a
        rule renamed or replaced since the pause is found too. Otherwise it is the rule
        `named` when it paused, under its settings now: a remote agent's rules are its own,
        and for a question, the desk's client has no definitions registered, so it knows
        neither its definition id nor its payload."""
        if kind == "tool" and self.policy is not None and self.agent_reads_policy:
            return asking_a_person(self.policy.rule_for_tool(name, args))
        return self.rule_named(named)

    def rule_named(self, name: object) -> Rule | None:
        if self.policy is None or not isinstance(name, str):
            return None
        return asking_a_person(self.policy.rule_named(name))

    def rule(self, item: InboxItem) -> Rule | None:
        return self.rule_named(item.rule)

    def routes(self, viewer: Identity) -> list[str]:
        roles = self.policy.roles_of(viewer) if self.policy is not None else viewer.roles
        return [f"user:{viewer.email}", "*", *(f"role:{role}" for role in sorted(roles))]

    def is_admin(self, viewer: Identity) -> bool:
        roles = self.policy.roles_of(viewer) if self.policy is not None else viewer.roles
        return ADMIN_ROLE in roles

    def may_see_item(self, item: InboxItem, viewer: Identity) -> bool:
        """Whether `item` lets `viewer` see its conversation: they decided it, voted on it,
        or it is theirs to approve; or, closed by someone else, it was filed to them by name
        or role (an approver looking at a request its requester withdraws, or another
        approver decides, sees how it ended). Not a closed item a rule left to anyone, nor
        one that would have reached them only by an escalation it never had."""
        if item.decided_by == viewer.email or any(v.email == viewer.email for v in item.votes):
            return True
        if item.status == "pending":
            return self.refusal(item, viewer, "approve") is None
        rule = self.rule(item)
        if rule is None or not rule.approvers:
            return False
        escalated = item.escalated_at is not None  # as it happened, not by today's clock
        return self.refusal(item, viewer, "approve", escalated=escalated) is None

    def refusal(
        self, item: InboxItem, viewer: Identity, kind: str, *, escalated: bool | None = None
    ) -> str | None:
        """Why `viewer` may not give a `kind` answer to `item`, if they may not; `escalated`
        as given, else by the clock (`escalated`)."""
        if viewer.anonymous and self.policy is not None:
            return "Sign in first: decisions are made by a known person."
        # Without sign-in everyone is the same anonymous person, who asked for everything.
        asked = viewer.email == item.requester_email
        if kind == "cancel" and asked:
            return None  # whoever asked may always withdraw it
        if kind == "cancel":
            refused = cancel_refusal(
                approval=item.kind == "tool", asked=asked if self.policy is not None else None
            )
            if refused is not None:
                # Told to reject instead only by whoever may: anyone else, why they may not.
                return self.refusal(item, viewer, "reject", escalated=escalated) or refused
        rule = self.rule(item)
        if rule is None:  # the person who asked decides (the engine holds to it too)
            if asked:
                return None
            who = item.requester_name or item.requester_email
            return f"Only the person who asked ({who}) decides this."
        assert self.policy is not None
        return self.policy.check(rule, viewer.with_roles(self.policy.roles_of(viewer)),
                                 decider_is_requester=asked,
                                 escalated=self.escalated(item) if escalated is None
                                 else escalated)  # fmt: skip

    def editable(self, item: ToolApprovalInterrupt) -> tuple[str, ...] | None:
        """The arguments the rule of `item` as shown lets an approver change (`None`: any),
        as `run_refusal` judges an edit; for an agent whose rules are its own, as its pause
        said (`editable` in the policy metadata)."""
        if self.policy is None or not self.agent_reads_policy:
            return editable_shown(item.metadata)
        rule = asking_a_person(self.policy.rule_for_tool(item.tool_name, item.original_args))
        return None if rule is None else rule.editable

    def run_refusal(self, item: InboxItem, viewer: Identity, answer: Answer) -> str | None:
        """Why the engine's gate would refuse to run what `viewer` approves of a tool call,
        if it would, found as it finds it: a rule that rejects the call as shown or as edited,
        an edit of an argument the rule as shown does not list in `editable`, and for edited
        arguments their own rule, which must allow `viewer` too (editing cannot
        move a call out of a rule's reach). Refused here, before it is stored as decided, the
        approver reads why on the card; a remote agent's rules are its own (`Desk._carry` opens a
        decision it refuses again)."""
        if answer.kind != "approve" or item.kind != "tool":
            return None
        if self.policy is None or not self.agent_reads_policy:
            return None
        shown = self.policy.rule_for_tool(item.name, item.args)
        edited = answer.has_edited_args
        ran = self.policy.rule_for_tool(item.name, answer.edited_args) if edited else None
        for rule in (shown, ran):
            rejected = rule.refuses_approval() if rule is not None else None
            if rejected is not None:
                return rejected
        asked = asking_a_person(shown) if edited else None
        fixed = asked.refuses_edit(item.args, answer.edited_args) if asked is not None else None
        if fixed is not None:
            return fixed
        if not edited or (ran is not None and ran.decide is not None):
            return None
        if ran is None:
            if viewer.email == item.requester_email:
                return None
            who = item.requester_name or item.requester_email
            return edited_refusal(None, f"only the person who asked ({who}) runs it so.")
        if ran.quorum > 1:
            return (f"Edited, the call falls under rule {ran.name}, which needs {ran.quorum} "
                    "approvals: approve the arguments as shown, or reject.")  # fmt: skip
        escalated = ran.escalate_after is not None and (
            item.created_at + ran.escalate_after <= self.clock()
        )
        refusal = self.policy.check(ran, viewer.with_roles(self.policy.roles_of(viewer)),
                                    decider_is_requester=viewer.email == item.requester_email,
                                    escalated=escalated)  # fmt: skip
        if refusal is None:
            return None
        return edited_refusal(ran, refusal)

    def counts(self, item: InboxItem, vote: Vote) -> bool:
        """Whether `vote` counts towards `item`'s quorum: an approval by someone the rule in
        force allows, with the roles they have now where an account holds them (`Vote.roles`),
        and not by an account removed since. The engine checks every cosigner so and refuses
        the whole answer for one it does not allow, so an approval the policy no longer allows
        (its rule's approvers changed, or the voter's roles) counts for nothing, though it
        stays on record."""
        return (
            vote.approved
            and not vote.removed
            and self.refusal(item, vote.identity(), "approve") is None
        )

    def judged(self, item: InboxItem) -> InboxItem:
        """`item` as the rule in force reckons it while it is pending (a decided item's votes
        are what decided it): its approvals marked as counting or not, and the quorum that
        rule needs, which the engine counts against, not the one it was filed with."""
        if item.status != "pending":
            return item
        rule = self.rule(item)
        quorum = item.quorum if rule is None else rule.quorum
        if quorum == item.quorum and not any(vote.approved for vote in item.votes):
            return item
        votes = tuple(replace(vote, counts=self.counts(item, vote)) for vote in item.votes)
        return replace(item, votes=votes, quorum=quorum)

    def escalated(self, item: InboxItem) -> bool:
        """Past its rule's `escalate_after`: by the clock, as the engine's gate reckons it
        (the timer that tells the escalated people may fire a moment later)."""
        return item.escalate_at is not None and item.escalate_at <= self.clock()

    def check_open(self, item: InboxItem, viewer: Identity | None = None) -> None:
        """`DeskError` unless `item` is still to decide, saying how it ended and by whom
        ("you" to `viewer`, when it was them)."""
        if item.status == "decided" and item.outcome == "expired":
            raise DeskError("expired", item.expiry_note + " Nobody can decide it any more.")
        if item.status == "decided":
            said = f"Already decided by {item.decided_by_name or item.decided_by or 'someone'}"
            if viewer is not None and viewer.email and item.decided_by == viewer.email:
                said = "You already decided this"
            raise DeskError(
                "already-decided", f"{said} ({item.outcome}).",
                decidedBy=item.decided_by, outcome=item.outcome,
            )  # fmt: skip
        if item.status != "pending":
            closer = item.decided_by_name or item.decided_by
            by = f" by {closer}" if closer else ""
            raise DeskError(
                "already-decided", f"Already answered in the conversation{by}.",
                decidedBy=item.decided_by, outcome=item.outcome,
            )  # fmt: skip
        if item.expires_at is not None and item.expires_at <= self.clock():
            raise DeskError(
                "expired",
                f"Expired at {item.expires_at:%Y-%m-%d %H:%M} UTC: nobody can decide it any more.",
            )

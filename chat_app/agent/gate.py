"""Who may decide, enforced by the engine: the policy at the pause and at the continuation.

Owns `Gate`. At the pause, a rule with `decide` settles a tool call without asking anyone,
and every other item carries, in its metadata, the rule that governs it (so a page can say
who may decide). At the continuation, each answer is checked against its rule and against
who asked, before anything runs: a refusal is the item's `forbidden` error, saying who may
decide (`docs/protocol.md` §3.6).

Who asked is read from the sealed id itself (`Sealer.asked_by`): a stateless server needs no
database to know it, and a client cannot change it. Without a sealer nobody is known to have
asked, so only the roles a rule names are checked.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from chat_app.interrupts import Decision, DecisionProblem
from chat_app.trust import ANONYMOUS, Identity, Policy, PolicyError, Rule, Sealer

from .tools import Tool

__all__ = ["Gate", "Requester", "check_policy"]


@dataclass(frozen=True, slots=True)
class Requester:
    """Who asked: the tag sealed into what their run proposes, and their email when known
    (a continuation run by an approver knows the tag, not the email)."""

    tag: str | None
    email: str | None


@dataclass(frozen=True, slots=True)
class Gate:
    """The policy, the sealer that knows who asked, and the person answering."""

    policy: Policy
    sealer: Sealer | None = None
    decider: Identity = ANONYMOUS

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
            "waitingFor": self.policy.describe_approvers(rule),
        }

    def check(
        self, decision: Decision, *, sealed: str, rules: list[Rule | None]
    ) -> DecisionProblem | None:
        """Why `self.decider` may not give `decision`, if they may not.

        `sealed` is the item's sealed tool call id or generic key (who asked); `rules` the
        rules of what was shown and, for edited arguments, of what would run (each must
        allow the decider: editing cannot move a call out of its rule's reach).
        """
        asked = self._is_requester(sealed)
        if decision.kind == "cancel" and asked:
            return None  # whoever asked may always withdraw the request
        for rule in rules:
            if rule is None:
                # No rule: the person who asked decides, as without a policy.
                if self.sealer is not None and not asked:
                    return _forbidden("Only the person who asked decides this.")
                continue
            if rule.decide == "reject" and decision.kind == "approve":
                return _forbidden(
                    f"Rejected by policy {rule.name}: {rule.reason or 'not allowed'}."
                )
            if rule.decide is not None:
                continue
            message = self.policy.check(rule, self.decider, decider_is_requester=asked)
            if message is not None:
                return _forbidden(message)
            if rule.quorum > 1 and decision.kind in ("approve", "answer"):
                return _forbidden(
                    f"Needs {rule.quorum} approvals from {self.policy.describe_approvers(rule)}"
                    f" (rule {rule.name}): the approval desk collects them; a stateless "
                    "continuation cannot."
                )
        return None

    def _is_requester(self, sealed: str) -> bool:
        if self.sealer is None:
            return False
        return self.sealer.asked_by(sealed, self.decider.email)


def check_policy(
    policy: Policy, tools: Mapping[str, Tool], definitions: Collection[str]
) -> None:
    """Refuse a rule that could never apply to this agent (a typo'd tool would leave the calls
    it meant to guard to whoever asked): `PolicyError` naming the rule and what to fix."""
    for rule in policy.rules:
        where = f"rule '{rule.name}'"
        if rule.tool is not None:
            tool = tools.get(rule.tool)
            if tool is None:
                known = ", ".join(sorted(name for name, t in tools.items() if t.needs_approval))
                raise PolicyError(
                    policy.source, f"names tool '{rule.tool}', which this agent does not have; "
                    f"its tools that need approval are: {known}", rule=where,
                )  # fmt: skip
            if not tool.needs_approval:
                raise PolicyError(
                    policy.source, f"names tool '{rule.tool}', which runs without asking anyone; "
                    "give the tool needs_approval, or remove the rule", rule=where,
                )  # fmt: skip
        if rule.interrupt is not None and rule.interrupt not in definitions:
            raise PolicyError(
                policy.source, f"names question '{rule.interrupt}', which this agent never asks; "
                f"its questions are: {', '.join(sorted(definitions))}", rule=where,
            )  # fmt: skip


def _forbidden(message: str) -> DecisionProblem:
    return DecisionProblem(code="forbidden", message=message, source="server")

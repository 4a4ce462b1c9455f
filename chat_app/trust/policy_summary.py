"""A policy in words, rule by rule, for whoever writes one (`python -m chat_app policy check`).

The sentences are the ones the product shows elsewhere (`Policy.check`'s "Needs approval
from role finance, not the requester", `describe_duration`'s "30 min"), so what the check
prints is what an approver will read.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass

from .policy import (
    Policy,
    Rule,
    asking_a_person,
    describe_duration,
    describe_people,
    rule_lifetime,
)

__all__ = ["CallVerdict", "describe_rule", "judge_call", "who_decides"]


def describe_rule(policy: Policy, rule: Rule, *, ttl_seconds: float | None) -> list[str]:
    """Lines saying what `rule` matches, who decides under it and when it expires, reminds
    and escalates (`ttl_seconds`: the interrupt TTL, `None` when nothing expires)."""
    subject = rule.tool if rule.tool is not None else f"question {rule.interrupt}"
    when = f", when {_json(rule.when)}" if rule.when is not None else ""
    lines = [f"{rule.name}: {subject}{when}", who_decides(policy, rule)]
    if asking_a_person(rule) is None:
        return lines
    timing: list[str] = []
    lifetime = rule_lifetime(rule, ttl_seconds)
    if lifetime is not None:
        source = "" if rule.expires_after is not None else " (the interrupt TTL)"
        timing.append(f"Expires after {describe_duration(_span(lifetime))}{source}.")
    if rule.remind_after is not None:
        timing.append(f"Reminds the approvers after {describe_duration(rule.remind_after)}.")
    added = [who for who in rule.escalate_to if who not in rule.approvers]
    if rule.escalate_after is not None and added:
        timing.append(
            f"After {describe_duration(rule.escalate_after)}, {describe_people(added)} may "
            "decide too."
        )
    if timing:
        lines.append(" ".join(timing))
    return lines


def who_decides(policy: Policy, rule: Rule) -> str:
    """Who decides a request under `rule`, and what they may change, in one or two
    sentences."""
    if rule.decide == "approve":
        return "Approved by the policy: nobody is asked."
    if rule.decide == "reject":
        return f"Rejected by the policy: nobody is asked. The model reads: {rule.reason}"
    who = policy.describe_approvers(rule)
    if rule.interrupt is not None:
        needs = f"Needs an answer from {who}"
    elif rule.quorum > 1:
        needs = f"Needs {rule.quorum} approvals from {who}"
    else:
        needs = f"Needs approval from {who}"
    if rule.not_requester:
        needs += ", not the requester"
    sentence = f"{needs}; any rejection decides." if rule.quorum > 1 else f"{needs}."
    if rule.interrupt is None and not rule.not_requester:
        # Said, since nobody approving their own request is what most rules want (a
        # question is another matter: whoever asked may well know the answer).
        if rule.quorum > 1:
            sentence += (" Whoever asked counts towards the approvals if they are among "
                         "these (no not_requester).")  # fmt: skip
        else:
            sentence += (" Whoever asked may approve it themselves if they are among these "
                         "(no not_requester).")  # fmt: skip
    if rule.editable is not None:
        may = f"only {', '.join(rule.editable)}" if rule.editable else "nothing"
        sentence += f" An approver may change {may}."
    return sentence


@dataclass(frozen=True)
class CallVerdict:
    """What the policy makes of one call: the rule that governs it (`None`: none does, so
    whoever asked decides) and who decides, in words."""

    rule: Rule | None
    words: str


def judge_call(policy: Policy, name: str, args: object, *, question: bool = False) -> CallVerdict:
    """How the policy governs a call of tool `name` with `args` (or, with `question`, a
    generic interrupt `name` showing the display payload `args`): the first rule that
    matches, as the engine's gate picks it."""
    if question:
        rule = policy.rule_for_interrupt(name, args)
    else:
        rule = policy.rule_for_tool(name, args)
    if rule is None:
        return CallVerdict(None, "No rule matches: whoever asked decides.")
    return CallVerdict(rule, f"Rule {rule.name}. {who_decides(policy, rule)}")


def _json(value: object) -> str:
    # TOML has dates, which JSON does not: a `when` compares them as the strings they read as.
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def _span(seconds: float) -> datetime.timedelta:
    return datetime.timedelta(seconds=seconds)

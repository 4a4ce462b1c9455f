"""Escalation, statelessly: once a rule's `escalate_after` has passed since the pause, its
`escalate_to` people may decide too. The pause's moment is read from the item itself: its
expiry (sealed) less the lifetime it was given.

The demo's `large-transfers` needs `finance` (Ada), never the requester, and escalates to
`admin` (Olive) after 2 h.
"""

from __future__ import annotations

from typing import Any

from chat_app.agent import Agent
from chat_app.demo import POLICY_PATH, build_demo_agent, demo_model
from chat_app.interrupts import generic_continuation_from_descriptor, wrap_generic_continuation
from chat_app.trust import DEMO_PEOPLE, Identity, Policy, Sealer, SQLiteLedger
from tests.agent.builders import collect

SECRET = b"escalation-secret-escalation-secret"
RITA, ADA, SAM, OLIVE = DEMO_PEOPLE[:4]
NOW = 1_900_000_000.0
HOUR = 3600.0
BEFORE = "Needs approval from role finance, not the requester."
#: Olive (admin) before the escalation reads when it lets her in.
BEFORE_FOR_ADMIN = f"{BEFORE} Escalation lets admin decide too once it has waited 2 h."
AFTER = "Needs approval from role finance or role admin, not the requester."


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def agent_with(ledger: SQLiteLedger, clock: Clock, policy: Policy | None = None) -> Agent:
    agent = build_demo_agent(
        demo_model(),
        sealer=Sealer(SECRET, clock=clock),
        ledger=ledger,
        policy=policy or Policy.load(POLICY_PATH),
    )
    agent.clock = clock
    return agent


async def ask(agent: Agent, phrase: str, who: Identity = RITA) -> list[dict[str, Any]]:
    body = {"threadId": "t", "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": phrase}]}  # fmt: skip
    return await collect(agent, body, who)


async def approve(
    agent: Agent, paused: list[dict[str, Any]], who: Identity, run: str
) -> list[dict[str, Any]]:
    [item] = paused[-1]["outcome"]["interrupts"]
    entry = {"interruptId": item["id"], "status": "resolved", "payload": {"approved": True}}
    body = {"threadId": "t", "runId": run, "parentRunId": "r1",
            "messages": paused[-2]["messages"], "resume": [entry]}  # fmt: skip
    return await collect(agent, body, who)


def refusal(events: list[dict[str, Any]]) -> tuple[str, str]:
    assert events[-1]["type"] == "RUN_ERROR", [e["type"] for e in events]
    first = events[-1]["metadata"]["tanstack"]["interruptErrors"][0]
    return first["code"], first["message"]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


async def test_admin_is_refused_before_escalate_after_and_allowed_from_then(
    ledger: SQLiteLedger,
) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "transfer 5000 to Ada")
    clock.now = NOW + 2 * HOUR - 1
    assert refusal(await approve(agent, paused, OLIVE, "r2")) == ("forbidden", BEFORE_FOR_ADMIN)
    clock.now = NOW + 2 * HOUR
    events = await approve(agent, paused, OLIVE, "r3")
    assert "Sent 5,000 to Ada" in text_of(events)
    [decision] = [r for r in ledger.records() if r.kind == "decision"]
    assert (decision.actor, decision.data["rule"]) == (OLIVE.email, "large-transfers")
    assert len([r for r in ledger.records() if r.kind == "execution"]) == 1


async def test_escalation_adds_people_and_removes_none(ledger: SQLiteLedger) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "transfer 5000 to Ada")
    clock.now = NOW + 5 * HOUR
    # Sam is in ops, not admin: escalation does not reach him.
    assert refusal(await approve(agent, paused, SAM, "r2")) == ("forbidden", AFTER)
    assert refusal(await approve(agent, paused, RITA, "r3")) == ("forbidden", AFTER)
    assert "Sent 5,000 to Ada" in text_of(await approve(agent, paused, ADA, "r4"))


async def test_not_requester_holds_for_whoever_it_escalates_to(ledger: SQLiteLedger) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "transfer 5000 to Ada", OLIVE)
    clock.now = NOW + 3 * HOUR
    assert refusal(await approve(agent, paused, OLIVE, "r2")) == ("forbidden", AFTER)
    assert not [r for r in ledger.records() if r.kind == "execution"]


async def test_the_pause_is_read_from_the_lifetime_the_rule_gave_the_seal(
    ledger: SQLiteLedger,
) -> None:
    # Sealed for 3 h by the rule: the pause was 3 h before the expiry, not a day before.
    text = POLICY_PATH.read_text().replace(
        'remind_after = "30m"', 'expires_after = "3h"\nremind_after = "30m"'
    )
    clock = Clock()
    agent = agent_with(ledger, clock, Policy.parse(text))
    paused = await ask(agent, "transfer 5000 to Ada")
    clock.now = NOW + HOUR
    assert refusal(await approve(agent, paused, OLIVE, "r2")) == ("forbidden", BEFORE_FOR_ADMIN)
    clock.now = NOW + 2 * HOUR
    assert "Sent 5,000 to Ada" in text_of(await approve(agent, paused, OLIVE, "r3"))


async def test_a_question_escalates_by_its_sealed_expiry(ledger: SQLiteLedger) -> None:
    policy = Policy.parse(
        '[roles]\nadmin = ["olive@example.com"]\n\n'
        '[[rules]]\nname = "shipping-by-ada"\ninterrupt = "shipping-speed"\n'
        'approvers = ["ada@example.com"]\nescalate_after = "1h"\nescalate_to = ["role:admin"]\n'
    )
    clock = Clock()
    agent = agent_with(ledger, clock, policy)
    paused = await ask(agent, "ship order 42")
    [item] = paused[-1]["outcome"]["interrupts"]
    continuation = generic_continuation_from_descriptor(item)
    assert continuation is not None
    entry = {"interruptId": item["id"], "status": "resolved",
             "payload": {"speed": "express", "giftWrap": False},
             "metadata": dict(wrap_generic_continuation(continuation))}  # fmt: skip

    async def answer(run: str) -> list[dict[str, Any]]:
        body = {"threadId": "t", "runId": run, "parentRunId": "r1",
                "messages": paused[-2]["messages"], "resume": [entry]}  # fmt: skip
        return await collect(agent, body, OLIVE)

    clock.now = NOW + HOUR - 1
    assert refusal(await answer("r2")) == (
        "forbidden",
        "Needs an answer from ada@example.com. Escalation lets admin decide too once it has "
        "waited 1 h.",  # a question is answered, not approved
    )
    clock.now = NOW + HOUR
    assert "Shipping order 42 express" in text_of(await answer("r3"))

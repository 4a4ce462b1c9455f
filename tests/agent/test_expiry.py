"""Expiry closes the loop: the cancellation of an item past its expiry is the expiry itself.

The approval desk ends a request nobody decided in time by sending the agent the standard
cancellation, as the person who asked. The engine takes it as the expiry: nothing runs, the
model reads that it expired (not that someone said no), and the trail records it as expired.
Any other answer to an expired item is still refused `expired`. A rule's `expires_after`
gives its requests a lifetime of their own.
"""

from __future__ import annotations

import json
from typing import Any

from chat_app.agent import Agent, event_to_wire
from chat_app.demo import POLICY_PATH, build_demo_agent, demo_model
from chat_app.interrupts import (
    CANCELLED_RESULT,
    generic_continuation_from_descriptor,
    parse_js_date,
    wrap_generic_continuation,
)
from chat_app.trust import DEMO_PEOPLE, Identity, Policy, Sealer, SQLiteLedger
from tests.agent.builders import collect, run_input

SECRET = b"expiry-test-secret-expiry-test-secret"
RITA, ADA, SAM, OLIVE = DEMO_PEOPLE[:4]
NOW = 1_900_000_000.0
DAY = 86400.0
EXPIRED_TRANSFER = {"error": "Expired: nobody decided within 1 day.", "expired": True}


class Clock:
    """The one clock of the agent and its sealer, moved by the test."""

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


async def answer(
    agent: Agent, paused: list[dict[str, Any]], entry: dict[str, Any], who: Identity, run: str
) -> list[dict[str, Any]]:
    body = {"threadId": "t", "runId": run, "parentRunId": "r1",
            "messages": paused[-2]["messages"], "resume": [entry]}  # fmt: skip
    return await collect(agent, body, who)


def the_item(paused: list[dict[str, Any]]) -> dict[str, Any]:
    assert paused[-1]["type"] == "RUN_FINISHED", paused[-1]
    items: list[dict[str, Any]] = paused[-1]["outcome"]["interrupts"]
    [item] = items
    return item


def cancel(item: dict[str, Any]) -> dict[str, Any]:
    """The standard cancellation (with a question's continuation metadata, as clients echo)."""
    entry: dict[str, Any] = {"interruptId": item["id"], "status": "cancelled"}
    continuation = generic_continuation_from_descriptor(item)
    if continuation is not None:
        entry["metadata"] = dict(wrap_generic_continuation(continuation))
    return entry


def approve(item: dict[str, Any], approved: bool = True) -> dict[str, Any]:
    return {"interruptId": item["id"], "status": "resolved", "payload": {"approved": approved}}


def refusal(events: list[dict[str, Any]]) -> tuple[str, str]:
    assert events[-1]["type"] == "RUN_ERROR", [e["type"] for e in events]
    first = events[-1]["metadata"]["tanstack"]["interruptErrors"][0]
    return first["code"], first["message"]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def result_of(events: list[dict[str, Any]]) -> tuple[Any, bool]:
    """The one tool result of a run, read back, and whether it is marked an error."""
    [result] = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    failed = (result.get("metadata") or {}).get("tanstack", {}).get("state") == "output-error"
    return json.loads(result["content"]), failed


def records(ledger: SQLiteLedger, kind: str) -> list[dict[str, Any]]:
    return [record.data for record in ledger.records() if record.kind == kind]


def expires_ms(item: dict[str, Any]) -> float:
    moment = parse_js_date(item["expiresAt"])
    assert moment is not None
    return moment


# Tool approvals ---------------------------------------------------------------------------


async def test_a_cancel_after_expiry_is_the_expiry_and_the_tool_does_not_run(
    ledger: SQLiteLedger,
) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    assert expires_ms(item) == (NOW + DAY) * 1000  # the sealer's TTL: the rule sets none
    clock.now = NOW + DAY
    events = await answer(agent, paused, cancel(item), RITA, "r2")
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert result_of(events) == (EXPIRED_TRANSFER, True)
    assert text_of(events) == (
        "Nobody decided on the transfer in time: the request expired unanswered, so it did "
        "not run."
    )
    assert not records(ledger, "execution")
    [decision] = records(ledger, "decision")
    assert (decision["status"], decision["decision"], decision["expiredAfter"]) == (
        "expired", "expired", "1 day"
    )  # fmt: skip
    assert (decision["rule"], decision["toolName"]) == ("large-transfers", "transfer")
    # Nobody decided it: the record names no actor, and whom the expiry closed it for.
    assert [r.actor for r in ledger.records() if r.kind == "decision"] == [None]
    assert decision["closedFor"] == RITA.email and "verifiedBy" not in decision


async def test_the_same_expiry_sent_twice_runs_nothing_twice(ledger: SQLiteLedger) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    clock.now = NOW + DAY + 5
    assert result_of(await answer(agent, paused, cancel(item), RITA, "r2"))[0] == EXPIRED_TRANSFER
    again = await answer(agent, paused, cancel(item), RITA, "r3")
    assert refusal(again)[0] == "conflict"
    assert len(records(ledger, "decision")) == 1


async def test_any_other_answer_after_expiry_is_still_refused_expired(
    ledger: SQLiteLedger,
) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    clock.now = NOW + DAY
    assert refusal(await answer(agent, paused, approve(item), ADA, "r2")) == (
        "expired", f"Interrupt {item['id']} has expired."
    )  # fmt: skip
    assert refusal(await answer(agent, paused, approve(item, False), ADA, "r3"))[0] == "expired"
    # A cancellation with a payload is no cancellation at all.
    odd = {**cancel(item), "payload": {"approved": False}}
    assert refusal(await answer(agent, paused, odd, RITA, "r4"))[0] == "expired"
    assert not records(ledger, "decision") and not records(ledger, "execution")


async def test_before_expiry_a_cancel_is_an_ordinary_cancel(ledger: SQLiteLedger) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    clock.now = NOW + DAY - 2
    events = await answer(agent, paused, cancel(item), RITA, "r2")
    assert result_of(events) == (CANCELLED_RESULT, True)
    assert text_of(events) == "Cancelled: transfer did not run."
    [decision] = records(ledger, "decision")
    assert (decision["status"], decision["decision"]) == ("cancelled", "cancelled")
    assert "expiredAfter" not in decision


async def test_only_someone_who_may_decide_can_close_an_expired_request(
    ledger: SQLiteLedger,
) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    clock.now = NOW + DAY
    sams = await answer(agent, paused, cancel(item), SAM, "r2")
    # Escalated to admin by now (after 2 h): still not Sam's to decide.
    assert refusal(sams) == (
        "forbidden", "Needs approval from role finance or role admin, not the requester."
    )  # fmt: skip
    assert not records(ledger, "decision")
    # Finance may: the cancellation is the expiry, not a withdrawal (which only Rita makes).
    adas = await answer(agent, paused, cancel(item), ADA, "r3")
    assert adas[-1]["type"] == "RUN_FINISHED", adas[-1]
    [decision] = records(ledger, "decision")
    assert decision["status"] == "expired"


async def test_a_rules_expires_after_shortens_the_seal(ledger: SQLiteLedger) -> None:
    text = POLICY_PATH.read_text().replace(
        'remind_after = "30m"', 'expires_after = "3h"\nremind_after = "30m"'
    )
    assert 'expires_after = "3h"' in text
    clock = Clock()
    agent = agent_with(ledger, clock, Policy.parse(text))
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    assert expires_ms(item) == (NOW + 3 * 3600) * 1000
    assert Sealer(SECRET).tool_call_expiry(item["toolCallId"]) == item["expiresAt"]
    # A transfer no rule names keeps the sealer's TTL.
    small = the_item(await ask(agent, "transfer 25 to Ada"))
    assert expires_ms(small) == (NOW + DAY) * 1000

    clock.now = NOW + 3 * 3600 - 1
    assert refusal(await answer(agent, paused, approve(item), RITA, "r2"))[0] == "forbidden"
    clock.now = NOW + 3 * 3600
    assert refusal(await answer(agent, paused, approve(item), ADA, "r3"))[0] == "expired"
    events = await answer(agent, paused, cancel(item), RITA, "r4")
    assert result_of(events)[0] == {
        "error": "Expired: nobody decided within 3 h.", "expired": True
    }  # fmt: skip
    assert records(ledger, "decision")[0]["expiredAfter"] == "3 h"


# Generic questions -------------------------------------------------------------------------


async def test_an_expired_question_cancelled_tells_the_model_it_expired(
    ledger: SQLiteLedger,
) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "ship order 42")
    item = the_item(paused)
    assert expires_ms(item) == (NOW + DAY) * 1000
    clock.now = NOW + DAY + 60
    late = {**cancel(item), "status": "resolved", "payload": {"speed": "express",
                                                               "giftWrap": False}}  # fmt: skip
    assert refusal(await answer(agent, paused, late, RITA, "r2"))[0] == "expired"
    events = await answer(agent, paused, cancel(item), RITA, "r3")
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert text_of(events) == "Nobody answered in time, so order 42 stays where it is."
    [decision] = records(ledger, "decision")
    assert (decision["status"], decision["decision"], decision["expiredAfter"]) == (
        "expired", "expired", "1 day"
    )  # fmt: skip
    assert not records(ledger, "execution")


async def test_a_question_cancelled_in_time_is_cancelled(ledger: SQLiteLedger) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "ship order 42")
    events = await answer(agent, paused, cancel(the_item(paused)), RITA, "r2")
    assert text_of(events) == "Okay, order 42 stays where it is."
    assert records(ledger, "decision")[0]["status"] == "cancelled"


async def test_an_expired_release_plan_changes_nothing(ledger: SQLiteLedger) -> None:
    clock = Clock()
    agent = agent_with(ledger, clock)
    paused = await ask(agent, "plan release")
    clock.now = NOW + 2 * DAY
    events = await answer(agent, paused, cancel(the_item(paused)), RITA, "r2")
    assert text_of(events) == "The release plan review expired unanswered; nothing changes."


async def test_a_question_rules_expires_after_sets_its_expiry(ledger: SQLiteLedger) -> None:
    policy = Policy.parse(
        '[[rules]]\nname = "quick-shipping"\ninterrupt = "shipping-speed"\n'
        'approvers = ["rita@example.com"]\nexpires_after = "45m"\n'
    )
    clock = Clock()
    agent = agent_with(ledger, clock, policy)
    paused = await ask(agent, "ship order 42")
    item = the_item(paused)
    assert expires_ms(item) == (NOW + 45 * 60) * 1000
    clock.now = NOW + 45 * 60
    events = await answer(agent, paused, cancel(item), RITA, "r2")
    assert text_of(events) == "Nobody answered in time, so order 42 stays where it is."
    [decision] = records(ledger, "decision")
    assert (decision["expiredAfter"], decision["rule"]) == ("45 min", "quick-shipping")


async def test_without_a_sealer_a_rule_still_gives_a_question_its_expiry(
    ledger: SQLiteLedger,
) -> None:
    policy = Policy.parse(
        '[[rules]]\nname = "quick-shipping"\ninterrupt = "shipping-speed"\n'
        'approvers = ["rita@example.com"]\nexpires_after = "45m"\n'
    )
    clock = Clock()
    agent = build_demo_agent(demo_model(), ledger=ledger, policy=policy)
    agent.clock = clock
    item = the_item(await ask(agent, "ship order 42"))
    assert expires_ms(item) == (NOW + 45 * 60) * 1000
    # No rule, no sealer: nothing sets an expiry.
    plain = build_demo_agent(demo_model(), ledger=ledger)
    plain.clock = clock
    assert the_item(await ask(plain, "ship order 42")).get("expiresAt") is None


async def _expire_with(
    agent: Agent, clock: Clock, cosigners: tuple[Identity, ...]
) -> list[dict[str, Any]]:
    """Rita's key rotation (two of ops), expired with `cosigners` passed as the desk does."""
    paused = await ask(agent, "rotate production keys")
    item = the_item(paused)
    clock.now = NOW + DAY
    body = {"threadId": "t", "runId": "r2", "parentRunId": "r1",
            "messages": paused[-2]["messages"], "resume": [cancel(item)]}  # fmt: skip
    return [
        event_to_wire(event)
        async for event in agent.run(
            run_input(**body), identity=RITA, cosigners={item["id"]: cosigners}
        )
    ]


async def test_a_quorum_that_expired_short_tells_the_model_who_approved(
    ledger: SQLiteLedger,
) -> None:
    """The desk passes Sam's approval (twice: each counts once) with the expiry: the model
    reads who approved and how far it got, and so does the trail (by email, with the rule)."""
    clock = Clock()
    events = await _expire_with(agent_with(ledger, clock), clock, (SAM, SAM))
    said = "Expired: only Sam approved (1 of 2) within 1 day, so nothing ran."
    assert result_of(events) == (
        {"error": said, "expired": True, "approvedBy": ["Sam"], "quorum": 2}, True
    )  # fmt: skip
    assert text_of(events) == (
        "The rotate keys expired before enough people approved: only Sam approved (1 of 2) "
        "within 1 day, so nothing ran."
    )
    [decision] = records(ledger, "decision")
    assert (decision["approvedBy"], decision["quorum"], decision["rule"]) == (
        [SAM.email], 2, "key-rotation"
    )  # fmt: skip
    assert not records(ledger, "execution")


async def test_approvals_that_do_not_fall_short_are_not_said_to(ledger: SQLiteLedger) -> None:
    """Two approvals of a quorum of two would have run it: an expiry with them says nobody
    decided rather than "only Sam and Olive approved (2 of 2)"."""
    clock = Clock()
    events = await _expire_with(agent_with(ledger, clock), clock, (SAM, OLIVE))
    assert result_of(events)[0] == {
        "error": "Expired: nobody decided within 1 day.", "expired": True
    }  # fmt: skip
    [decision] = records(ledger, "decision")
    assert "approvedBy" not in decision

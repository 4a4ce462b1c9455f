"""A quorum collected by a trusted caller: `Agent.run(..., cosigners=...)` names who approved
an item earlier (the approval desk does, in-process), and the engine counts them with the
person answering. The demo policy's `key-rotation` needs two of ops (Sam, Olive), and not
the requester (Rita)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import RunAgentInput

from chat_app.agent import Agent, event_to_wire
from chat_app.demo import POLICY_PATH, build_demo_agent, demo_model
from chat_app.interrupts import generic_continuation_from_descriptor, wrap_generic_continuation
from chat_app.trust import DEMO_PEOPLE, Identity, Policy, Sealer, SQLiteLedger
from tests.agent.builders import collect, run_input
from tests.server.served import serve

SECRET = b"quorum-test-secret-quorum-test-secret"
RITA, ADA, SAM, OLIVE = DEMO_PEOPLE[:4]


def agent_with(ledger: SQLiteLedger, policy: Policy | None = None) -> Agent:
    return build_demo_agent(
        demo_model(), sealer=Sealer(SECRET), ledger=ledger,
        policy=policy or Policy.load(POLICY_PATH),
    )  # fmt: skip


async def ask(agent: Agent, phrase: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rita asks: the run pauses on one item."""
    body = {"threadId": "t", "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": phrase}]}  # fmt: skip
    paused = await collect(agent, body, RITA)
    assert paused[-1]["type"] == "RUN_FINISHED", paused[-1]
    [item] = paused[-1]["outcome"]["interrupts"]
    return paused, item


async def rotation(agent: Agent) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rita asks to rotate the production keys: the run pauses on one approval."""
    paused, item = await ask(agent, "rotate production keys")
    assert item["metadata"]["chat_app:policy"]["rule"] == "key-rotation"
    return paused, item


async def resume(
    agent: Agent,
    paused: list[dict[str, Any]],
    entry: dict[str, Any],
    who: Identity,
    run: str,
    cosigners: Mapping[str, Sequence[Identity]] | None = None,
) -> list[dict[str, Any]]:
    """The continuation answering `entry`, run in-process as `who` with `cosigners`."""
    body = {"threadId": "t", "runId": run, "parentRunId": "r1",
            "messages": paused[-2]["messages"], "resume": [entry]}  # fmt: skip
    given: RunAgentInput = run_input(**body)
    return [
        event_to_wire(event) async for event in agent.run(given, identity=who, cosigners=cosigners)
    ]


async def decide(
    agent: Agent,
    paused: list[dict[str, Any]],
    item: dict[str, Any],
    approved: bool,
    who: Identity,
    run: str,
    cosigners: Mapping[str, Sequence[Identity]] | None = None,
) -> list[dict[str, Any]]:
    entry = {"interruptId": item["id"], "status": "resolved", "payload": {"approved": approved}}
    return await resume(agent, paused, entry, who, run, cosigners)


def refusal(events: list[dict[str, Any]]) -> tuple[str, str]:
    assert events[-1]["type"] == "RUN_ERROR", [e["type"] for e in events]
    first = events[-1]["metadata"]["tanstack"]["interruptErrors"][0]
    return first["code"], first["message"]


def executions(ledger: SQLiteLedger) -> list[str]:
    return [r.data["toolName"] for r in ledger.records() if r.kind == "execution"]


async def test_one_approver_alone_is_refused(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused, item = await rotation(agent)
    code, message = refusal(await decide(agent, paused, item, True, OLIVE, "r2"))
    assert code == "forbidden"
    assert message == (
        "Needs 2 approvals from role ops (rule key-rotation): the approval desk collects "
        "them; a stateless continuation cannot."
    )
    assert executions(ledger) == []


async def test_an_approver_with_a_cosigner_runs_the_tool_once_and_the_trail_names_both(
    ledger: SQLiteLedger,
) -> None:
    agent = agent_with(ledger)
    paused, item = await rotation(agent)
    done = await decide(agent, paused, item, True, OLIVE, "r2", {item["id"]: [SAM]})
    assert done[-1]["type"] == "RUN_FINISHED", done[-1]
    assert executions(ledger) == ["rotate_keys"]
    [decision] = [r for r in ledger.records() if r.kind == "decision"]
    assert decision.actor == OLIVE.email
    assert decision.data["rule"] == "key-rotation" and decision.data["verifiedBy"] == "demo"
    assert decision.data["cosigners"] == [
        {"actor": SAM.email, "verifiedBy": "demo", "roles": ["ops"]}
    ]
    # The same continuation again is a replay: nothing runs twice.
    again = await decide(agent, paused, item, True, OLIVE, "r3", {item["id"]: [SAM]})
    assert refusal(again)[0] == "conflict"
    assert executions(ledger) == ["rotate_keys"]


async def test_the_same_person_twice_counts_once(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused, item = await rotation(agent)
    twice = Identity(email="OLIVE@example.com", method="demo", roles=frozenset({"ops"}))
    code, message = refusal(
        await decide(agent, paused, item, True, OLIVE, "r2", {item["id"]: [OLIVE, twice]})
    )
    assert code == "forbidden"
    assert message == (
        "Needs 2 approvals from role ops (rule key-rotation): 1 given (olive@example.com)."
    )
    assert executions(ledger) == []


async def test_a_cosigner_the_rule_does_not_allow_is_refused_by_name(
    ledger: SQLiteLedger,
) -> None:
    agent = agent_with(ledger)
    paused, item = await rotation(agent)
    code, message = refusal(
        await decide(agent, paused, item, True, OLIVE, "r2", {item["id"]: [ADA]})
    )
    assert code == "forbidden"
    assert message == (
        "Cosigner ada@example.com may not approve (rule key-rotation): "
        "Needs approval from role ops, not the requester."
    )
    assert executions(ledger) == []
    [refused] = [r for r in ledger.records() if r.kind == "refusal"]
    assert refused.actor == OLIVE.email and "ada@example.com" in refused.data["reason"]


async def test_the_requester_cannot_cosign_their_own_request(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused, item = await rotation(agent)
    # Rita holds ops here, so only being the requester stands in her way.
    rita_ops = Identity(email=RITA.email, method="demo", roles=frozenset({"ops"}))
    for run, rita in (("r2", RITA), ("r3", rita_ops)):
        code, message = refusal(
            await decide(agent, paused, item, True, OLIVE, run, {item["id"]: [rita]})
        )
        assert code == "forbidden"
        assert message == (
            "Cosigner rita@example.com may not approve (rule key-rotation): "
            "Needs approval from role ops, not the requester."
        )
    assert executions(ledger) == []


async def test_cosigners_of_another_item_do_not_count(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused, item = await rotation(agent)
    events = await decide(agent, paused, item, True, OLIVE, "r2", {"approval_other": [SAM]})
    assert "stateless continuation cannot" in refusal(events)[1]
    assert executions(ledger) == []


async def test_edited_arguments_are_not_what_the_cosigners_approved(
    ledger: SQLiteLedger,
) -> None:
    agent = agent_with(ledger)
    paused, item = await rotation(agent)
    entry = {"interruptId": item["id"], "status": "resolved",
             "payload": {"approved": True, "editedArgs": {"environment": "staging"}}}  # fmt: skip
    code, message = refusal(await resume(agent, paused, entry, OLIVE, "r2", {item["id"]: [SAM]}))
    assert code == "forbidden"
    assert message == (
        "Cosigners approved the arguments as shown; edited arguments need approvals of their "
        "own (rule key-rotation)."
    )
    assert executions(ledger) == []


async def test_a_question_with_a_quorum_is_answered_with_a_cosigner_by_its_interrupt_id(
    ledger: SQLiteLedger,
) -> None:
    policy = Policy.parse(
        '[roles]\nops = ["sam@example.com", "olive@example.com"]\n\n'
        '[[rules]]\nname = "release-review"\ninterrupt = "release-plan"\n'
        'approvers = ["role:ops"]\nquorum = 2\n'
    )
    agent = agent_with(ledger, policy)
    paused, item = await ask(agent, "plan release")
    assert item["metadata"]["chat_app:policy"]["rule"] == "release-review"
    continuation = generic_continuation_from_descriptor(item)
    assert continuation is not None
    entry = {"interruptId": item["id"], "status": "resolved", "payload": {"approved": True},
             "metadata": dict(wrap_generic_continuation(continuation))}  # fmt: skip
    alone = await resume(agent, paused, entry, SAM, "r2")
    assert "2 approvals" in refusal(alone)[1]
    done = await resume(agent, paused, entry, SAM, "r3", {item["id"]: [OLIVE]})
    assert done[-1]["type"] == "RUN_FINISHED", done[-1]
    [decision] = [r for r in ledger.records() if r.kind == "decision"]
    assert decision.actor == SAM.email and decision.data["rule"] == "release-review"
    assert decision.data["cosigners"] == [
        {"actor": OLIVE.email, "verifiedBy": "demo", "roles": ["admin", "ops"]}
    ]


async def test_a_rejection_by_one_allowed_person_decides_alone(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused, item = await rotation(agent)
    rejected = await decide(agent, paused, item, False, SAM, "r2")
    assert rejected[-1]["type"] == "RUN_FINISHED", rejected[-1]
    assert executions(ledger) == []
    [decision] = [r for r in ledger.records() if r.kind == "decision"]
    assert decision.actor == SAM.email and decision.data["decision"] == "rejected"
    assert "cosigners" not in decision.data


def test_a_request_body_cannot_claim_who_approved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `POST /api/chat` there are no cosigners, whatever the body says: one approval
    of a quorum is refused as before, and nothing runs."""
    monkeypatch.setenv("CHAT_APP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHAT_APP_DATABASE_URL", raising=False)
    with serve(
        tmp_path, monkeypatch, policy=Policy.load(POLICY_PATH), CHAT_APP_AUTH="demo"
    ) as served:
        rita, olive = served.cookie_of(RITA.email), served.cookie_of(OLIVE.email)
        paused = served.chat({"threadId": "t", "runId": "r1", "messages": [
            {"id": "u1", "role": "user", "content": "rotate production keys"}]}, rita)  # fmt: skip
        [item] = paused[-1]["outcome"]["interrupts"]
        claimed = {item["id"]: [SAM.email]}
        body = {"threadId": "t", "runId": "r2", "parentRunId": "r1",
                "messages": paused[-2]["messages"],
                "forwardedProps": {"cosigners": claimed},
                "resume": [{"interruptId": item["id"], "status": "resolved",
                            "payload": {"approved": True}}]}  # fmt: skip
        code, message = refusal(served.chat(body, olive))
        assert code == "forbidden" and "stateless continuation cannot" in message
        assert executions(served.ledger) == []

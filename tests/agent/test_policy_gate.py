"""The policy as the engine applies it: decided alone at the pause, or checked against who
answers (and who asked, read from the sealed ids) before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

from chat_app.agent import (
    Agent,
    ModelRequest,
    ScriptedCall,
    ScriptedModel,
    ScriptedTurn,
)
from chat_app.demo import POLICY_PATH, build_demo_agent, demo_model
from chat_app.interrupts import generic_continuation_from_descriptor, wrap_generic_continuation
from chat_app.trust import (
    ANONYMOUS,
    DEMO_PEOPLE,
    WITHDRAWAL_ONLY,
    Identity,
    Policy,
    PolicyError,
    Sealer,
    SQLiteLedger,
)
from tests.agent.builders import collect
from tests.trust.policies import deciding_alone

SECRET = b"policy-test-secret-policy-test-secret"
RITA, ADA, SAM, OLIVE = DEMO_PEOPLE[:4]


def agent_with(ledger: SQLiteLedger, policy: Policy | None = None) -> Agent:
    return build_demo_agent(
        demo_model(),
        sealer=Sealer(SECRET),
        ledger=ledger,
        policy=policy or Policy.load(POLICY_PATH),
    )


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


def decide(item: dict[str, Any], approved: bool, **extra: Any) -> dict[str, Any]:
    return {"interruptId": item["id"], "status": "resolved",
            "payload": {"approved": approved, **extra}}  # fmt: skip


def refusal(events: list[dict[str, Any]]) -> tuple[str, str]:
    assert events[-1]["type"] == "RUN_ERROR", [e["type"] for e in events]
    first = events[-1]["metadata"]["tanstack"]["interruptErrors"][0]
    return first["code"], first["message"]


def item_continuation(item: dict[str, Any]) -> dict[str, Any]:
    """The continuation metadata a client echoes for a generic item."""
    continuation = generic_continuation_from_descriptor(item)
    assert continuation is not None
    return dict(wrap_generic_continuation(continuation))


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


async def test_a_small_refund_is_approved_by_the_policy_and_nobody_is_asked(
    ledger: SQLiteLedger,
) -> None:
    events = await ask(agent_with(ledger), "refund 20 to order 42")
    assert events[-1]["type"] == "RUN_FINISHED"
    assert (events[-1].get("outcome") or {}).get("type") != "interrupt"
    [custom] = [e for e in events if e["type"] == "CUSTOM"]
    assert custom["name"] == "chat_app:policyDecision"
    assert custom["value"]["rule"] == "small-refunds" and custom["value"]["decision"] == "approved"
    assert "Refunded 20 to order 42" in text_of(events)
    kinds = [(r.kind, r.data.get("decidedBy"), r.data.get("rule")) for r in ledger.records()]
    assert ("decision", "policy", "small-refunds") in kinds
    assert [k for k, *_ in kinds].count("execution") == 1


async def test_a_rule_that_rejects_gives_the_model_its_reason_and_runs_nothing(
    ledger: SQLiteLedger,
) -> None:
    policy = Policy.parse(
        '[[rules]]\nname = "no-deletes"\ntool = "delete_project"\ndecide = "reject"\n'
        'reason = "projects are archived, not deleted"\n'
    )
    events = await ask(agent_with(ledger, policy), "delete project apollo")
    assert "projects are archived, not deleted" in text_of(events)
    assert not [r for r in ledger.records() if r.kind == "execution"]


async def test_a_large_transfer_waits_for_finance_and_names_its_rule(
    ledger: SQLiteLedger,
) -> None:
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    shown = item["metadata"]["chat_app:policy"]
    assert shown["rule"] == "large-transfers" and shown["approvers"] == ["role:finance"]
    assert shown["requester"] == RITA.email and shown["notRequester"] is True

    mine = await answer(agent, paused, decide(item, True), RITA, "r2")
    assert refusal(mine) == ("forbidden", "Needs approval from role finance, not the requester.")
    sams = await answer(agent, paused, decide(item, True), SAM, "r3")
    assert refusal(sams) == ("forbidden", "Needs approval from role finance, not the requester.")
    assert not [r for r in ledger.records() if r.kind == "execution"]
    refusals = [r for r in ledger.records() if r.kind == "refusal"]
    assert [r.actor for r in refusals] == [RITA.email, SAM.email]

    adas = await answer(agent, paused, decide(item, True), ADA, "r4")
    assert "Sent 5,000 to Ada" in text_of(adas)
    [decision] = [r for r in ledger.records() if r.kind == "decision"]
    assert decision.actor == ADA.email
    assert (decision.data["rule"], decision.data["verifiedBy"]) == ("large-transfers", "demo")


async def test_without_a_rule_only_the_person_who_asked_decides(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 25 to Ada")
    item = the_item(paused)
    assert item["metadata"]["chat_app:policy"]["rule"] is None
    adas = await answer(agent, paused, decide(item, True), ADA, "r2")
    assert refusal(adas) == ("forbidden", "Only the person who asked decides this.")
    ritas = await answer(agent, paused, decide(item, True), RITA, "r3")
    assert "Sent 25 to Ada" in text_of(ritas)


async def test_a_call_the_policy_came_to_decide_alone_is_answered_by_whoever_asked(
    ledger: SQLiteLedger,
) -> None:
    """A transfer paused for finance; the app came back approving large transfers by policy.
    The rule asks nobody now, so the call is Rita's, as with no rule: Ada's approval is
    refused, and Rita's runs it."""
    paused = await ask(agent_with(ledger), "transfer 5000 to Ada")
    item = the_item(paused)
    agent = agent_with(ledger, Policy.parse(deciding_alone("large-transfers", "approve")))

    adas = await answer(agent, paused, decide(item, True), ADA, "r2")
    assert refusal(adas) == ("forbidden", "Only the person who asked decides this.")
    ritas = await answer(agent, paused, decide(item, True), RITA, "r3")
    assert "Sent 5,000 to Ada" in text_of(ritas)
    [decision] = [r for r in ledger.records() if r.kind == "decision"]
    assert (decision.actor, decision.data["rule"]) == (RITA.email, "large-transfers")


async def test_a_call_the_policy_came_to_reject_can_only_be_rejected(
    ledger: SQLiteLedger,
) -> None:
    """As above, with large transfers now rejected by policy: even Rita cannot approve hers
    (she reads why), and she may still reject it; a stranger's rejection is refused."""
    paused = await ask(agent_with(ledger), "transfer 5000 to Ada")
    item = the_item(paused)
    agent = agent_with(ledger, Policy.parse(deciding_alone("large-transfers", "reject")))

    ritas = await answer(agent, paused, decide(item, True), RITA, "r2")
    assert refusal(ritas) == (
        "forbidden", "Rejected by policy large-transfers: frozen for the audit."
    )  # fmt: skip
    no = decide(item, False, payload={"reason": "not now"})
    sams = await answer(agent, paused, no, SAM, "r3")
    assert refusal(sams) == ("forbidden", "Only the person who asked decides this.")
    rejected = await answer(agent, paused, no, RITA, "r4")
    assert rejected[-1]["type"] == "RUN_FINISHED"
    assert not [r for r in ledger.records() if r.kind == "execution"]


async def test_editing_a_call_into_a_rule_that_approves_alone_needs_no_one_else(
    ledger: SQLiteLedger,
) -> None:
    """Ada (finance) cuts a large transfer down to what a rule approves by itself: what was
    shown is judged by its approvers, what would run only by its own rule, which lets it."""
    small = (
        '\n[[rules]]\nname = "small-transfers"\ntool = "transfer"\n'
        'when = { properties = { amount = { maximum = 100 } } }\ndecide = "approve"\n'
    )
    policy = Policy.parse(POLICY_PATH.read_text() + small)
    agent = agent_with(ledger, policy)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    smaller = decide(item, True, editedArgs={"recipient": "Ada", "amount": 50})
    adas = await answer(agent, paused, smaller, ADA, "r2")
    assert "Sent 50 to Ada" in text_of(adas)


async def test_editing_arguments_cannot_move_a_call_out_of_its_rule(
    ledger: SQLiteLedger,
) -> None:
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 25 to Ada")
    item = the_item(paused)
    bigger = decide(item, True, editedArgs={"recipient": "Ada", "amount": 5000})
    events = await answer(agent, paused, bigger, RITA, "r2")
    assert refusal(events) == (
        "forbidden",
        "Edited, the call falls under rule large-transfers: Needs approval from role finance, "
        "not the requester.",
    )
    # Nor into no rule's, where only whoever asked runs it: not finance.
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    smaller = decide(item, True, editedArgs={"recipient": "Ada", "amount": 25})
    events = await answer(agent, paused, smaller, ADA, "r3")
    assert refusal(events) == (
        "forbidden", "Edited, the call falls under no rule: only the person who asked runs it so."
    )  # fmt: skip
    assert not [r for r in ledger.records() if r.kind == "execution"]


async def test_an_approver_changes_only_what_the_rule_lets_be_edited(ledger: SQLiteLedger) -> None:
    """The demo's large transfers are editable in their amount alone: Ada (finance) may not
    approve Rita's transfer to Bob as one to herself; the refusal is in the trail, nothing
    runs, and the same item is approved with a lower amount, to Bob."""
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 5000 to Bob")
    item = the_item(paused)
    assert item["metadata"]["chat_app:policy"]["editable"] == ["amount"]
    to_herself = decide(item, True, editedArgs={"recipient": "Ada", "amount": 5000})
    events = await answer(agent, paused, to_herself, ADA, "r2")
    assert refusal(events) == (
        "forbidden", "Rule large-transfers lets an approver change only amount, not recipient."
    )  # fmt: skip
    [refused] = [r for r in ledger.records() if r.kind == "refusal"]
    assert refused.actor == ADA.email and "not recipient" in str(refused.data)
    assert not [r for r in ledger.records() if r.kind == "execution"]

    lower = decide(item, True, editedArgs={"recipient": "Bob", "amount": 4000})
    adas = await answer(agent, paused, lower, ADA, "r3")
    assert "Sent 4,000 to Bob" in text_of(adas)
    [ran] = [r for r in ledger.records() if r.kind == "execution"]
    assert ran.data["args"] == {"recipient": "Bob", "amount": 4000}


async def test_a_kept_argument_is_refused_before_the_rule_the_edit_would_fall_under(
    ledger: SQLiteLedger,
) -> None:
    """Ada pays herself 500: 500 falls under no rule (Rita's alone), but what she may not
    change is said first, as the desk says it (tests/desk/test_refused.py)."""
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 5000 to Bob")
    both = decide(the_item(paused), True, editedArgs={"recipient": "Ada", "amount": 500})
    events = await answer(agent, paused, both, ADA, "r2")
    assert refusal(events) == (
        "forbidden", "Rule large-transfers lets an approver change only amount, not recipient."
    )  # fmt: skip


async def test_under_editable_empty_only_the_arguments_as_shown_are_approved(
    ledger: SQLiteLedger,
) -> None:
    text = POLICY_PATH.read_text().replace('editable = ["amount"]', "editable = []")
    agent = agent_with(ledger, Policy.parse(text))
    paused = await ask(agent, "transfer 5000 to Bob")
    item = the_item(paused)
    assert item["metadata"]["chat_app:policy"]["editable"] == []
    lower = decide(item, True, editedArgs={"recipient": "Bob", "amount": 4000})
    assert refusal(await answer(agent, paused, lower, ADA, "r2")) == (
        "forbidden",
        "Rule large-transfers lets nobody change the arguments: approve them as shown, or reject.",
    )
    same = decide(item, True, editedArgs={"recipient": "Bob", "amount": 5000})
    assert "Sent 5,000 to Bob" in text_of(await answer(agent, paused, same, ADA, "r3"))


async def test_a_kept_number_runs_as_shown_however_the_answer_wrote_it(
    ledger: SQLiteLedger,
) -> None:
    """Recipient editable, amount kept: `5000.0` for `5000` is no change, and the tool and
    the trail get the `5000` shown."""
    text = POLICY_PATH.read_text().replace('editable = ["amount"]', 'editable = ["recipient"]')
    agent = agent_with(ledger, Policy.parse(text))
    paused = await ask(agent, "transfer 5000 to Bob")
    edited = decide(the_item(paused), True, editedArgs={"recipient": "Carol", "amount": 5000.0})
    assert "Sent 5,000 to Carol" in text_of(await answer(agent, paused, edited, ADA, "r2"))
    [ran] = [r for r in ledger.records() if r.kind == "execution"]
    assert ran.data["args"] == {"recipient": "Carol", "amount": 5000}
    assert type(ran.data["args"]["amount"]) is int


async def test_a_rule_without_editable_says_so_to_the_page(ledger: SQLiteLedger) -> None:
    paused = await ask(agent_with(ledger), "rotate production keys", SAM)
    assert the_item(paused)["metadata"]["chat_app:policy"]["editable"] is None


async def test_the_requester_may_withdraw_but_not_approve(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    cancel = {"interruptId": item["id"], "status": "cancelled"}
    events = await answer(agent, paused, cancel, RITA, "r2")
    assert events[-1]["type"] == "RUN_FINISHED"
    assert not [r for r in ledger.records() if r.kind == "execution"]


async def test_an_approver_says_no_by_rejecting_not_by_cancelling(ledger: SQLiteLedger) -> None:
    """A cancellation stops the call with no reason; the rule asks a rejection for one. So it
    is the requester's withdrawal alone: finance's is refused, and nothing is decided."""
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 5000 to Ada")
    item = the_item(paused)
    cancel = {"interruptId": item["id"], "status": "cancelled"}
    assert refusal(await answer(agent, paused, cancel, ADA, "r2")) == (
        "forbidden", WITHDRAWAL_ONLY
    )  # fmt: skip
    assert [r.kind for r in ledger.records()] == ["pause", "refusal"]
    refused = ledger.records()[-1].data
    assert (refused["toolName"], refused["rule"]) == ("transfer", "large-transfers")
    events = await answer(agent, paused, decide(item, False, payload={"reason": "No."}), ADA, "r3")
    assert events[-1]["type"] == "RUN_FINISHED"
    assert [r.kind for r in ledger.records()][-1] == "decision"


async def test_a_quorum_is_not_collected_by_a_stateless_continuation_but_a_rejection_decides(
    ledger: SQLiteLedger,
) -> None:
    agent = agent_with(ledger)
    paused = await ask(agent, "rotate production keys", RITA)
    item = the_item(paused)
    assert item["metadata"]["chat_app:policy"]["quorum"] == 2
    code, message = refusal(await answer(agent, paused, decide(item, True), SAM, "r2"))
    assert code == "forbidden" and "Needs 2 approvals from role ops" in message
    assert "approval desk" in message
    rejected = await answer(agent, paused, decide(item, False), OLIVE, "r3")
    assert rejected[-1]["type"] == "RUN_FINISHED"
    assert not [r for r in ledger.records() if r.kind == "execution"]


async def test_who_asked_cannot_be_changed_in_the_history(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 25 to Ada", RITA)
    item = the_item(paused)
    sealer = Sealer(SECRET)
    forged_tag = sealer.requester_tag(ADA.email)
    call_id = item["toolCallId"]
    forged_id = call_id[:18] + forged_tag + call_id[24:]
    history = [
        {**m, "toolCalls": [{**c, "id": forged_id} for c in m.get("toolCalls", [])]}
        if m["role"] == "assistant" else m
        for m in paused[-2]["messages"]
    ]  # fmt: skip
    entry = {"interruptId": "approval_" + forged_id, "status": "resolved",
             "payload": {"approved": True}}  # fmt: skip
    body = {"threadId": "t", "runId": "r2", "parentRunId": "r1", "messages": history,
            "resume": [entry]}  # fmt: skip
    events = await collect(agent, body, ADA)
    assert refusal(events)[0] == "stale"


async def test_anonymous_visitors_decide_their_own_requests_when_sign_in_is_off(
    ledger: SQLiteLedger,
) -> None:
    agent = agent_with(ledger)
    paused = await ask(agent, "transfer 25 to Ada", ANONYMOUS)
    events = await answer(agent, paused, decide(the_item(paused), True), ANONYMOUS, "r2")
    assert "Sent 25 to Ada" in text_of(events)
    paused = await ask(agent, "transfer 5000 to Ada", ANONYMOUS)
    events = await answer(agent, paused, decide(the_item(paused), True), ANONYMOUS, "r3")
    assert refusal(events)[0] == "forbidden"


def two_transfers(request: ModelRequest) -> ScriptedTurn:
    """Asks for one large transfer, then, once it is answered, for another."""
    answered = sum(1 for message in request.messages if message.role == "tool")
    if answered < 2:
        amount = 5000 + 1000 * answered
        return ScriptedTurn(
            calls=[ScriptedCall(name="transfer", arguments={"recipient": "Ada", "amount": amount})]
        )
    return ScriptedTurn(text="Both done.")


async def test_an_approver_moves_a_request_on_without_becoming_its_requester(
    ledger: SQLiteLedger,
) -> None:
    """What the model asks next, after Ada approved Rita's first transfer, is still Rita's
    request: Rita may not approve it herself."""
    agent = build_demo_agent(
        ScriptedModel(two_transfers), sealer=Sealer(SECRET), ledger=ledger,
        policy=Policy.load(POLICY_PATH),
    )  # fmt: skip
    first = await ask(agent, "two transfers", RITA)
    second = await answer(agent, first, decide(the_item(first), True), ADA, "r2")
    item = the_item(second)
    assert item["metadata"]["chat_app:policy"]["requester"] is None  # Ada knows only the tag
    body = {"threadId": "t", "runId": "r3", "parentRunId": "r2",
            "messages": second[-2]["messages"], "resume": [decide(item, True)]}  # fmt: skip
    assert refusal(await collect(agent, body, RITA))[0] == "forbidden"
    body["runId"] = "r4"
    done = await collect(agent, body, ADA)
    assert done[-1]["type"] == "RUN_FINISHED"
    amounts = [r.data["args"]["amount"] for r in ledger.records() if r.kind == "execution"]
    assert amounts == [5000, 6000]


async def test_only_the_requester_answers_for_their_client_tools(ledger: SQLiteLedger) -> None:
    agent = agent_with(ledger)
    paused = await ask(agent, "what time is it", RITA)
    item = the_item(paused)
    output = {"interruptId": item["id"], "status": "resolved",
              "payload": {"time": "09:00", "timeZone": "Europe/Paris"}}  # fmt: skip
    assert refusal(await answer(agent, paused, output, ADA, "r2"))[0] == "forbidden"
    assert (await answer(agent, paused, output, RITA, "r3"))[-1]["type"] == "RUN_FINISHED"


async def test_a_question_whose_rule_needs_a_quorum_is_not_answered_by_one(
    ledger: SQLiteLedger,
) -> None:
    policy = Policy.parse(
        '[roles]\nops = ["sam@example.com", "olive@example.com"]\n\n'
        '[[rules]]\nname = "release-review"\ninterrupt = "release-plan"\n'
        'approvers = ["role:ops"]\nquorum = 2\n'
    )
    agent = agent_with(ledger, policy)
    paused = await ask(agent, "plan release", RITA)
    item = the_item(paused)
    assert item["metadata"]["chat_app:policy"]["rule"] == "release-review"
    entry = {"interruptId": item["id"], "status": "resolved", "payload": {"approved": True},
             "metadata": item_continuation(item)}  # fmt: skip
    code, message = refusal(await answer(agent, paused, entry, SAM, "r2"))
    assert code == "forbidden" and "2 approvals" in message


async def test_without_a_policy_the_person_who_asked_still_decides(ledger: SQLiteLedger) -> None:
    agent = build_demo_agent(demo_model(), sealer=Sealer(SECRET), ledger=ledger)
    paused = await ask(agent, "transfer 25 to Ada", RITA)
    assert "chat_app:policy" not in the_item(paused)["metadata"]
    adas = await answer(agent, paused, decide(the_item(paused), True), ADA, "r2")
    assert refusal(adas) == ("forbidden", "Only the person who asked decides this.")


@pytest.mark.parametrize(
    ("rules", "words"),
    [
        ('tool = "transfr"\napprovers = ["role:finance"]', ["transfr", "transfer"]),
        ('tool = "get_local_time"\napprovers = ["role:finance"]', ["runs without asking"]),
        ('interrupt = "shiping-speed"\napprovers = ["role:finance"]', ["shipping-speed"]),
    ],
)
def test_a_rule_this_agent_could_never_apply_stops_it(
    ledger: SQLiteLedger, rules: str, words: list[str]
) -> None:
    policy = Policy.parse(
        f'[roles]\nfinance = ["ada@example.com"]\n\n[[rules]]\nname = "r"\n{rules}\n',
        "ops/policy.toml",
    )
    with pytest.raises(PolicyError) as refused:
        agent_with(ledger, policy)
    assert str(refused.value).startswith("ops/policy.toml, rule 'r': names ")
    assert all(word in str(refused.value) for word in words)

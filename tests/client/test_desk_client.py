"""`DeskClient` against our server with the desk on a real socket (`tests/server/served.py`),
on SQLite and on PostgreSQL: a script starts a conversation, finance decides from the inbox,
and every refusal arrives as a `DeskRequestError` with the server's own words."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from chat_app.client import ABSENT, DeskClient, DeskRequestError, SSEConnection
from chat_app.demo import POLICY_PATH
from chat_app.trust import Policy
from tests.live_server import free_port
from tests.server.served import DeskServed, serve_desk

RITA, ADA, SAM = "rita@example.com", "ada@example.com", "sam@example.com"


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")
    monkeypatch.setenv("CHAT_APP_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[DeskServed]:
    with serve_desk(
        tmp_path, database_url, policy=Policy.load(POLICY_PATH), mode="password"
    ) as server:
        yield server


def token_of(served: DeskServed, email: str) -> str:
    """An API token of a new account (the policy gives the demo people their roles)."""
    header = served.person(email, [])
    return header["Authorization"].removeprefix("Bearer ")


def pending(conversation: dict[str, Any]) -> bool:
    return conversation["status"] == "waiting" and bool(conversation["decisions"])


def done(conversation: dict[str, Any]) -> bool:
    return bool(conversation["status"] == "done")


async def test_a_script_asks_and_finance_approves_from_the_inbox(served: DeskServed) -> None:
    async with (
        DeskClient(served.base, token=token_of(served, RITA)) as rita,
        DeskClient(served.base, token=token_of(served, ADA)) as ada,
        DeskClient(served.base, token=token_of(served, SAM)) as sam,
    ):
        thread_id = await rita.start("transfer 5000 to Ada")
        paused = await rita.wait(thread_id, pending)
        assert paused["waitingFor"].startswith("Waiting for finance")
        assert [c["threadId"] for c in await rita.conversations()] == [thread_id]
        assert await rita.inbox() == [] and await sam.inbox() == []
        [item] = await ada.inbox(tool="transfer", requester=RITA)
        assert (item["summary"], item["rule"]) == ("recipient=Ada, amount=5000", "large-transfers")
        assert await ada.inbox(tool="refund") == []

        with pytest.raises(DeskRequestError) as refused:
            await rita.decide(item["decisionId"], True)
        assert (refused.value.status, refused.value.code) == (403, "forbidden")
        assert refused.value.message == (
            "Needs approval from role finance, not the requester. You may withdraw your own "
            "request: cancel it."
        )
        with pytest.raises(DeskRequestError) as busy:
            await rita.post(thread_id, "hello")
        assert (busy.value.status, busy.value.code) == (409, "busy")

        result = await ada.decide(item["decisionId"], True)
        assert (result["status"], result["decision"]["decidedBy"]) == ("decided", ADA)
        finished = await rita.wait(thread_id, done)
        assert "Receipt id" in finished["messages"][-1]["text"]
        assert finished["decisions"] == []
        # Ada finds it among what she decided; Rita's refused attempt decided nothing.
        [past] = await ada.decided()
        assert (past["decisionId"], past["status"], past["outcome"], past["decidedBy"]) == (
            item["decisionId"], "decided", "approved", ADA
        )  # fmt: skip
        acted, asked = (datetime.fromisoformat(past[key]) for key in ("actedAt", "waitingSince"))
        assert acted >= asked
        assert await rita.decided() == [] and await ada.decided(limit=1) == [past]

        with pytest.raises(DeskRequestError) as again:
            await ada.decide(item["decisionId"], True)
        assert (again.value.status, again.value.code) == (409, "already-decided")
        assert again.value.message == "You already decided this (approved)."
        assert again.value.details == {"decidedBy": ADA, "outcome": "approved"}
        with pytest.raises(DeskRequestError) as unknown:
            await ada.decide("d-none", cancelled=True)
        assert (unknown.value.status, unknown.value.code) == (404, "unknown")

        await rita.post(thread_id, "hello")
        talked = await rita.wait(thread_id)
        assert [m["role"] for m in talked["messages"]][-2:] == ["user", "assistant"]
        with pytest.raises(DeskRequestError) as nothing:
            await rita.retry(thread_id)
        assert (nothing.value.status, nothing.value.code) == (400, "invalid")
    # Rita's refused approval is in the trail too, before Ada's decision.
    kinds = [(r.kind, r.actor) for r in served.ledger.records()]
    assert kinds == [("pause", RITA), ("refusal", RITA), ("decision", ADA), ("execution", ADA)]


async def test_questions_reasons_and_cancellations(served: DeskServed) -> None:
    async with DeskClient(served.base, token=token_of(served, RITA)) as rita:
        shipping = await rita.start("ship order 42")
        [question] = (await rita.wait(shipping, pending))["decisions"]
        with pytest.raises(DeskRequestError) as wrong:
            await rita.decide(question["decisionId"], value={"speed": "teleport"})
        assert (wrong.value.status, wrong.value.code) == (400, "invalid")
        assert wrong.value.details["errors"]
        await rita.decide(question["decisionId"], value={"speed": "overnight", "giftWrap": False})
        shipped = await rita.wait(shipping, done)
        assert "Order 42 ships overnight" in shipped["messages"][-1]["text"]

        transfer = await rita.start("transfer 25 to Ada")
        [item] = (await rita.wait(transfer, pending))["decisions"]
        with pytest.raises(DeskRequestError) as no_reason:
            await rita.decide(item["decisionId"], False, payload={})
        assert "reason" in no_reason.value.message
        rejected = await rita.decide(item["decisionId"], False, payload={"reason": "Not today"})
        assert rejected["decision"]["outcome"] == "rejected"
        assert "Reason: Not today" in (await rita.wait(transfer, done))["messages"][-1]["text"]

        email = await rita.start("email ada@example.com about Launch")
        [draft] = (await rita.wait(email, pending))["decisions"]
        cancelled = await rita.decide(draft["decisionId"], cancelled=True)
        assert cancelled["decision"]["outcome"] == "cancelled"
        await rita.wait(email, done)
    assert [r.data["toolName"] for r in served.ledger.records() if r.kind == "execution"] == [
        "ship_order"
    ]


async def test_what_a_failure_says(served: DeskServed) -> None:
    async with DeskClient(served.base) as nobody:
        with pytest.raises(DeskRequestError) as unsigned:
            await nobody.inbox()
        assert (unsigned.value.status, unsigned.value.code) == (401, "unauthorized")
        assert unsigned.value.message
    port = free_port()
    async with DeskClient(f"http://127.0.0.1:{port}", timeout=2) as away:
        with pytest.raises(DeskRequestError) as unreachable:
            await away.conversations()
        assert (unreachable.value.status, unreachable.value.code) == (0, "transport")
        assert unreachable.value.message == (
            f"Could not reach the desk at http://127.0.0.1:{port}/api/conversations: "
            "connection refused."
        )
    async with DeskClient(served.base, token=token_of(served, RITA)) as rita:
        thread_id = await rita.start("transfer 5000 to Ada")
        with pytest.raises(TimeoutError, match=f"Conversation {thread_id} did not get there"):
            await rita.wait(thread_id, lambda c: False, timeout=0.2)
        with pytest.raises(ValueError, match="exactly one"):
            await rita.decide("d1")
        with pytest.raises(ValueError, match="exactly one"):
            await rita.decide("d1", True, cancelled=True)
        with pytest.raises(ValueError, match="go with approved"):
            await rita.decide("d1", cancelled=True, payload={})
        await rita.wait(thread_id, pending)
    assert repr(ABSENT) == "ABSENT" and not ABSENT


@pytest.mark.parametrize("token", ["", "  "])
def test_an_empty_token_is_refused_where_it_is_given(token: str) -> None:
    """Not sent as `Bearer ` for the server to call malformed (the client's error said it
    could not reach the desk)."""
    for make in (lambda: DeskClient("http://127.0.0.1:9", token=token),
                 lambda: SSEConnection("http://127.0.0.1:9/api/chat", token=token)):  # fmt: skip
        with pytest.raises(ValueError, match=r"^The API token is empty: pass one"):
            make()

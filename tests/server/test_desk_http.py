"""The approval desk over HTTP (`docs/protocol.md` §10), served as `python -m chat_app.server`
wires it, on SQLite and on PostgreSQL: conversations the server runs, the inbox, decisions
with their refusals (400, 403, 404, 409, 410, 503), a quorum, fifty deciders at once, a
database that goes away. Who acts is a demo person's cookie or an API token, never the body.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from sqlalchemy import make_url
from starlette.testclient import TestClient

from chat_app.demo import POLICY_PATH, build_demo_agent
from chat_app.demo.interrupts import SHIPPING
from chat_app.demo.tools import TRANSFER
from chat_app.desk import Desk, DeskStore
from chat_app.server import create_app
from chat_app.server.__main__ import connection_for
from chat_app.trust import Policy, Sealer
from chat_app.trust.store import open_database
from tests.pg_server import PostgresServer
from tests.server.served import DeskServed, events_of, serve_desk

DEMO_POLICY = Policy.load(POLICY_PATH)
RITA, ADA, SAM, OLIVE = (f"{name}@example.com" for name in ("rita", "ada", "sam", "olive"))
Headers = dict[str, str]


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")
    monkeypatch.setenv("CHAT_APP_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[DeskServed]:
    with serve_desk(tmp_path, database_url, policy=DEMO_POLICY) as server:
        yield server


def start(served: DeskServed, who: Headers, message: str) -> str:
    answer = served.http.post("/api/conversations", json={"message": message}, headers=who)
    assert answer.status_code == 201, answer.text
    thread_id: str = answer.json()["threadId"]
    assert answer.headers["location"] == f"/api/conversations/{thread_id}"
    return thread_id


def wait(
    served: DeskServed,
    thread_id: str,
    who: Headers,
    until: Callable[[dict[str, Any]], bool] = lambda c: c["status"] != "running",
    timeout: float = 30,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer = served.http.get(f"/api/conversations/{thread_id}", headers=who)
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        if until(found):
            return found
        assert time.monotonic() < deadline, f"still {found['status']}: {found}"
        time.sleep(0.05)


def inbox(served: DeskServed, who: Headers, **query: str) -> dict[str, Any]:
    answer = served.http.get("/api/inbox", params=query, headers=who)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def decide(served: DeskServed, decision_id: str, who: Headers, body: Any) -> httpx.Response:
    return served.http.post(f"/api/inbox/{decision_id}", json=body, headers=who)


def last_text(conversation: dict[str, Any]) -> str:
    text: str = conversation["messages"][-1]["text"]
    return text


def executions(served: DeskServed) -> list[str]:
    return [r.data["toolName"] for r in served.ledger.records() if r.kind == "execution"]


def waiting_for_decision(conversation: dict[str, Any]) -> bool:
    return conversation["status"] == "waiting" and bool(conversation["decisions"])


def test_finance_decides_a_large_transfer_from_the_inbox(served: DeskServed) -> None:
    rita, ada, sam = (served.cookie_of(email) for email in (RITA, ADA, SAM))
    thread_id = start(served, rita, "transfer 5000 to Ada")
    paused = wait(served, thread_id, rita, waiting_for_decision)
    assert paused["owner"] == {"email": RITA, "name": "Rita"}
    assert paused["waitingFor"].startswith("Waiting for finance")
    user, assistant = paused["messages"]
    assert (user["role"], user["text"], user["toolCalls"]) == ("user", "transfer 5000 to Ada", [])
    # Stamped by the desk's client as it sent it, after the conversation was stored (to the
    # millisecond, as TanStack's client stamps: cut, not rounded).
    created, sent, updated = (
        datetime.fromisoformat(when)
        for when in (paused["createdAt"], user["createdAt"], paused["updatedAt"])
    )
    assert created - timedelta(milliseconds=1) < sent <= updated
    [call] = assistant["toolCalls"]
    assert (call["name"], call["status"], call["args"], call["hasResult"]) == (
        "transfer", "awaiting-approval", {"recipient": "Ada", "amount": 5000}, False
    )  # fmt: skip
    # What an answer is checked against, for a client that builds its own form.
    assert paused["decisions"][0]["answerSchemas"] == {
        "approvePayload": None,
        "rejectPayload": TRANSFER.approval.reject,
        "editedArgs": TRANSFER.input_schema,
        "editable": ["amount"],  # the demo rule's: finance changes the amount, not who is paid
    }

    found = inbox(served, ada)
    assert found["total"] == 1
    [item] = found["items"]
    assert item["decisionId"] == paused["decisions"][0]["decisionId"]
    assert item["interruptId"] == call["interruptId"]
    assert (item["threadId"], item["kind"], item["name"]) == (thread_id, "tool", "transfer")
    assert item["summary"] == "recipient=Ada, amount=5000"
    assert item["requester"] == {"email": RITA, "name": "Rita"}
    assert (item["rule"], item["status"]) == ("large-transfers", "pending")
    assert item["waitingSince"].endswith("Z") and item["expiresAt"].endswith("Z")
    assert item["waitingSince"] < item["expiresAt"]
    # Nobody approves their own request, and Sam is not finance: neither inbox lists it.
    assert inbox(served, rita) == inbox(served, sam) == {"items": [], "total": 0}

    decision_id = item["decisionId"]
    refused = decide(served, decision_id, rita, {"approved": True})
    assert refused.status_code == 403
    assert refused.json()["code"] == "forbidden" and "finance" in refused.json()["error"]
    assert decide(served, decision_id, sam, {"approved": True}).status_code == 403
    # The trail holds both refusals, with who tried (Olive, an admin, may read it).
    trail = served.http.get("/api/audit", headers=served.cookie_of(OLIVE)).json()
    assert trail["chain"]["ok"]
    tried = [(r["actor"], r["data"]["decisionId"]) for r in trail["records"]
             if r["kind"] == "refusal"]  # fmt: skip
    assert tried == [(RITA, decision_id), (SAM, decision_id)]

    approved = decide(served, decision_id, ada, {"approved": True})
    assert approved.status_code == 200, approved.text
    result = approved.json()
    assert (result["status"], result["message"]) == ("decided", "Approved.")
    assert (result["decision"]["status"], result["decision"]["outcome"]) == ("decided", "approved")
    assert result["decision"]["decidedBy"] == ADA

    done = wait(served, thread_id, rita, lambda c: c["status"] == "done")
    assert "Sent 5,000 to Ada. Receipt id" in last_text(done)
    assert done["decisions"] == []
    [call] = [c for m in done["messages"] for c in m["toolCalls"]]
    assert (call["status"], call["decision"]) == ("done", "approved")
    assert call["hasResult"] and call["result"]["receipt"]

    again = decide(served, decision_id, ada, {"approved": True})
    assert again.status_code == 409
    assert again.json()["error"] == "You already decided this (approved)."
    assert (again.json()["code"], again.json()["decidedBy"]) == ("already-decided", ADA)
    unknown = decide(served, "d" + "0" * 31, ada, {"approved": True})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown")
    assert inbox(served, ada) == {"items": [], "total": 0}
    assert executions(served) == ["transfer"]
    assert [(r.kind, r.actor) for r in served.ledger.records()] == [
        ("pause", RITA), ("refusal", RITA), ("refusal", SAM), ("decision", ADA),
        ("execution", ADA),
    ]  # fmt: skip


def history_of(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation's messages as a client of `POST /api/chat` would send them back."""
    return [
        {"id": m["id"], "role": "user", "content": m["text"]}
        if m["role"] == "user"
        else {"id": m["id"], "role": "assistant", "content": m["text"], "toolCalls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
            for c in m["toolCalls"]
        ]}
        for m in conversation["messages"]
    ]  # fmt: skip


def test_a_pause_the_desk_keeps_is_not_answered_through_the_stateless_route(
    served: DeskServed,
) -> None:
    """Ada may approve Rita's transfer, but through the desk, which decides it once for
    everyone: the same history and answer sent to `POST /api/chat` (as any client may send
    one) is refused, nothing runs, and the desk's decision still waits for her."""
    rita, ada = served.cookie_of(RITA), served.cookie_of(ADA)
    thread_id = start(served, rita, "transfer 5000 to Ada")
    paused = wait(served, thread_id, rita, waiting_for_decision)
    [call] = paused["messages"][-1]["toolCalls"]
    replayed = {
        "threadId": thread_id, "runId": "run-elsewhere", "parentRunId": "run-0",
        "messages": history_of(paused), "tools": [], "context": [], "state": {},
        "forwardedProps": {},
        "resume": [{"interruptId": call["interruptId"], "status": "resolved",
                    "payload": {"approved": True}}],
    }  # fmt: skip
    streamed = events_of(served.http.post("/api/chat", json=replayed, headers=ada))
    [refusal] = [event for event in streamed if event["type"] == "RUN_ERROR"]
    assert "belongs to a conversation the approval desk keeps" in refusal["message"]
    assert not [event for event in streamed if event["type"] == "TOOL_CALL_RESULT"]
    assert executions(served) == []
    [item] = inbox(served, ada)["items"]
    assert item["threadId"] == thread_id
    # Where it belongs, Ada's approval runs it, once.
    assert decide(served, item["decisionId"], ada, {"approved": True}).status_code == 200
    done = wait(served, thread_id, rita)
    assert done["status"] == "done" and "Sent 5,000 to Ada" in last_text(done)
    assert executions(served) == ["transfer"]


def test_answers_are_checked_against_the_item_and_the_body_is_read_strictly(
    served: DeskServed,
) -> None:
    rita = served.cookie_of(RITA)
    thread_id = start(served, rita, "ship order 42")
    paused = wait(served, thread_id, rita, waiting_for_decision)
    [question] = paused["decisions"]
    assert (question["kind"], question["name"]) == ("question", "How should order 42 ship?")
    assert question["answerSchemas"] == {"value": SHIPPING.wire_response_schema}
    decision_id = question["decisionId"]

    wrong = decide(served, decision_id, rita, {"value": {"speed": "teleport", "giftWrap": False}})
    assert wrong.status_code == 400
    body = wrong.json()
    assert (body["code"], body["error"]) == (
        "invalid", "'teleport' is not one of ['standard', 'express', 'overnight']"
    )  # fmt: skip
    assert [error["path"] for error in body["errors"]] == [["speed"]]
    wrong_kind = decide(served, decision_id, rita, {"approved": True})
    assert (wrong_kind.status_code, wrong_kind.json()["error"]) == (
        400, 'This is a question: answer it with {"value": …}, or {"cancelled": true}.'
    )  # fmt: skip

    def refused(content: bytes, status: int = 400) -> str:
        answer = served.http.post(
            f"/api/inbox/{decision_id}", content=content,
            headers=rita | {"Content-Type": "application/json"},
        )  # fmt: skip
        assert answer.status_code == status, answer.text
        message: str = answer.json()["error"]
        return message

    assert "not valid JSON" in refused(b'{"value": ')
    assert "not valid JSON" in refused(b'{"value": NaN}')
    assert "no body" in refused(b"")
    assert "JSON object" in refused(b"[1]")
    assert "Unknown field(s): extra" in refused(b'{"approved": true, "extra": 1}')
    assert "larger than" in refused(b'{"value": "' + b"x" * (1024 * 1024) + b'"}', 413)
    assert "[" * 10 and "nested too deeply" in refused(b"[" * 300 + b"]" * 300)
    # An answer a reader could take two ways, or text no database can hold, is refused.
    assert 'the key "value" is given twice' in refused(b'{"value": 1, "value": 2}')
    assert "not Unicode" in refused(b'{"value": {"speed": "\\ud800"}}')
    surrogate = served.http.post(
        "/api/conversations", content=b'{"message": "hi \\ud800"}',
        headers=rita | {"Content-Type": "application/json"},
    )  # fmt: skip
    assert (surrogate.status_code, surrogate.json()["code"]) == (400, "invalid")
    extra = served.http.post("/api/conversations", json={"message": "hi", "to": "x"}, headers=rita)
    assert (extra.status_code, extra.json()["error"]) == (
        400, 'Unknown field(s): to; send {"message": "…"} and nothing else.'
    )  # fmt: skip

    answered = decide(served, decision_id, rita, {"value": {"speed": "express", "giftWrap": True}})
    assert answered.status_code == 200, answered.text
    assert answered.json()["decision"]["outcome"] == "answered"
    done = wait(served, thread_id, rita, lambda c: c["status"] == "done")
    assert "ships express, gift-wrapped" in last_text(done)

    # A rejection whose schema asks for a reason: without one, the field's error.
    second = start(served, rita, "transfer 25 to Ada")
    [item] = wait(served, second, rita, waiting_for_decision)["decisions"]
    no_reason = decide(served, item["decisionId"], rita, {"approved": False, "payload": {}})
    assert no_reason.status_code == 400
    assert "reason" in no_reason.json()["error"]
    rejected = decide(
        served, item["decisionId"], rita, {"approved": False, "payload": {"reason": "Not today"}}
    )
    assert rejected.json()["decision"]["outcome"] == "rejected"
    done = wait(served, second, rita, lambda c: c["status"] == "done")
    assert "Reason: Not today" in last_text(done)
    assert executions(served) == ["ship_order"]


def test_health_and_addresses_the_api_does_not_serve_answer_in_json(served: DeskServed) -> None:
    healthy = served.http.get("/api/health")
    assert (healthy.status_code, healthy.json()) == (200, {"status": "ok"})
    nothing = served.http.get("/api/nothing/here")
    assert (nothing.status_code, nothing.json()) == (
        404, {"error": "There is nothing at /api/nothing/here.", "code": "unknown"}
    )  # fmt: skip
    wrong_method = served.http.get("/api/inbox/d-1", headers=served.cookie_of(ADA))
    assert wrong_method.status_code == 405
    assert wrong_method.json() == {
        "error": "/api/inbox/d-1 takes POST, not GET.", "code": "method"
    }  # fmt: skip
    assert wrong_method.headers["allow"] == "POST"
    # Every method gets JSON: a known route's 405 names its own methods; elsewhere, 404.
    for method, path, allow in [
        ("PUT", "/api/chat", "POST"),
        ("DELETE", "/api/inbox", "GET, HEAD"),
        ("PATCH", "/api/me", "GET, HEAD"),
        ("POST", "/api/health", "GET, HEAD"),
        ("TRACE", "/api/chat", "POST"),
        ("PROPFIND", "/api/me", "GET, HEAD"),
    ]:
        answer = served.http.request(method, path, headers=served.cookie_of(ADA))
        assert answer.status_code == 405, (method, path)
        assert answer.json()["code"] == "method" and answer.headers["allow"] == allow
    for method in ("POST", "PUT", "DELETE", "TRACE", "MKCOL"):
        unknown = served.http.request(method, "/api/nope", headers=served.cookie_of(ADA))
        assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown")


def test_an_expired_decision_is_gone(served: DeskServed) -> None:
    rita, ada = served.cookie_of(RITA), served.cookie_of(ADA)
    thread_id = start(served, rita, "transfer 5000 to Ada")
    [item] = wait(served, thread_id, rita, waiting_for_decision)["decisions"]
    served.clock.ahead = timedelta(days=2)
    expired = decide(served, item["decisionId"], ada, {"approved": True})
    assert expired.status_code == 410
    assert expired.json()["code"] == "expired"
    assert "nobody can decide it any more" in expired.json()["error"]
    assert executions(served) == []


def test_a_quorum_collects_two_ops_approvals_and_runs_once(served: DeskServed) -> None:
    rita, sam, olive = (served.cookie_of(email) for email in (RITA, SAM, OLIVE))
    thread_id = start(served, rita, "rotate production keys")
    [item] = wait(served, thread_id, rita, waiting_for_decision)["decisions"]
    assert (item["rule"], item["quorum"]["needed"]) == ("key-rotation", 2)
    assert item["answerSchemas"]["editedArgs"] is None  # a quorum approves the call as shown
    assert [found["decisionId"] for found in inbox(served, sam)["items"]] == [item["decisionId"]]

    first = decide(served, item["decisionId"], sam, {"approved": True})
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "waiting"
    assert first.json()["message"] == "Approved: 1 of 2: Sam approved."
    assert first.json()["decision"]["quorum"]["progress"] == "1 of 2: Sam approved"
    twice = decide(served, item["decisionId"], sam, {"approved": True})
    assert twice.status_code == 409
    assert "You already approved this (1 of 2: Sam approved)" in twice.json()["error"]
    # The fields every `already-decided` carries: nobody has decided yet.
    assert (twice.json()["decidedBy"], twice.json()["outcome"]) == (None, None)
    assert decide(served, item["decisionId"], rita, {"approved": True}).status_code == 403
    # Sam has approved: his inbox still lists it (someone else must too), Olive's too.
    assert [i["quorum"]["progress"] for i in inbox(served, olive)["items"]] == [
        "1 of 2: Sam approved"
    ]

    second = decide(served, item["decisionId"], olive, {"approved": True})
    assert second.status_code == 200, second.text
    assert second.json()["status"] == "decided"
    assert second.json()["decision"]["quorum"]["progress"] == "2 of 2: Sam, Olive approved"
    done = wait(served, thread_id, rita, lambda c: c["status"] == "done")
    assert done["error"] is None, done
    assert executions(served) == ["rotate_keys"]
    [decision] = [r for r in served.ledger.records() if r.kind == "decision"]
    assert decision.actor == OLIVE
    assert [c["actor"] for c in decision.data["cosigners"]] == [SAM]
    late = decide(served, item["decisionId"], sam, {"approved": True})
    assert late.status_code == 409 and late.json()["error"].startswith("Already decided by Olive")
    # Both find it among what they decided: Sam by his approval, which Olive's completed.
    for person in (sam, olive):
        answer = served.http.get("/api/decided", headers=person)
        assert answer.status_code == 200, answer.text
        [past] = answer.json()["items"]
        assert (past["decisionId"], past["outcome"], past["decidedBy"]) == (
            item["decisionId"], "approved", OLIVE
        )  # fmt: skip
    assert served.http.get("/api/decided", headers=rita).json() == {"items": []}


def test_an_approval_counts_with_the_roles_its_account_has_now(served: DeskServed) -> None:
    rita = served.cookie_of(RITA)
    tina, uma, vic, wes = (
        served.person(f"{name}@example.com", ["ops"]) for name in ("tina", "uma", "vic", "wes")
    )
    # Tina approves, then loses her role: her approval stays on record and counts for nothing.
    thread_id = start(served, rita, "rotate production keys")
    [item] = wait(served, thread_id, rita, waiting_for_decision)["decisions"]
    assert decide(served, item["decisionId"], tina, {"approved": True}).json()["status"] == (
        "waiting"
    )
    served.accounts.set_roles("tina@example.com", [])
    second = decide(served, item["decisionId"], vic, {"approved": True})
    assert second.status_code == 200, second.text
    assert second.json()["status"] == "waiting"
    assert second.json()["decision"]["quorum"]["progress"] == "1 of 2: vic@example.com approved"
    assert executions(served) == []
    first = decide(served, item["decisionId"], wes, {"approved": True}).json()
    assert first["status"] == "decided"
    approvers = ["vic@example.com", "wes@example.com"]
    assert [a["email"] for a in first["decision"]["quorum"]["approvals"]] == approvers
    # Uma approves, then her account is removed (and made again): the same.
    served.accounts.set_roles("tina@example.com", ["ops"])
    # Settled, the decision names the approvals that counted then, whatever Tina's roles now.
    [settled] = served.http.get("/api/decided", headers=wes).json()["items"]
    assert [a["email"] for a in settled["quorum"]["approvals"]] == approvers
    assert settled["quorum"]["progress"] == "2 of 2: vic@example.com, wes@example.com approved"
    thread_two = start(served, rita, "rotate staging keys")
    [other] = wait(served, thread_two, rita, waiting_for_decision)["decisions"]
    assert decide(served, other["decisionId"], uma, {"approved": True}).status_code == 200
    served.accounts.remove_user("uma@example.com")
    # Made again, the address is another account: the approval was the old one's.
    served.accounts.add_user("uma@example.com", "a-long-password", ["ops"])
    assert decide(served, other["decisionId"], wes, {"approved": True}).json()["status"] == (
        "waiting"
    )
    done = decide(served, other["decisionId"], tina, {"approved": True})
    assert done.json()["status"] == "decided", done.text
    for thread in (thread_id, thread_two):
        assert wait(served, thread, rita, lambda c: c["status"] == "done")["error"] is None
    assert executions(served) == ["rotate_keys", "rotate_keys"]
    decided = [r for r in served.ledger.records() if r.kind == "decision"]
    assert sorted((r.actor, tuple(c["actor"] for c in r.data["cosigners"])) for r in decided) == [
        ("tina@example.com", ("wes@example.com",)),
        ("wes@example.com", ("vic@example.com",)),
    ]


async def test_fifty_approvals_at_once_decide_once_and_run_once(served: DeskServed) -> None:
    rita = served.cookie_of(RITA)
    thread_id = start(served, rita, "transfer 5000 to Ada")
    [item] = wait(served, thread_id, rita, waiting_for_decision)["decisions"]
    deciders = [served.cookie_of(ADA)] + [
        served.person(f"finance{n}@example.com", ["finance"]) for n in range(49)
    ]
    url = f"{served.base}/api/inbox/{item['decisionId']}"
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=50)) as http:
        answers = await asyncio.gather(
            *(http.post(url, json={"approved": True}, headers=who) for who in deciders)
        )
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200] + [409] * 49, [a.text for a in answers if a.status_code != 409]
    [won] = [answer.json() for answer in answers if answer.status_code == 200]
    assert won["status"] == "decided"
    winner = won["decision"]["decidedBy"]
    for answer in answers:
        if answer.status_code == 409:
            assert answer.json()["decidedBy"] == winner, answer.text
    done = await asyncio.to_thread(wait, served, thread_id, rita, lambda c: c["status"] == "done")
    assert "Receipt id" in last_text(done)
    assert executions(served) == ["transfer"]
    kinds = [(r.kind, r.actor) for r in served.ledger.records()]
    assert kinds == [("pause", RITA), ("decision", winner), ("execution", winner)]
    [decision] = [r for r in served.ledger.records() if r.kind == "decision"]
    assert not decision.data.get("cosigners"), decision.data


def test_messages_conversations_and_who_may_see_them(served: DeskServed) -> None:
    rita, ada, sam, olive = (served.cookie_of(email) for email in (RITA, ADA, SAM, OLIVE))
    first = start(served, rita, "hello")
    said = wait(served, first, rita, lambda c: c["status"] == "done")
    assert [m["role"] for m in said["messages"]] == ["user", "assistant"]
    second = start(served, rita, "transfer 25 to Ada")
    wait(served, second, rita, waiting_for_decision)
    listed = served.http.get("/api/conversations", headers=rita).json()["conversations"]
    assert [c["threadId"] for c in listed] == [second, first]
    assert listed[0]["title"] == "transfer 25 to Ada"
    assert served.http.get("/api/conversations", headers=sam).json() == {"conversations": []}

    busy = served.http.post(
        f"/api/conversations/{second}/messages", json={"message": "hello"}, headers=rita
    )
    assert (busy.status_code, busy.json()["code"]) == (409, "busy")
    theirs = served.http.post(
        f"/api/conversations/{first}/messages", json={"message": "hi"}, headers=ada
    )
    assert (theirs.status_code, theirs.json()["code"]) == (403, "forbidden")
    assert served.http.get(f"/api/conversations/{first}", headers=sam).status_code == 403
    assert served.http.get(f"/api/conversations/{first}", headers=olive).status_code == 200
    assert served.http.get("/api/conversations/nope", headers=rita).status_code == 404
    for bad in ({}, {"message": 5}, {"message": "x", "more": 1}):
        answer = served.http.post("/api/conversations", json=bad, headers=rita)
        assert (answer.status_code, answer.json()["code"]) == (400, "invalid"), bad
    empty = served.http.post("/api/conversations", json={"message": "  "}, headers=rita)
    assert empty.json()["error"] == "The message is empty."

    posted = served.http.post(
        f"/api/conversations/{first}/messages", json={"message": "delete project apollo"},
        headers=rita,
    )  # fmt: skip
    assert (posted.status_code, posted.json()) == (202, {"threadId": first})
    later = wait(served, first, rita, waiting_for_decision)
    assert [m["text"] for m in later["messages"] if m["role"] == "user"] == [
        "hello", "delete project apollo",
    ]  # fmt: skip
    nothing = served.http.post(f"/api/conversations/{first}/retry", headers=rita)
    assert (nothing.status_code, nothing.json()["code"]) == (400, "invalid")
    refused = served.http.post(f"/api/conversations/{first}/retry", headers=sam)
    assert refused.status_code == 403
    assert refused.json()["error"] == (
        "Only the person who started it, or an admin, retries a conversation."
    )


def test_a_batch_decided_in_part_lists_the_answer_the_desk_holds(served: DeskServed) -> None:
    rita = served.cookie_of(RITA)
    thread_id = start(served, rita, "pay invoices")
    paused = wait(served, thread_id, rita, waiting_for_decision)
    asked = [call["interruptId"] for call in paused["messages"][-1]["toolCalls"]]
    assert len(asked) == 3
    # Listed in the order the agent asked, whatever order the desk filed them in.
    assert [d["interruptId"] for d in paused["decisions"]] == asked
    assert paused["heldAnswers"] == []
    middle = paused["decisions"][1]
    assert decide(served, middle["decisionId"], rita, {"approved": True}).status_code == 200

    shown = wait(served, thread_id, rita)
    assert shown["status"] == "waiting"
    # What is left to decide, as before; the answer the desk holds, apart, with who gave it.
    assert [d["interruptId"] for d in shown["decisions"]] == [asked[0], asked[2]]
    assert all(d["answerSchemas"] is not None for d in shown["decisions"])
    [held] = shown["heldAnswers"]
    assert (held["interruptId"], held["status"], held["outcome"], held["decidedBy"]) == (
        asked[1], "decided", "approved", RITA,
    )  # fmt: skip
    assert executions(served) == []  # held: nothing ran before the rest is decided

    for listed in shown["decisions"]:
        assert decide(served, listed["decisionId"], rita, {"approved": True}).status_code == 200
    done = wait(served, thread_id, rita, lambda c: c["status"] == "done")
    assert (done["decisions"], done["heldAnswers"]) == ([], [])
    assert executions(served) == ["pay_invoice"] * 3


def test_the_inbox_filters_and_everyone_is_for_admins(served: DeskServed) -> None:
    rita, ada, olive = (served.cookie_of(email) for email in (RITA, ADA, OLIVE))
    sam = served.cookie_of(SAM)
    transfer = start(served, rita, "transfer 5000 to Ada")
    keys = start(served, sam, "rotate production keys")
    wait(served, transfer, rita, waiting_for_decision)
    wait(served, keys, sam, waiting_for_decision)
    assert [i["name"] for i in inbox(served, ada)["items"]] == ["transfer"]
    assert [i["name"] for i in inbox(served, olive)["items"]] == ["rotate_keys"]
    everything = inbox(served, olive, all="1")
    assert sorted(i["name"] for i in everything["items"]) == ["rotate_keys", "transfer"]
    assert everything["total"] == 2
    assert inbox(served, olive, all="1", tool="transfer")["total"] == 1
    assert [i["name"] for i in inbox(served, olive, all="1", requester=SAM)["items"]] == [
        "rotate_keys"
    ]
    assert len(inbox(served, olive, all="1", limit="1")["items"]) == 1
    assert inbox(served, olive, all="1", limit="1")["total"] == 2
    assert inbox(served, olive, all=" TRUE ")["total"] == 2
    not_admin = served.http.get("/api/inbox", params={"all": "1"}, headers=ada)
    assert (not_admin.status_code, not_admin.json()["code"]) == (403, "forbidden")
    # No tool or email holds a control character (and PostgreSQL takes no NUL at all).
    for name, value in (("tool", "transfer\x00"), ("requester", "sam@example.com\n")):
        refused = served.http.get("/api/inbox", params={name: value}, headers=olive)
        assert (refused.status_code, refused.json()["error"]) == (
            400, f"The {name} filter holds a control character: nothing matches it."
        ), name  # fmt: skip
    # "²" and "٣" are digits to Python's `str.isdigit`, not to `int` or to a person.
    for limit in ("0", "201", "ten", "\u00b2", "\u0663", "1\u00b2"):
        for path in ("/api/inbox", "/api/decided"):
            answer = served.http.get(path, params={"limit": limit}, headers=ada)
            assert answer.status_code == 400, (path, limit)
            assert answer.json()["error"] == "limit must be a whole number from 1 to 200."


def test_without_an_identity_the_desk_answers_401(tmp_path: Path, database_url: str) -> None:
    with serve_desk(tmp_path, database_url, policy=DEMO_POLICY, mode="password") as served:
        for method, path in (("GET", "/api/inbox"), ("POST", "/api/conversations"),
                             ("GET", "/api/conversations"), ("POST", "/api/inbox/d1"),
                             ("GET", "/api/decided")):  # fmt: skip
            answer = served.http.request(method, path, json={"message": "hi"})
            assert answer.status_code == 401, (method, path)
            assert answer.json()["error"]
        token = served.person(ADA, ["finance"])
        assert inbox(served, token) == {"items": [], "total": 0}
        stranger = served.http.get("/api/inbox", headers={"Authorization": "Bearer cat_nope"})
        assert stranger.status_code == 401


def test_without_sign_in_the_desk_says_it_needs_it(tmp_path: Path, database_url: str) -> None:
    """`CHAT_APP_AUTH=none` (the standalone server's default): everyone is nobody, and what
    the desk stored for nobody nobody could decide: each route says so, and stores nothing;
    the stateless chat route still serves."""
    with serve_desk(tmp_path, database_url, policy=DEMO_POLICY, mode="none") as served:
        for method, path in (("GET", "/api/inbox"), ("POST", "/api/conversations"),
                             ("GET", "/api/conversations"), ("POST", "/api/inbox/d1"),
                             ("GET", "/api/decided")):  # fmt: skip
            answer = served.http.request(method, path, json={"message": "transfer 25 to Ada"})
            assert (answer.status_code, answer.json()["code"]) == (403, "forbidden")
            assert answer.json()["error"].startswith(
                "The approval desk records who asked and who decided, so it needs sign-in"
            )
        assert served.desk.store.conversations_of("") == []
        assert served.http.get("/api/tools").status_code == 200


# --- a database that goes away --------------------------------------------------------------


def lease_let_go(served: DeskServed, thread_id: str) -> None:
    """Wait until the run that paused has let go of the conversation (it stores its last
    step, then releases its lease)."""
    deadline = time.monotonic() + 10
    while (row := served.desk.store.load(thread_id)) is None or row.runner is not None:
        assert time.monotonic() < deadline, row
        time.sleep(0.01)


@contextmanager
def database_away(served: DeskServed, url: str, request: pytest.FixtureRequest) -> Iterator[None]:
    """The desk's database stops answering for the block: SQLite's file is gone (a folder
    stands in its place); PostgreSQL refuses connections to it and ends those it had."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database
        path = Path(parsed.database)
        aside = path.with_name("aside")
        aside.mkdir()
        served.engine.dispose()
        moved = [p for p in path.parent.glob(path.name + "*") if p.is_file()]
        for file in moved:
            file.rename(aside / file.name)
        path.mkdir()
        try:
            yield
        finally:
            path.rmdir()
            served.engine.dispose()
            for file in moved:
                (aside / file.name).rename(file)
            shutil.rmtree(aside)
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = sql.Identifier(str(parsed.database))
    with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres",
                         dbname="postgres", autocommit=True) as admin:  # fmt: skip
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(name))
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (parsed.database,),
        )
        try:
            yield
        finally:
            admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(name))


def test_a_database_that_goes_away_is_503_and_nothing_is_decided(
    served: DeskServed, database_url: str, request: pytest.FixtureRequest
) -> None:
    rita, ada = served.cookie_of(RITA), served.cookie_of(ADA)
    script = served.person("nightly@example.com", [])  # an API token: its owner is read then
    thread_id = start(served, rita, "transfer 5000 to Ada")
    [item] = wait(served, thread_id, rita, waiting_for_decision)["decisions"]
    lease_let_go(served, thread_id)
    said = {"id": "u", "role": "user", "content": "hi"}
    hello = {"threadId": "t", "runId": "r", "messages": [said]}
    with database_away(served, database_url, request):
        for answer in (
            decide(served, item["decisionId"], ada, {"approved": True}),
            served.http.get("/api/me", headers=script),
            served.http.post("/api/chat", headers=script, json=hello),
            served.http.get("/api/inbox", headers=ada),
            served.http.get("/api/conversations", headers=rita),
            served.http.get(f"/api/conversations/{thread_id}", headers=rita),
            served.http.post("/api/conversations", json={"message": "hello"}, headers=rita),
        ):
            assert answer.status_code == 503, answer.text
            assert answer.json()["code"] == "unavailable"
            assert answer.json()["error"].startswith("The database is not answering (")
            assert "port" not in answer.json()["error"]  # where it is is the operator's
        # The chat route does not need the database for a demo cookie: it answers as before.
        assert served.http.post("/api/chat", headers=rita, json=hello).status_code == 200
    assert [r.kind for r in served.ledger.records()] == ["pause"]
    [still] = inbox(served, ada)["items"]
    assert (still["decisionId"], still["status"], still["quorum"]["approvals"]) == (
        item["decisionId"], "pending", []
    )  # fmt: skip
    approved = decide(served, item["decisionId"], ada, {"approved": True})
    assert approved.json()["status"] == "decided", approved.text
    done = wait(served, thread_id, rita, lambda c: c["status"] == "done")
    assert "Receipt id" in last_text(done)
    assert executions(served) == ["transfer"]


# --- the app's lifespan -------------------------------------------------------------------


def test_the_app_looks_for_interrupted_runs_while_it_runs(
    tmp_path: Path, database_url: str
) -> None:
    """A conversation a dead worker left `running` (no lease, long ago) is settled once the
    app with a desk has started: its lifespan runs `keep_recovering`, and stops it at shutdown."""
    engine = open_database(database_url)
    try:
        store = DeskStore(engine)
        # Marked running five minutes ago, and no worker took it since (one died between).
        now, state = datetime.now(UTC) - timedelta(minutes=5), '{"thread_id": "t-dead"}'
        store.create("t-dead", owner_email=RITA, owner_name="Rita", title="hello", state=state,
                     now=now)  # fmt: skip
        store.save("t-dead", state=state, status="running", waiting_for="", error=None, now=now)
        agent = build_demo_agent(sealer=Sealer(b"k" * 32))
        desk = Desk(store, connection_for=connection_for(agent))
        app = create_app(agent, desk=desk)
        assert store.load("t-dead").status == "running"  # type: ignore[union-attr]
        with TestClient(app):
            deadline = time.monotonic() + 10
            # Settled, then its lease released: two writes, so wait for the second too.
            while (found := store.load("t-dead")) is None or (
                found.status == "running" or found.runner is not None
            ):
                assert time.monotonic() < deadline, found
                time.sleep(0.05)
        assert found.status != "running" and found.runner is None
    finally:
        engine.dispose()

"""Every policy outcome through HTTP, as the server enforces it: a demo person's cookie (or an
API token) says who asks and who answers; nothing in the body does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chat_app.client import ChatClient, ClientTool, SSEConnection, TransportError
from chat_app.demo import POLICY_PATH
from chat_app.trust import Policy
from tests.server.served import serve


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")
    monkeypatch.setenv("CHAT_APP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHAT_APP_DATABASE_URL", raising=False)


DEMO_POLICY = Policy.load(POLICY_PATH)


def ask(text: str) -> dict[str, Any]:
    return {"threadId": "t", "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": text}]}  # fmt: skip


def answer(paused: list[dict[str, Any]], approved: bool, run: str, **more: Any) -> dict[str, Any]:
    [item] = paused[-1]["outcome"]["interrupts"]
    return {"threadId": "t", "runId": run, "parentRunId": "r1",
            "messages": paused[-2]["messages"],
            "resume": [{"interruptId": item["id"], "status": "resolved",
                        "payload": {"approved": approved, **more}}]}  # fmt: skip


def refusal(events: list[dict[str, Any]]) -> tuple[str, str]:
    assert events[-1]["type"] == "RUN_ERROR", events[-1]
    first = events[-1]["metadata"]["tanstack"]["interruptErrors"][0]
    return first["code"], first["message"]


def said(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_finance_decides_a_large_transfer_and_the_requester_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(
        tmp_path, monkeypatch, policy=Policy.load(POLICY_PATH), CHAT_APP_AUTH="demo"
    ) as served:
        rita, ada, sam = (served.cookie_of(f"{n}@example.com") for n in ("rita", "ada", "sam"))
        paused = served.chat(ask("transfer 5000 to Ada"), rita)
        # The body claims Ada; the cookie says Rita, and the cookie wins.
        mine = served.chat(answer(paused, True, "r2") | {"forwardedProps": {"actor":
                                                         "ada@example.com"}}, rita)  # fmt: skip
        assert refusal(mine) == (
            "forbidden", "Needs approval from role finance, not the requester."
        )  # fmt: skip
        assert refusal(served.chat(answer(paused, True, "r3"), sam))[0] == "forbidden"
        done = served.chat(answer(paused, True, "r4"), ada)
        assert "Sent 5,000 to Ada" in said(done)
        assert served.actors() == [
            ("pause", "rita@example.com"),
            ("refusal", "rita@example.com"),
            ("refusal", "sam@example.com"),
            ("decision", "ada@example.com"),
            ("execution", "ada@example.com"),
        ]
        decision = [r for r in served.ledger.records() if r.kind == "decision"][0]
        assert (decision.data["rule"], decision.data["verifiedBy"]) == ("large-transfers", "demo")


def test_the_policy_decides_alone_and_a_rejection_reason_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = Policy.parse(
        Path(POLICY_PATH).read_text()
        + '\n[[rules]]\nname = "keep-apollo"\ntool = "delete_project"\n'
        'when = { properties = { name = { const = "apollo" } } }\n'
        'decide = "reject"\nreason = "apollo is archived, not deleted"\n'
    )
    with serve(tmp_path, monkeypatch, policy=policy, CHAT_APP_AUTH="demo") as served:
        rita = served.cookie_of("rita@example.com")
        refunded = served.chat(ask("refund 20 to order 42"), rita)
        [custom] = [e for e in refunded if e["type"] == "CUSTOM"]
        assert custom["value"]["rule"] == "small-refunds"
        assert "Refunded 20 to order 42" in said(refunded)
        kept = served.chat(ask("delete project apollo"), rita)
        assert "apollo is archived, not deleted" in said(kept)
        assert [r.data["toolName"] for r in served.ledger.records() if r.kind == "execution"] == [
            "refund"
        ]


def test_a_quorum_is_refused_statelessly_and_a_rejection_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(
        tmp_path, monkeypatch, policy=Policy.load(POLICY_PATH), CHAT_APP_AUTH="demo"
    ) as served:
        rita, sam = served.cookie_of("rita@example.com"), served.cookie_of("sam@example.com")
        paused = served.chat(ask("rotate production keys"), rita)
        code, message = refusal(served.chat(answer(paused, True, "r2"), sam))
        assert code == "forbidden" and "2 approvals" in message
        rejected = served.chat(answer(paused, False, "r3"), sam)
        assert rejected[-1]["type"] == "RUN_FINISHED"
        assert not [r for r in served.ledger.records() if r.kind == "execution"]


async def test_the_headless_client_acts_with_an_api_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(tmp_path, monkeypatch, policy=DEMO_POLICY, CHAT_APP_AUTH="password") as served:
        assert served.accounts is not None
        served.accounts.add_user("ada@example.com", "ada-password", ["finance"])
        token = served.accounts.create_token("ada@example.com", "script")
        manifest = served.http.get("/api/tools").json()
        client = ChatClient(
            SSEConnection(served.base + "/api/chat", token=token),
            tools=ClientTool.from_manifest(manifest, {}),
        )
        await client.send("transfer 25 to Ada")
        [item] = client.interrupts
        await client.resolve_interrupt(item.id, approved=True)
        assert "Sent 25 to Ada" in client.messages[-1].text
        assert {actor for _, actor in served.actors()} == {"ada@example.com"}
        [decision] = [r for r in served.ledger.records() if r.kind == "decision"]
        assert (decision.data["verifiedBy"], decision.data["tokenName"]) == ("token", "script")
        anonymous = ChatClient(SSEConnection(served.base + "/api/chat"))
        await anonymous.send("transfer 25 to Ada")
        assert isinstance(anonymous.error, TransportError)
        assert anonymous.error.status_code == 401

"""The HTTP endpoint: SSE framing, the tool manifest, and clear 400/413 answers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from chat_app.demo import build_demo_agent
from chat_app.interrupts import SSEDecoder
from chat_app.server import create_app


@pytest.fixture(autouse=True)
def _no_token_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


def client(**options: Any) -> httpx.AsyncClient:
    app = create_app(build_demo_agent(), **options)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def body(text: str = "transfer 25 to Ada", **extra: Any) -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": text}],
        **extra,
    }


async def test_chat_streams_server_sent_events_ending_in_one_interrupt_terminal() -> None:
    async with client() as http:
        response = await http.post("/api/chat", json=body(tools=[], context=[], state={}))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    frames = response.text.split("\n\n")
    assert frames[-1] == "" and all(frame.startswith("data: ") for frame in frames[:-1])
    events = list(SSEDecoder().feed(response.text))
    assert events[0]["type"] == "RUN_STARTED"
    assert [e["type"] for e in events[-2:]] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert sum(e["type"] == "RUN_FINISHED" for e in events) == 1


async def test_ag_ui_bodies_without_tools_context_or_state_are_accepted() -> None:
    async with client() as http:
        response = await http.post("/api/chat", json=body("hello"))
    assert response.status_code == 200
    assert '"type":"RUN_FINISHED"' in response.text


async def test_tool_manifest_carries_raw_schemas_and_where_each_tool_runs() -> None:
    async with client() as http:
        manifest = (await http.get("/api/tools")).json()["tools"]
    by_name = {item["name"]: item for item in manifest}
    assert by_name["transfer"]["needsApproval"] is True
    assert by_name["transfer"]["approvalSchema"]["reject"]["required"] == ["reason"]
    assert by_name["get_local_time"]["runsOn"] == "client"
    assert by_name["send_email"]["inputSchema"]["properties"]["to"]["format"] == "email"


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (json.dumps({"runId": "r", "messages": []}).encode(), "threadId"),
        (
            json.dumps(
                {"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "wizard"}]}
            ).encode(),
            "messages",
        ),
        (
            json.dumps({**body(), "resume": [{"interruptId": "x", "status": "pending"}]}).encode(),
            "resume.0.status",
        ),
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
    ],
)
async def test_malformed_requests_get_400_naming_the_problem(payload: bytes, fragment: str) -> None:
    async with client() as http:
        response = await http.post(
            "/api/chat", content=payload, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400
    assert fragment in response.json()["error"]


async def test_huge_bodies_get_413() -> None:
    async with client(max_body_bytes=1000) as http:
        response = await http.post("/api/chat", json=body("x" * 5000))
    assert response.status_code == 413

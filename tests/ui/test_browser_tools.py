"""Client tools that run as JavaScript in the page, on the Python side: what the page answers
(untrusted) becomes the tool's output or its error, which the model reads. The page itself is
driven in `test_chat_flows.py`. The async steps run on a loop of their own
(`run_on_own_loop`): in a session with browser tests, Playwright owns this thread's loop."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import pytest

from chat_app.agent import event_to_wire
from chat_app.client import ChatClient, InProcessConnection, ToolApprovalInterrupt
from chat_app.demo import build_demo_agent
from chat_app.ui import session
from chat_app.ui.session import (
    BRIDGE_TIMEOUT_S,
    LOCATION_ERRORS,
    LOCATION_SCRIPT,
    LOCATION_TIMEOUT_S,
    BrowserBridge,
    BrowserToolError,
    location_result,
)
from tests.ui.app_server import run_on_own_loop

BERLIN = {"latitude": 52.52, "longitude": 13.405, "accuracy": 25}


def test_a_position_is_the_output_labelled_with_its_coordinates() -> None:
    assert location_result(BERLIN) == {**BERLIN, "label": "52.5200, 13.4050"}
    assert location_result({"latitude": -33.8688, "longitude": 151.2093}) == {
        "latitude": -33.8688, "longitude": 151.2093, "label": "-33.8688, 151.2093",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("denied", "the browser refused location access"),
        ("unavailable", "the browser could not determine its position"),
        ("timeout", f"the browser gave no position within {LOCATION_TIMEOUT_S} s"),
        ("unsupported", "this browser has no geolocation"),
        ("something else", "the browser could not determine its position"),
        (1, "the browser could not determine its position"),
    ],
)
def test_each_answer_without_a_position_is_the_tools_error(code: object, message: str) -> None:
    with pytest.raises(BrowserToolError) as raised:
        location_result({"error": code})
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "52.52, 13.405",
        [52.52, 13.405],
        {},
        {"latitude": 52.52},
        {"latitude": "52.52", "longitude": 13.405},
        {"latitude": True, "longitude": 13.405},
        {"latitude": 91, "longitude": 13.405},
        {"latitude": 52.52, "longitude": -180.5},
        {"latitude": math.nan, "longitude": 13.405},
    ],
)
def test_an_answer_that_is_not_a_position_is_refused(answer: Any) -> None:
    with pytest.raises(BrowserToolError, match="the browser's answer was not a position"):
        location_result(answer)


def test_an_accuracy_that_is_not_a_distance_is_left_out() -> None:
    for accuracy in (-1, "25", None, math.inf):
        assert "accuracy" not in location_result({**BERLIN, "accuracy": accuracy})


def test_the_page_gives_up_on_a_position_before_the_bridge_gives_up_on_the_page() -> None:
    assert LOCATION_TIMEOUT_S < BRIDGE_TIMEOUT_S
    assert f"{LOCATION_TIMEOUT_S * 1000}" in LOCATION_SCRIPT
    assert set(LOCATION_ERRORS) == {"denied", "unavailable", "timeout", "unsupported"}
    assert "Paris" not in LOCATION_SCRIPT


def test_a_page_that_never_answers_is_an_error_that_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session, "BRIDGE_TIMEOUT_S", 0.01)
    bridge = BrowserBridge()
    with pytest.raises(BrowserToolError, match=r"the page did not answer within 0.01 s"):
        run_on_own_loop(bridge.call("1"))
    assert bridge.pending == {}


# --- through the client and the demo agent ------------------------------------------------


@pytest.fixture
def bridge(monkeypatch: pytest.MonkeyPatch) -> Iterator[BrowserBridge]:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")
    agent = build_demo_agent()
    session.configure(lambda _: None, lambda: {"tools": agent.tool_manifest()})  # type: ignore[arg-type,return-value]
    yield BrowserBridge()
    session.configure(lambda _: None, lambda: {"tools": []})  # type: ignore[arg-type,return-value]


async def approve_location(bridge: BrowserBridge, page_answers: object) -> ChatClient:
    """Ask for the location, approve it, and answer the bridge's call as the page would."""
    agent = build_demo_agent()
    client = ChatClient(
        InProcessConnection(agent.run, encode=event_to_wire), tools=session._tools(bridge)
    )
    await client.send("share my location")
    (item,) = client.interrupts
    assert isinstance(item, ToolApprovalInterrupt) and item.tool_name == "get_location"
    assert bridge.take_unsent() == []  # nothing runs in the page before the approval
    approving = asyncio.ensure_future(client.resolve_interrupt(item.id, approved=True))
    await asyncio.wait_for(bridge.wakeup.wait(), timeout=5)
    (call,) = bridge.take_unsent()
    assert call.script == LOCATION_SCRIPT
    bridge.settle(call.id, page_answers)
    await asyncio.wait_for(approving, timeout=5)
    return client


def location_part(client: ChatClient) -> Any:
    (part,) = [p for m in client.messages for p in m.tool_calls if p.name == "get_location"]
    return part


def test_a_position_from_the_page_reaches_the_model(bridge: BrowserBridge) -> None:
    client = run_on_own_loop(approve_location(bridge, BERLIN))
    part = location_part(client)
    assert (part.status, part.output) == ("done", {**BERLIN, "label": "52.5200, 13.4050"})
    assert client.messages[-1].text == "Got it: you're at 52.5200, 13.4050 (±25 m)."
    assert (client.error, client.interrupts) == (None, ())


def test_a_refusal_from_the_page_is_the_tools_error_and_the_model_reads_it(
    bridge: BrowserBridge,
) -> None:
    client = run_on_own_loop(approve_location(bridge, {"error": "denied"}))
    part = location_part(client)
    assert (part.status, part.error) == ("error", "the browser refused location access")
    assert client.messages[-1].text == (
        "I couldn't read your location: the browser refused location access."
    )
    assert (client.error, client.interrupts) == (None, ())

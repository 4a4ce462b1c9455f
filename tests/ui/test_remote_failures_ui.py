"""The page with `CHAT_APP_AGENT_URL` pointing at a remote agent that misbehaves.

A local server (uvicorn, in this process) runs the demo agent behind a switch: its tool
manifest is a bare JSON list (with one entry the client cannot use), and its chat route
answers HTTP 500 `{"error": "database is down"}` until the test fixes it. One copy of the app
is built against it (sign-in off). The page shows the failure in the chat, in words, with
Retry; the message the person typed stays in the conversation; Retry after the fix sends
it again and the approval, typed by the bare-list manifest, goes through. While the agent is
slow to answer at all, the message sent is shown at once, and the page says it is at work.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from starlette.types import ASGIApp, Receive, Scope, Send

from chat_app.demo import build_demo_agent
from chat_app.server import create_app
from tests.live_server import serve_asgi
from tests.ui.conftest import app_copy, ask, fresh_page, hydrated

pytestmark = pytest.mark.browser
PHRASE = "transfer 25 to Ada"


class FlakyAgent:
    """The demo agent's server; `/api/chat` answers 500 while `down`, `/api/tools` a list."""

    def __init__(self, real: ASGIApp, manifest: list[Any]) -> None:
        self.real = real
        self.manifest = json.dumps(manifest).encode()
        self.entries = len(manifest)
        self.down = True
        #: Cleared: `/api/chat` says nothing (not even its headers) until it is set again.
        self.answering = threading.Event()
        self.answering.set()
        #: Set: the next run that returns a tool's result fails right after it, as a run
        #: whose model's provider failed on the turn after the tool ran.
        self.fail_after_result = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path == "/api/tools":
            await self._answer(send, 200, self.manifest)
        elif path == "/api/chat" and self.down:
            await self._answer(send, 500, b'{"error": "database is down"}')
        else:
            while path == "/api/chat" and not self.answering.is_set():
                await asyncio.sleep(0.05)
            if path == "/api/chat" and self.fail_after_result:
                send = self._failing_after_result(send)
            await self.real(scope, receive, send)

    def _failing_after_result(self, send: Send) -> Send:
        """`send`, ending the stream with a `RUN_ERROR` right after a `TOOL_CALL_RESULT`
        event (what the real run sends after it is dropped)."""
        ended = False

        async def failing(message: Any) -> None:
            nonlocal ended
            if ended:
                return
            body = message.get("body", b"") if message["type"] == "http.response.body" else b""
            if b'"TOOL_CALL_RESULT"' not in body:
                await send(message)
                return
            events = body.split(b"\n\n")
            cut = next(i for i, event in enumerate(events) if b'"TOOL_CALL_RESULT"' in event)
            error = b'data: {"type":"RUN_ERROR","message":"The model failed: HTTP 500."}'
            kept = b"\n\n".join([*events[: cut + 1], error]) + b"\n\n"
            ended, self.fail_after_result = True, False
            await send({"type": "http.response.body", "body": kept, "more_body": False})

        return failing

    @staticmethod
    async def _answer(send: Send, status: int, body: bytes) -> None:
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def flaky() -> Iterator[tuple[str, FlakyAgent]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")
        agent = build_demo_agent()
    # A bare list, as many servers answer, with two entries the client cannot use: one
    # without a name, and `deploy` with a schema that is no JSON Schema.
    manifest = [
        {**entry, "inputSchema": {"type": "strin"}} if entry["name"] == "deploy" else entry
        for entry in agent.tool_manifest()
    ] + [{"description": "an entry without a name"}]
    server = FlakyAgent(create_app(agent), manifest)
    with serve_asgi(server, name="the flaky agent") as base:
        yield base, server


@pytest.fixture(scope="module")
def app_url(
    flaky: tuple[str, FlakyAgent], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    extra = {"CHAT_APP_AGENT_URL": f"{flaky[0]}/api/chat", "CHAT_APP_AUTH": "none"}
    with app_copy(tmp_path_factory.mktemp("flaky-app"), extra) as url:
        yield url


def test_a_failing_agent_is_shown_with_retry_and_the_message_is_kept(
    browser: Browser, app_url: str, flaky: tuple[str, FlakyAgent], screenshot_dir: Path
) -> None:
    base, server = flaky
    context = browser.new_context(base_url=app_url, viewport={"width": 1200, "height": 800})
    context.set_default_timeout(20_000)
    page: Page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto("/")
        page.wait_for_selector('#app-root[data-hydrated="true"]')
        # The manifest's unusable entry is named once, in the chat; the rest is used.
        notice = page.locator(".agent-notice")
        expect(notice).to_have_count(2)
        expect(notice.first).to_contain_text("(deploy)")
        expect(notice.last).to_contain_text(
            f"Tool entry {server.entries} in the tool "
            f"manifest at {base}/api/tools was left out: it has no name."
        )

        server.down = True
        page.locator("#composer-input").fill(PHRASE)
        page.locator("#composer-input").press("Enter")
        failure = page.locator("#run-error")
        expect(failure).to_contain_text(
            f"The agent at {base}/api/chat answered HTTP 500: database is down"
        )
        user = page.locator('.chat-message[data-role="user"]')
        expect(user).to_have_text([PHRASE])  # what the person typed stays in the chat
        retry = page.locator("#retry-send")
        expect(retry).to_be_visible()
        page.screenshot(path=str(screenshot_dir / "remote-500.png"), full_page=True)

        server.down = False  # the agent is fixed; Retry sends the same message again
        retry.click()
        decision = page.locator(".approval-card")
        expect(decision).to_be_visible()  # typed by the bare-list manifest
        expect(failure).to_have_count(0)
        expect(user).to_have_text([PHRASE])  # sent again, not added again
        server.down = True  # down again as the approval goes: the card says it is held
        decision.locator("button.approve").click()
        held = decision.locator(".card-held")
        expect(held).to_have_text("Approved, not sent: Retry sends it again, or answer anew.")
        page.screenshot(path=str(screenshot_dir / "remote-approval-held.png"), full_page=True)
        server.down = False
        page.locator("#retry").click()
        expect(page.locator('.tool-card[data-tool="transfer"] .tool-status')).to_have_text("Done")
        expect(held).to_have_count(0)

        # Shown once: dismissed, it does not come back after a reload.
        for left in (1, 0):  # one at a time: the first is the next one only once it is gone
            notice.first.get_by_role("button", name="Dismiss").click()
            expect(notice).to_have_count(left)
        page.reload()
        page.wait_for_selector('#app-root[data-hydrated="true"]')
        expect(page.locator('.tool-card[data-tool="transfer"] .tool-status')).to_have_text("Done")
        expect(notice).to_have_count(0)
    finally:
        context.close()
    assert not errors, errors


def test_a_message_sent_to_a_slow_agent_shows_before_any_reply(
    browser: Browser, app_url: str, flaky: tuple[str, FlakyAgent], screenshot_dir: Path
) -> None:
    _, server = flaky
    server.down = False
    server.answering.clear()
    try:
        with fresh_page(browser, app_url) as page:
            page.goto("/")
            hydrated(page)
            ask(page, "delete project hermes")
            user = page.locator('.chat-message[data-role="user"]')
            expect(user).to_have_text(["delete project hermes"])  # the agent has said nothing
            expect(page.locator("#composer-input")).to_have_value("")
            expect(page.locator(".approval-card")).to_have_count(0)
            # Nothing to show yet, and the page says it is at work, not idle with Stop alone.
            working = page.get_by_role("status").filter(has_text="Working…")
            expect(working).to_be_visible()  # after its moment: hidden until then
            page.screenshot(path=str(screenshot_dir / "remote-slow.png"), full_page=True)
            server.answering.set()
            expect(page.locator(".approval-card")).to_be_visible()
            expect(working).to_have_count(0)
            expect(user).to_have_text(["delete project hermes"])
    finally:
        server.answering.set()


def test_an_approval_of_a_tool_left_out_is_answered_as_json(
    browser: Browser, app_url: str, flaky: tuple[str, FlakyAgent], screenshot_dir: Path
) -> None:
    """`deploy` was left out of the manifest: its approval cannot be trusted as one (the
    client has no schema to check its hashes against), so it is a raw question whose answer
    is the approval's own JSON, typed as such."""
    flaky[1].down = False
    with fresh_page(browser, app_url) as page:
        page.goto("/")
        hydrated(page)
        ask(page, "deploy")
        card = page.locator(".generic-card")
        field = card.locator('textarea[name="value"]')
        field.fill("yes")
        card.locator("button[type=submit]").click()
        expect(card.locator(".field-error")).to_have_text(
            'Enter a JSON value, such as {"approved": true} or "text".'
        )
        field.fill('{"approved": true}')
        page.screenshot(path=str(screenshot_dir / "remote-left-out-json.png"), full_page=True)
        card.locator("button[type=submit]").click()
        expect(page.get_by_text("Deployed checkout 2.4.1")).to_be_visible()


def test_a_reply_that_fails_after_the_approved_tool_ran_goes_on_on_retry(
    browser: Browser, app_url: str, flaky: tuple[str, FlakyAgent], screenshot_dir: Path
) -> None:
    """The agent's model fails on the turn after the approved tool ran: the approval was
    applied, so its card is done, not open again; Retry under the message asks the agent to
    go on from the result (sending the approval again would be a replay it refuses), and the
    tool does not run twice."""
    _, server = flaky
    server.down = False
    with fresh_page(browser, app_url) as page:
        page.goto("/")
        hydrated(page)
        ask(page, PHRASE)
        card = page.locator(".approval-card")
        server.fail_after_result = True
        card.locator("button.approve").click()
        failure = page.locator("#run-error")
        expect(failure).to_contain_text("The model failed: HTTP 500.")
        status = page.locator('.tool-card[data-tool="transfer"] .tool-status')
        expect(status).to_have_text("Done")
        expect(page.locator("#retry")).to_have_count(0)  # nothing to answer again
        expect(page.locator(".card-held")).to_have_count(0)
        page.screenshot(path=str(screenshot_dir / "remote-reply-failed.png"), full_page=True)
        page.locator("#retry-send").click()
        expect(failure).to_have_count(0)
        reply = page.locator('.chat-message[data-role="assistant"]').last
        expect(reply).to_contain_text("Sent 25 to Ada")
        expect(page.get_by_text("Receipt id")).to_have_count(1)  # the transfer ran once
        expect(page.locator('.chat-message[data-role="user"]')).to_have_text([PHRASE])

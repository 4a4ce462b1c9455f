"""Expired decisions (closed by the server when nobody decides) and the Audit page, in
Chromium."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from chat_app.server.origin import CROSS_SITE
from chat_app.trust.sessions import SESSION_COOKIE
from tests.live_server import free_port
from tests.ui.conftest import app_copy, ask, fresh_page, hydrated, sign_in_as_demo, thread_of

pytestmark = pytest.mark.browser
TTL_SECONDS = 4


@pytest.fixture(scope="module")
def short_ttl_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # The desk's timers look twice a second here (5 s in a deployment).
    extra = {"CHAT_APP_INTERRUPT_TTL_SECONDS": str(TTL_SECONDS), "CHAT_APP_TIMER_SECONDS": "0.5"}
    with app_copy(tmp_path_factory.mktemp("short-ttl-app"), extra) as url:
        yield url


def test_a_decision_nobody_makes_expires_on_the_server_and_the_chat_goes_on(
    browser: Browser, short_ttl_url: str, screenshot_dir: Path
) -> None:
    context = browser.new_context(base_url=short_ttl_url, viewport={"width": 1200, "height": 800})
    context.set_default_timeout(20_000)
    page = context.new_page()
    try:
        page.goto("/")
        page.wait_for_selector('#app-root[data-hydrated="true"]')
        ask(page, "transfer 25 to Ada")
        expect(page.locator(".approval-card button.approve")).to_be_visible()
        # Nobody answers: once its time is up the server closes it, without a click or reload.
        card = page.locator('.tool-card[data-tool="transfer"]').last
        expect(card).to_have_attribute("data-status", "expired", timeout=30_000)
        expect(card.locator(".tool-status")).to_have_text("Expired")
        expect(card.locator(".tool-reason")).to_have_text(
            f"Expired: nobody decided within {TTL_SECONDS} s."
        )
        expect(page.locator(".approval-card button.approve")).to_have_count(0)
        # The model was told it expired, not that it was denied, and went on.
        expect(page.get_by_text("Nobody decided on the transfer in time")).to_be_visible()
        expect(page.get_by_text("Receipt id:")).to_have_count(0)
        expect(page.get_by_text("denied")).to_have_count(0)
        page.screenshot(path=str(screenshot_dir / "expired.png"), full_page=True)
        # The conversation is settled: a new message runs.
        ask(page, "delete project apollo")
        expect(page.locator(".approval-card button.approve")).to_be_visible()
    finally:
        context.close()


def test_the_audit_page_shows_the_chain_and_exports_json_lines(
    page: Page, app_url: str, screenshot_dir: Path
) -> None:
    ask(page, "delete project apollo")
    page.locator(".approval-card button.approve").click()
    expect(page.get_by_text("Project apollo is deleted.")).to_be_visible()
    # Rita, the demo's requester, may not read the trail: the header does not link it, and
    # its address refuses her. Olive (admin) may.
    expect(page.locator("#nav-inbox")).to_be_visible()
    expect(page.locator("#nav-audit")).to_have_count(0)
    page.goto("/audit")
    trail = ["#audit-chain", "#audit-export", "#audit-refresh", "#audit-table"]
    expect(page.locator("#audit-refused")).to_contain_text("admin and auditor")
    # Refused, the page is the refusal alone: no badge, buttons or empty table with it.
    for part in trail:
        expect(page.locator(part)).to_have_count(0)
    expect(page.get_by_role("columnheader")).to_have_count(0)
    expect(page.locator(".audit-row")).to_have_count(0)
    sign_in_as_demo(page, "olive@example.com")
    page.locator("#nav-audit").click()
    expect(page.locator("#audit-chain")).to_contain_text("Intact")
    for part in trail:
        expect(page.locator(part)).to_be_visible()
    expect(page.get_by_role("columnheader", name="Verified by")).to_be_visible()
    expect(page.locator("#audit-refused")).to_have_count(0)
    rows = page.locator(".audit-row")
    expect(rows.first).to_be_visible()
    expect(page.locator('.audit-row[data-kind="execution"]').first).to_contain_text(
        "Ran delete_project"
    )
    expect(page.locator('.audit-row[data-kind="decision"]').first).to_contain_text(
        "Approved delete_project"
    )
    page.screenshot(path=str(screenshot_dir / "audit.png"), full_page=True)
    # The export needs the same sign-in: the browser's cookie works, no cookie is Rita's 403.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{app_url}/api/audit.jsonl", timeout=10)
    assert refused.value.code == 403
    response = page.request.get(f"{app_url}/api/audit.jsonl")
    assert response.status == 200
    lines = [json.loads(line) for line in response.text().splitlines()]
    assert any(line["kind"] == "execution" and line["data"]["toolName"] == "delete_project"
               for line in lines)  # fmt: skip
    assert all(line["hash"].startswith("sha256:") for line in lines)


@contextlib.contextmanager
def page_elsewhere() -> Iterator[str]:
    """An empty page on another port of 127.0.0.1: to a browser the same site as the app
    (SameSite cookies go with its requests), another origin."""

    class Blank(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>elsewhere</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Blank)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


#: What a page elsewhere tries with the visitor's session: read her inbox, approve the
#: decision it names (as a form could post it: text/plain needs no preflight), start a
#: conversation, and open the app's websocket. Each step's outcome, as the page sees it.
ATTEMPTS = """async ([app, decisionId]) => {
  const outcome = async (request) => {
    try { const r = await request; return r.status + " " + await r.text(); }
    catch (error) { return "blocked: " + error.name; }
  };
  const post = (path, body) => fetch(app + path, {
    method: "POST", credentials: "include", headers: {"Content-Type": "text/plain"},
    body: JSON.stringify(body)});
  const socket = await new Promise((resolve) => {
    const ws = new WebSocket(app.replace("http", "ws") + "/_event/?EIO=4&transport=websocket");
    ws.onopen = () => { ws.close(); resolve("opened"); };
    ws.onerror = () => resolve("refused");
  });
  return {
    inbox: await outcome(fetch(app + "/api/inbox", {credentials: "include"})),
    spoofed: await outcome(fetch(app + "/api/inbox", {
      credentials: "include", headers: {"X-Forwarded-Host": location.host}})),
    decide: await outcome(post("/api/inbox/" + decisionId, {approved: true})),
    start: await outcome(post("/api/conversations", {message: "delete project apollo"})),
    socket,
  };
}"""


def test_a_page_elsewhere_cannot_act_with_a_signed_in_visitor(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    """Ada, signed in, visits a page on another port of the same host while Rita's transfer
    waits for her: the page can neither read her inbox, nor approve, nor start anything, nor
    open the app's websocket with her session."""
    with fresh_page(browser, app_url) as rita, fresh_page(browser, app_url) as ada:
        rita.goto("/")
        hydrated(rita)
        ask(rita, "transfer 5000 to Ada")
        expect(rita.get_by_text("Waiting for finance")).to_be_visible()
        thread = thread_of(rita)
        ada.goto("/")
        hydrated(ada)
        sign_in_as_demo(ada, "ada@example.com")
        # Ada's own browser, from no page (as a script would): her inbox holds the transfer
        # (found by its conversation: other tests share the app).
        mine = ada.request.get(f"{app_url}/api/inbox").json()["items"]
        [waiting] = [item for item in mine if item["threadId"] == thread]
        with page_elsewhere() as elsewhere:
            # Ada's session goes with the page's requests: the same host is the same site.
            assert SESSION_COOKIE in {cookie["name"] for cookie in ada.context.cookies(elsewhere)}
            ada.goto(elsewhere)
            tried = ada.evaluate(ATTEMPTS, [app_url, waiting["decisionId"]])
        cross_site = json.dumps({"error": CROSS_SITE}, separators=(",", ":"), ensure_ascii=False)
        assert tried == {
            "inbox": f"403 {cross_site}",
            "spoofed": f"403 {cross_site}",
            "decide": f"403 {cross_site}",
            "start": f"403 {cross_site}",
            "socket": "refused",
        }
        # Nothing was decided: the transfer still waits, and Ada's own page still works.
        still = ada.request.get(f"{app_url}/api/inbox").json()["items"]
        assert waiting["decisionId"] in {item["decisionId"] for item in still}
        expect(rita.get_by_text("Waiting for finance")).to_be_visible()
        ada.goto("/inbox")
        hydrated(ada)
        expect(ada.locator(".inbox-name").first).to_be_visible()
        ada.screenshot(path=str(screenshot_dir / "elsewhere-refused.png"))

"""The page with `CHAT_APP_AGENT_URL` pointing at another `python -m chat_app.server` that
takes the app as its sign-in proxy (`CHAT_APP_AGENT_SIGN_IN=proxy` here, `CHAT_APP_AUTH=proxy`
there): each request names the person it is for, so the remote's policy tells the requester
from the approver, and its trail records who decided.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.live_server import free_port
from tests.server.process_app import server_env
from tests.ui.app_server import REPO_ROOT, log_tail, stop
from tests.ui.conftest import app_copy, ask, thread_of
from tests.ui.test_desk_ui import ADA, OLIVE, RITA, inbox_item, open_inbox, people, tool_card

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def remote_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone server with the demo agent and policy, signing people in by proxy (the
    app's requests come from 127.0.0.1, which it trusts by default)."""
    data = tmp_path_factory.mktemp("remote-data")
    port = free_port()
    log = data / "server.log"
    env = server_env(CHAT_APP_DATA_DIR=str(data), CHAT_APP_NAME_HEADER="X-Forwarded-Name")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "chat_app.server", "--port", str(port)],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the remote server did not start:\n{log_tail(log)}")
            time.sleep(0.2)
        yield base
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def app_url(remote_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    extra = {"CHAT_APP_AGENT_URL": f"{remote_url}/api/chat", "CHAT_APP_AGENT_SIGN_IN": "proxy"}
    with app_copy(tmp_path_factory.mktemp("proxied-app"), extra) as url:
        yield url


def test_the_remote_agent_tells_the_requester_from_the_approver(
    browser: Browser, app_url: str, remote_url: str, screenshot_dir: Path
) -> None:
    """Rita asks for a large transfer; the remote's policy keeps it from her and routes it
    to finance. Ada approves it from the app's inbox, the remote runs it, and its trail says
    Ada decided it, signed in by the app as proxy. Olive reads that trail on the app's Audit
    page, as herself."""
    with people(browser, app_url, RITA, ADA, OLIVE) as (rita, ada, olive):
        ask(rita, "transfer 5000 to Ada")
        card = tool_card(rita, "transfer")
        expect(card.locator(".waiting-label")).to_contain_text("Waiting for finance")
        thread = thread_of(rita)

        open_inbox(ada)
        inbox_item(ada, thread).locator(".inbox-open").click()
        tool_card(ada, "transfer").locator("button.approve").click()
        expect(rita.get_by_text("Sent 5,000 to Ada")).to_be_visible()
        rita.screenshot(path=str(screenshot_dir / "remote-proxy-approved.png"))

        trail = httpx.get(
            f"{remote_url}/api/audit", headers={"X-Forwarded-Email": OLIVE}, timeout=5
        ).json()
        decided = [r for r in trail["records"] if r["kind"] == "decision"]
        assert [(r["actor"], r["data"]["verifiedBy"]) for r in decided] == [(ADA, "proxy")]
        paused = [r for r in trail["records"] if r["kind"] == "pause"]
        assert paused and all(r["actor"] == RITA for r in paused), paused

        olive.locator("#nav-audit").click()
        expect(olive.locator("#audit-chain")).to_contain_text("Intact")
        decision = olive.locator('.audit-row[data-kind="decision"]').first
        expect(decision.locator("td").nth(3)).to_have_text(ADA)  # Who
        expect(decision).to_contain_text("Approved transfer")
        # This app's own export would be another trail: it is not offered.
        expect(olive.locator("#audit-export")).to_have_count(0)

"""The page with `CHAT_APP_AGENT_URL` pointing at a real TanStack AI server (node).

A second copy of the app is built in a temporary folder (a Reflex production build is tied
to its port), started with `CHAT_APP_AGENT_URL`, and driven through an approval.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.ui.app_server import REPO_ROOT, stop
from tests.ui.conftest import app_copy

pytestmark = pytest.mark.browser
TANSTACK_SERVER = REPO_ROOT / "tests" / "interop" / "js" / "tanstack_server.mjs"


@pytest.fixture(scope="module")
def tanstack_url() -> Iterator[str]:
    if not (TANSTACK_SERVER.parent / "node_modules" / "@tanstack" / "ai").exists():
        pytest.fail("Run `npm ci --prefix tests/interop/js` first (make test does).", pytrace=False)
    proc = subprocess.Popen(
        ["node", str(TANSTACK_SERVER), "0"],
        cwd=TANSTACK_SERVER.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        port = json.loads(line)["port"]
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def remote_app_url(tanstack_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    extra = {"CHAT_APP_AGENT_URL": f"{tanstack_url}/api/chat"}
    with app_copy(tmp_path_factory.mktemp("remote-app"), extra) as url:
        yield url


def test_approving_through_a_tanstack_server(
    browser: Browser, remote_app_url: str, tanstack_url: str, screenshot_dir: Path
) -> None:
    context = browser.new_context(base_url=remote_app_url, viewport={"width": 1200, "height": 800})
    context.set_default_timeout(20_000)
    page: Page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto("/")
        page.wait_for_selector('#app-root[data-hydrated="true"]')
        page.locator("#composer-input").fill("transfer 25 to Ada")
        page.locator("#composer-input").press("Enter")
        decision = page.locator(".approval-card")
        expect(decision).to_be_visible()
        expect(page.get_by_text("Transfer needs approval.")).to_be_visible()  # TanStack's model
        page.screenshot(path=str(screenshot_dir / "tanstack-pending.png"), full_page=True)
        decision.locator("button.approve").click()
        expect(page.locator('.tool-card[data-tool="transfer"] .tool-status')).to_have_text("Done")
        expect(page.get_by_text("Results:")).to_be_visible()
        page.screenshot(path=str(screenshot_dir / "tanstack-approved.png"), full_page=True)
        with urllib.request.urlopen(f"{tanstack_url}/api/log", timeout=5) as response:
            executed = [
                entry for entry in json.load(response)["log"] if entry.get("tool") == "transfer"
            ]
        assert executed == [{"tool": "transfer", "args": {"recipient": "Ada", "amount": 25}}]
    finally:
        context.close()
    assert not errors, errors

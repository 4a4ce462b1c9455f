"""The page with `CHAT_APP_AGENT_URL` pointing at a real TanStack AI server (node).

A second copy of the app is built in a temporary folder (a Reflex production build is tied
to its port), started with `CHAT_APP_AGENT_URL`, and driven through an approval.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.ui.conftest import REPO_ROOT, START_TIMEOUT, _free_port, _get, _stop, _tail, app_env

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
        _stop(proc)


def _copy_app(target: Path) -> None:
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, check=True, capture_output=True)
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, files):
        source = REPO_ROOT / name
        if source.is_file() and not name.startswith(("tests/", "tools/", "docs/")):
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


@pytest.fixture(scope="module")
def remote_app_url(tanstack_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("remote-app")
    _copy_app(root)
    port = _free_port()
    env = app_env()
    env["CHAT_APP_AGENT_URL"] = f"{tanstack_url}/api/chat"
    log_path = root / "reflex-run.log"
    reflex = Path(sys.executable).with_name("reflex")
    cmd = [str(reflex), "run", "--env", "prod", "--single-port", "--backend-port", str(port)]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while True:
            if proc.poll() is not None:
                pytest.fail(f"The remote-agent app exited:\n{_tail(log_path)}", pytrace=False)
            try:
                if _get(f"{base}/ping")[0] == 200 and _get(f"{base}/")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() - started > START_TIMEOUT:
                pytest.fail(
                    f"The remote-agent app did not start:\n{_tail(log_path)}", pytrace=False
                )
            time.sleep(0.5)
        yield base
    finally:
        _stop(proc)


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

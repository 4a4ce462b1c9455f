"""Fixtures for browser tests against the real app.

`app_url` starts `reflex run --env prod --single-port` once per session from the
repo root on a free port and yields its base URL. `page` gives each test a fresh
browser context (hence a fresh Reflex client token and state) in the system
Chromium, already loaded at `app_url` and hydrated.

Environment knobs:
  CHAT_APP_UI_START_TIMEOUT  seconds to wait for the first build (default 600)
  CHAT_APP_UI_URL            use an already running app instead of starting one
  CHROMIUM                   browser binary (default /usr/bin/chromium)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT_DIR = Path(__file__).resolve().parent / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT = float(os.environ.get("CHAT_APP_UI_START_TIMEOUT", "600"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give UI tests room for the first frontend build (the global timeout is 300 s).

    The session fixture `app_url` runs inside whichever UI test uses it first, so
    that test's timeout must cover the build. Only items under tests/ui are touched.
    """
    here = Path(__file__).resolve().parent
    for item in items:
        if here in item.path.resolve().parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(START_TIMEOUT + 120))


T = TypeVar("T")


def run_on_own_loop(steps: Coroutine[Any, Any, T]) -> T:
    """Run `steps` on a loop and thread of their own: the session's sync Playwright fixtures
    own this thread's loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, steps).result()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read().decode("utf-8", "replace")


def app_env() -> dict[str, str]:
    """Environment for `reflex run`, matching what the Makefile exports."""
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)  # Reflex treats this as "inside a unit test"
    env["REFLEX_TELEMETRY_ENABLED"] = "false"
    env["REFLEX_CHECK_LATEST_VERSION"] = "false"
    # Sealed, with a ledger, as deployed; the secret and ledger live outside the checkout.
    env.setdefault("CHAT_APP_DATA_DIR", tempfile.mkdtemp(prefix="chat-app-data-"))
    bun_bin = REPO_ROOT / "tools" / "bun" / "node_modules" / ".bin"
    if (bun_bin / "bun").exists():
        env["PATH"] = f"{bun_bin}{os.pathsep}{env.get('PATH', '')}"
        env["REFLEX_USE_SYSTEM_BUN"] = "1"
    return env


def _tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="session")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (no trailing slash) of the real app in production single-port mode."""
    if external := os.environ.get("CHAT_APP_UI_URL"):
        yield external.rstrip("/")
        return

    port = _free_port()
    log_path = tmp_path_factory.mktemp("reflex") / "reflex-run.log"
    reflex = Path(sys.executable).with_name("reflex")
    cmd = [str(reflex), "run", "--env", "prod", "--single-port", "--backend-port", str(port)]
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=app_env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group, so teardown reaps the workers too
        )
    try:
        started = time.monotonic()
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"`{' '.join(cmd)}` exited with code {proc.returncode} before serving.\n"
                    f"Log tail ({log_path}):\n{_tail(log_path)}",
                    pytrace=False,
                )
            try:
                ping = _get(f"{base}/ping")
                page = _get(f"{base}/")
                if ping[0] == 200 and "pong" in ping[1] and page[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() - started > START_TIMEOUT:
                pytest.fail(
                    f"App did not answer /ping and / within {START_TIMEOUT:.0f}s.\n"
                    f"Log tail ({log_path}):\n{_tail(log_path)}",
                    pytrace=False,
                )
            time.sleep(0.5)
        sys.stderr.write(f"\n[ui] app up at {base} after {time.monotonic() - started:.1f}s\n")
        yield base
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Headless system Chromium driven by Playwright (never `playwright install`)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"Browser tests need Chromium at {CHROMIUM}, which is missing. "
            "Install it with `apt-get install -y chromium chromium-driver` "
            "(`make test` does this when run as root).",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, app_url: str) -> Iterator[object]:  # type: ignore[no-untyped-def]
    """A fresh context and page at `app_url`, waited until Reflex has hydrated."""
    context = browser.new_context(base_url=app_url, viewport={"width": 1200, "height": 800})
    context.set_default_timeout(20_000)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto("/")
    pg.wait_for_selector('#app-root[data-hydrated="true"]')
    try:
        yield pg
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def screenshot_dir() -> Path:
    """Where UI tests save screenshots (gitignored)."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR


def copy_app(target: Path) -> None:
    """The tracked files of the app (no tests or tools) copied to `target`."""
    import shutil

    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, files):
        source = REPO_ROOT / name
        if source.is_file() and not name.startswith(("tests/", "tools/", "docs/")):
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


@contextlib.contextmanager
def app_copy(root: Path, extra_env: dict[str, str]) -> Iterator[str]:
    """A second app, built in `root` with `extra_env` (a prod build is tied to its port)."""
    copy_app(root)
    port = _free_port()
    env = {**app_env(), **extra_env}
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
                pytest.fail(f"The app copy exited:\n{_tail(log_path)}", pytrace=False)
            try:
                if _get(f"{base}/ping")[0] == 200 and _get(f"{base}/")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() - started > START_TIMEOUT:
                pytest.fail(f"The app copy did not start:\n{_tail(log_path)}", pytrace=False)
            time.sleep(0.5)
        yield base
    finally:
        _stop(proc)

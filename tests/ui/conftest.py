"""Fixtures for browser tests against the real app.

`app_url` starts `reflex run --env prod --single-port` once per test process from a copy
of the app on a free port and yields its base URL. `page` gives each test a fresh
browser context (hence a fresh Reflex client token and state) in the system
Chromium, already loaded at `app_url` and hydrated.

Every copy of the app a test process serves has its frontend built only where no earlier
copy built the same pages (`_one_build_per_page_set`, `tests/ui/reuse_build.py`).

Environment knobs:
  CHAT_APP_UI_START_TIMEOUT  seconds to wait for the first build (default 600)
  CHAT_APP_UI_BUILD_EACH     1: build every copy's frontend, as `reflex run` does
  CHAT_APP_UI_URL            use an already running app instead of starting one
  CHROMIUM                   browser binary (default /usr/bin/chromium)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote

import pytest

from chat_app.trust.store import DATABASE_FILE
from tests.ui import app_server
from tests.ui.app_server import (
    CHROMIUM,
    CHROMIUM_ARGS,
    START_TIMEOUT,
    AppDidNotStart,
    app_env,
    copy_app,
    served_app,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

SCREENSHOT_DIR = Path(__file__).resolve().parent / "screenshots"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give UI tests room for the first frontend build (the global timeout is 300 s).

    The session fixture `app_url` runs inside whichever UI test uses it first, so
    that test's timeout must cover the build. Only items under tests/ui are touched.
    """
    here = Path(__file__).resolve().parent
    for item in items:
        if here in item.path.resolve().parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(START_TIMEOUT + 120))


@pytest.fixture(scope="session", autouse=True)
def _one_build_per_page_set(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The copies this run serves reuse the first one's frontend build where their compiled
    pages are the same: some thirty copies, each built in 5 to 15 s. Under xdist the test
    processes share it (their temporary folders sit in the run's own): the second's first
    copy built again, 20 to 100 s beside the other's browser tests."""
    if os.environ.get("CHAT_APP_UI_BUILD_EACH") != "1":
        base = tmp_path_factory.getbasetemp()
        run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        app_server.builds_kept_in = run / "frontend-build"


@pytest.fixture(scope="session")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (no trailing slash) of the real app in production single-port mode."""
    if external := os.environ.get("CHAT_APP_UI_URL"):
        yield external.rstrip("/")
        return
    # A copy, not the work tree: a prod build is tied to its port, so two test processes
    # (`pytest -n 2`) building in one `.web` would each serve the other's build.
    root = tmp_path_factory.mktemp("reflex")
    copy_app(root)
    started = time.monotonic()
    log_path = root / "reflex-run.log"
    with _failing_if_it_does_not_start(), served_app(root, app_env(), log_path) as served:
        sys.stderr.write(f"\n[ui] app up at {served[0]} after {time.monotonic() - started:.1f}s\n")
        yield served[0]


@contextlib.contextmanager
def _failing_if_it_does_not_start() -> Iterator[None]:
    try:
        yield
    except AppDidNotStart as error:
        pytest.fail(str(error), pytrace=False)


#: How long `expect` waits for what a page should show (Playwright's own is 5 s), and a
#: context's actions (a click, a fill) for their element: the app, Chromium and the other
#: test processes share two cores, and a reply or a live update can take longer there. Only
#: a failing step waits it out; no test asserts a wall-clock time, and a step that must be
#: quick says so with its own timeout.
EXPECT_TIMEOUT_MS = 20_000


@pytest.fixture(scope="session", autouse=True)
def _patient_expect() -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
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


@contextlib.contextmanager
def fresh_page(browser: Browser, base_url: str, **options: Any) -> Iterator[Page]:
    """A new context at `base_url` (not yet loaded), made with `options` (geolocation,
    headers, …), failing on any JavaScript error."""
    context = browser.new_context(
        base_url=base_url, viewport={"width": 1200, "height": 800}, **options
    )
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def hydrated(page: Page) -> None:
    """Wait until Reflex has hydrated the page (the tests' signal that it is live)."""
    page.wait_for_selector('#app-root[data-hydrated="true"]')


T = TypeVar("T")


def thread_of(page: Page, other_than: str = "") -> str:
    """The conversation the chat shows, from its address (`/c/<thread id>`), once it is not
    `other_than` (the chat's New conversation leaves the old address until the next message
    is stored)."""
    old = "/c/" + quote(other_than, safe="")
    page.wait_for_url(lambda url: "/c/" in url and not (other_than and url.endswith(old)))
    return unquote(page.url.rsplit("/c/", 1)[1])


def eventually(found: Callable[[], T | None], what: str, timeout: float = 30.0) -> T:
    """Poll `found` until it gives something (not a fixed sleep: it returns as soon as it
    does); fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = found()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: nothing within {timeout:.0f} s")
        time.sleep(0.1)


def ask(page: Page, text: str) -> None:
    """Type `text` in the composer and send it once Send is there to press, as a person
    does: a run's reply shows before its last write, and Enter does nothing until then."""
    page.locator("#composer-input").fill(text)
    run_ended(page)
    page.locator("#composer-input").press("Enter")


def run_ended(page: Page) -> None:
    """Wait until the run has ended: Send is back in place of Stop. The greeting streams 160
    tokens at the demo's 25 ms each, 4 s, past `expect`'s 5 s on a loaded machine; this waits
    as long as the page's actions do."""
    from playwright.sync_api import expect

    expect(page.locator("#composer-send")).to_be_enabled(timeout=20_000)


def exchange(page: Page, text: str) -> None:
    """Send `text` and wait for its whole reply. `run_ended` alone may pass before the run
    has begun, and a message sent then is not sent: the composer keeps it."""
    from playwright.sync_api import expect

    replies = page.locator('.chat-message[data-role="assistant"]:not(.streaming)')
    before = replies.count()
    ask(page, text)
    expect(replies).to_have_count(before + 1, timeout=20_000)
    run_ended(page)


@pytest.fixture
def page(browser: Browser, app_url: str) -> Iterator[Page]:
    """A fresh context and page at `app_url`, waited until Reflex has hydrated."""
    with fresh_page(browser, app_url) as pg:
        pg.goto("/")
        hydrated(pg)
        yield pg


@pytest.fixture
def screenshot_dir() -> Path:
    """Where UI tests save screenshots (gitignored)."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR


@contextlib.contextmanager
def app_copy(root: Path, extra_env: dict[str, str]) -> Iterator[str]:
    """A second app, built in `root` with `extra_env` (a prod build is tied to its port)."""
    copy_app(root)
    env = {**app_env(), **extra_env}
    with _failing_if_it_does_not_start():
        with served_app(root, env, root / "reflex-run.log") as (base, _):
            yield base


@contextlib.contextmanager
def app_with_database(
    factory: pytest.TempPathFactory, name: str, **extra_env: str
) -> Iterator[tuple[str, Path]]:
    """A second app (`app_copy`) with a data folder of its own: its address, and the SQLite
    database the test may read."""
    data = factory.mktemp(f"{name}-data")
    env = {"CHAT_APP_DATA_DIR": str(data), **extra_env}
    with app_copy(factory.mktemp(f"{name}-app"), env) as url:
        yield url, data / DATABASE_FILE


def sign_in_as_demo(page: Page, email: str) -> None:
    """Switch the demo person with the header's menu (the server sets the cookie and sends
    the page back), and wait for the page to come back signed in as them."""
    from playwright.sync_api import expect

    with page.expect_navigation():
        page.locator("#demo-person").select_option(email)
    page.wait_for_selector('#app-root[data-hydrated="true"]')
    expect(page.locator("#demo-person")).to_have_value(email)

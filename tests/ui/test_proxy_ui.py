"""Behind a sign-in proxy (`CHAT_APP_AUTH=proxy`), in Chromium: each person is who the proxy's
headers say (the browser sends them here, as a proxy in front would), roles come from its
groups header, names from its name header (emails without one), and a page the proxy did not
vouch for says what to do."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.ui.conftest import app_copy, ask, fresh_page, hydrated

RITA, ADA = "rita@example.com", "ada@example.com"


@pytest.fixture(scope="module")
def proxy_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {"CHAT_APP_AUTH": "proxy", "CHAT_APP_NAME_HEADER": "X-Forwarded-Name"}
    with app_copy(tmp_path_factory.mktemp("proxy-app"), env) as url:
        yield url


@contextmanager
def behind_proxy(browser: Browser, url: str, headers: dict[str, str]) -> Iterator[Page]:
    """A tab whose every request (the page's socket too) carries `headers`, loaded."""
    with fresh_page(browser, url, extra_http_headers=headers) as page:
        page.goto("/")
        hydrated(page)
        yield page


def test_people_are_who_the_proxy_says_and_a_page_it_did_not_vouch_for_says_so(
    browser: Browser, proxy_url: str, screenshot_dir: Path
) -> None:
    with behind_proxy(browser, proxy_url, {}) as nobody:
        notice = nobody.locator("#auth-error")
        expect(notice).to_contain_text(
            "You are not signed in: open this app through your organisation's sign-in page"
        )
        expect(notice).to_contain_text("(The sign-in proxy sent no X-Forwarded-Email header.)")
        expect(nobody.locator(".suggestion")).to_have_count(0)
        nobody.screenshot(path=str(screenshot_dir / "proxy-nobody.png"))

    rita_headers = {"X-Forwarded-Email": RITA}
    # As a proxy sends it: the name's UTF-8 bytes, which the server reads as Latin-1.
    ada_name = "Ada Lovelace-Núñez"
    ada_headers = {
        "X-Forwarded-Email": ADA,
        "X-Forwarded-Groups": "finance",
        "X-Forwarded-Name": ada_name.encode().decode("latin-1"),
    }
    with (
        behind_proxy(browser, proxy_url, rita_headers) as rita,
        behind_proxy(browser, proxy_url, ada_headers) as ada,
    ):
        who = rita.locator("#viewer-name")
        expect(who).to_have_text(RITA)
        expect(who).to_have_attribute("title", re.compile("sign out there"))
        expect(rita.locator("#auth-error")).to_have_count(0)
        expect(rita.locator(".suggestion").first).to_be_visible()
        ask(rita, "transfer 5000 to Ada")
        card = rita.locator('.tool-card[data-tool="transfer"]').last
        expect(card.locator(".waiting-label")).to_contain_text("Waiting for finance")

        # Ada is finance by the proxy's groups: the request is in her inbox, hers to approve.
        ada.locator("#nav-inbox").click()
        item = ada.locator(".inbox-item").filter(has_text="recipient=Ada, amount=5000").first
        expect(item.locator(".inbox-waiting-for")).to_have_text(
            "You — waiting for finance"
        )
        item.locator(".inbox-open").click()
        ada.locator('.tool-card[data-tool="transfer"] button.approve').last.click()
        sent = rita.get_by_text(re.compile(r"Sent 5,000 to Ada\. Receipt id: rcpt-"))
        expect(sent).to_be_visible()
        expect(card.locator(".tool-decided-by")).to_have_text(f"Approved by {ada_name}")
        expect(ada.locator("#viewer-name")).to_have_text(ada_name)

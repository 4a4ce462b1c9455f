"""Smoke test: the chat shell loads in Chromium and Send shows the message."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_send_appends_message(page: Page, screenshot_dir: Path) -> None:
    expect(page.get_by_role("banner").get_by_text("Ops desk", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_have_text("Chat")
    expect(page.locator("#transcript-empty")).to_be_visible()

    message = "Please restart the staging database"
    page.locator("#composer-input").fill(message)
    page.get_by_role("button", name="Send").click()

    bubble = page.locator(".chat-message").filter(has_text=message)
    expect(bubble).to_be_visible()
    expect(bubble).to_have_count(1)
    expect(page.locator("#transcript-empty")).to_have_count(0)
    expect(page.locator("#composer-input")).to_have_value("")

    page.screenshot(path=str(screenshot_dir / "smoke-after-send.png"), full_page=True)

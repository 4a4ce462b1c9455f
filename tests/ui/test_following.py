"""The transcript follows its newest message while the reader is at the end, in Chromium.

A short window, so that a few exchanges fill it. "In view" is Playwright's
`to_be_in_viewport`: an IntersectionObserver, which counts the transcript's own scrolling.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, ViewportSize, expect

from chat_app.ui.components.following import JUMP_ID
from tests.ui.conftest import ask, exchange, hydrated, run_ended

pytestmark = pytest.mark.browser

#: Room for the header, about a screen of messages and the composer.
SHORT_WINDOW: ViewportSize = {"width": 900, "height": 520}


def _overflowing(page: Page) -> bool:
    return bool(page.locator("#transcript").evaluate("el => el.scrollHeight > el.clientHeight"))


def _fill(page: Page) -> None:
    """Exchanges until the transcript scrolls (the demo answers "help" with its long list)."""
    page.set_viewport_size(SHORT_WINDOW)
    for _ in range(3):
        exchange(page, "help")
        if _overflowing(page):
            return
    raise AssertionError("three help answers did not fill a short window")


def test_what_arrives_at_the_end_stays_in_view(page: Page, screenshot_dir: Path) -> None:
    _fill(page)
    log = page.locator("#transcript")
    expect(log).to_have_attribute("data-following", "true")
    ask(page, "transfer 25 to Ada")
    expect(page.locator(".approval-card button.approve")).to_be_in_viewport()
    page.locator(".approval-card button.approve").click()
    receipt = page.locator(".chat-message", has_text="Receipt id: rcpt-")
    expect(receipt).to_be_in_viewport()
    expect(page.locator(f"#{JUMP_ID}")).to_be_hidden()
    page.screenshot(path=str(screenshot_dir / "following-receipt.png"))

    # Reloaded, the conversation opens at its end, not at its first message.
    page.reload()
    hydrated(page)
    expect(receipt).to_be_in_viewport()
    expect(page.locator(".chat-message").first).not_to_be_in_viewport()


def test_a_reader_who_scrolled_up_keeps_their_place(page: Page, screenshot_dir: Path) -> None:
    _fill(page)
    log = page.locator("#transcript")
    first = page.locator(".chat-message").first
    ask(page, "help")
    expect(page.locator(".chat-message.streaming")).to_be_visible()
    page.locator("#transcript").hover()
    # A nudge up is enough: the next words of the reply do not pull the reader back down.
    page.mouse.wheel(0, -20)
    expect(log).to_have_attribute("data-following", "false")
    page.mouse.wheel(0, -100_000)
    height_when_left = log.evaluate("el => el.scrollHeight")
    run_ended(page)

    # The reply went on arriving below; the reader's place did not move.
    assert log.evaluate("el => el.scrollHeight") > height_when_left
    assert log.evaluate("el => el.scrollTop") == 0
    expect(first).to_be_in_viewport()
    newest = page.locator(f"#{JUMP_ID}")
    expect(newest).to_be_visible()
    # Below the log, covering none of it (a card's buttons at its end stay pressable).
    pill, shown = newest.bounding_box(), log.bounding_box()
    assert pill is not None and shown is not None
    assert pill["y"] >= shown["y"] + shown["height"]
    page.screenshot(path=str(screenshot_dir / "following-scrolled-up.png"))

    newest.click()
    last = page.locator(".chat-message").last
    expect(last).to_be_in_viewport()
    expect(log).to_have_attribute("data-following", "true")
    expect(newest).to_be_hidden()

    # Scrolled up again, sending a message brings the reader to the end: they see it go.
    page.mouse.wheel(0, -100_000)
    expect(log).to_have_attribute("data-following", "false")
    ask(page, "refund 20 to order 42")
    expect(page.locator('.tool-card[data-tool="refund"]')).to_be_in_viewport()
    run_ended(page)
    expect(page.locator(".chat-message").last).to_be_in_viewport()


def test_the_browser_moving_the_log_down_does_not_stop_it_following(
    page: Page, screenshot_dir: Path
) -> None:
    """A card that arrives can make the browser move the log down by itself (scroll
    anchoring: something above the anchored line changed), to short of the end. That is no
    reader scrolling: the log follows on, to the card. These steps did it reliably."""
    page.set_viewport_size({"width": 1200, "height": 700})
    log = page.locator("#transcript")
    ask(page, "delete project apollo")
    page.locator(".approval-card button.approve").click()
    expect(page.get_by_text("Project apollo is deleted.")).to_be_visible()
    ask(page, "transfer 32 to Ada")
    page.locator(".approval-card button.reject").click()
    page.locator('.form-reject [name="reason"]').fill("Wrong account")
    page.locator(".form-reject button[type=submit]").click()
    expect(page.get_by_text("Reason: Wrong account.")).to_be_visible()
    ask(page, "transfer 5000 to Ada")  # finance's to decide: the card waits
    waiting = page.locator('.tool-card[data-tool="transfer"]').last.locator(".waiting-label")
    expect(waiting).to_be_visible()
    run_ended(page)
    expect(log).to_have_attribute("data-following", "true")
    expect(waiting).to_be_in_viewport()
    expect(page.locator(f"#{JUMP_ID}")).to_be_hidden()
    page.screenshot(path=str(screenshot_dir / "following-card-waits.png"))


def _two_frames(page: Page) -> None:
    """A scroll's event, and what the log does about it, come with the next frame."""
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def test_nothing_in_the_log_moves_under_a_press(page: Page, screenshot_dir: Path) -> None:
    """A press is a click only if its release lands on what was pressed. While the pointer
    is down, the log neither follows a reply that arrives nor gives up or takes back
    Newest's room (whose going would move the view down by it: a button pressed as the log
    came back to its end was released on what was above it). Released, it catches up."""
    _fill(page)
    log = page.locator("#transcript")
    newest = page.locator(f"#{JUMP_ID}")

    ask(page, "help")
    expect(page.locator(".chat-message.streaming")).to_be_visible()
    asked = page.locator('.chat-message[data-role="user"]').last
    expect(asked).to_be_in_viewport()
    at = asked.bounding_box()
    assert at is not None
    page.mouse.move(at["x"] + at["width"] / 2, at["y"] + at["height"] / 2)
    page.mouse.down()
    _two_frames(page)  # the log may have followed a line that came before the press
    box = asked.bounding_box()
    height = log.evaluate("el => el.scrollHeight")
    page.wait_for_function(
        "h => document.getElementById('transcript').scrollHeight > h + 100", arg=height
    )
    _two_frames(page)
    assert asked.bounding_box() == box  # the reply grew below it; it stayed under the pointer
    page.mouse.up()
    expect(page.locator(".chat-message").last).to_be_in_viewport()
    expect(log).to_have_attribute("data-following", "true")
    run_ended(page)

    page.mouse.wheel(0, -100_000)
    expect(newest).to_be_visible()
    room = log.evaluate("el => el.clientHeight")
    page.mouse.down()
    log.evaluate("el => { el.scrollTop = el.scrollHeight; }")  # as a touchpad's glide
    _two_frames(page)
    expect(newest).to_be_visible()
    assert log.evaluate("el => el.clientHeight") == room
    page.mouse.up()
    expect(newest).to_be_hidden()
    expect(log).to_have_attribute("data-following", "true")
    assert log.evaluate("el => el.clientHeight") > room
    page.screenshot(path=str(screenshot_dir / "following-after-a-press.png"))

"""Every demo scenario, clicked through in Chromium against the production build.

Each test starts from a fresh browser context (a fresh Reflex token, so a fresh chat) and
saves a screenshot of the states it passes through.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, WebSocket, WebSocketRoute, expect

from chat_app.ui.components.connection import CONNECTION_LOST
from chat_app.ui.state import NOTHING_RAN, RUNNING_NOTICE, SUGGESTIONS
from tests.ui.conftest import (
    ask,
    eventually,
    fresh_page,
    hydrated,
    run_ended,
    sign_in_as_demo,
)

pytestmark = pytest.mark.browser


def card(page: Page, tool: str) -> object:
    return page.locator(f'.tool-card[data-tool="{tool}"]').last


def assert_one_row(container: Locator, *buttons: str) -> None:
    """The buttons (by class) sit on one line, their middles level (a ghost button's box
    is offset from its text)."""
    boxes = [container.locator(f"button.{name}").bounding_box() for name in buttons]
    middles = [box["y"] + box["height"] / 2 for box in boxes if box is not None]
    assert len(middles) == len(buttons) and max(middles) - min(middles) <= 1, middles


def shot(page: Page, directory: Path, name: str) -> None:
    page.screenshot(path=str(directory / f"{name}.png"), full_page=True)


def test_suggestion_chips_list_the_demo(page: Page, screenshot_dir: Path) -> None:
    chips = page.locator(".suggestion")
    expect(chips).to_have_count(len(SUGGESTIONS))
    expect(chips.first).to_have_text("transfer 25 to Ada")
    expect(chips.nth(1)).to_have_text("transfer 5000 to Ada")
    shot(page, screenshot_dir, "empty")

    # The greeting sits in the middle of the conversation's column, its chips apart.
    log = page.locator("#transcript").bounding_box()
    greeting = page.locator("#transcript-empty h1, #transcript-empty h2, #transcript-empty h3,"
                            " #transcript-empty h4").first.bounding_box()  # fmt: skip
    assert log is not None and greeting is not None
    middle = log["x"] + log["width"] / 2
    assert abs(greeting["x"] + greeting["width"] / 2 - middle) < 4, (greeting, log)
    first, second = chips.first.bounding_box(), chips.nth(1).bounding_box()
    assert first is not None and second is not None
    assert second["x"] - (first["x"] + first["width"]) >= 6, (first, second)


def test_transfer_approved_reports_the_receipt(page: Page, screenshot_dir: Path) -> None:
    page.get_by_role("button", name="transfer 25 to Ada").click()
    decision = page.locator(".approval-card")
    expect(decision).to_be_visible()
    expect(decision.locator("button.approve")).to_be_focused()
    expect(page.locator(".tool-status")).to_have_text("Awaiting approval")
    shot(page, screenshot_dir, "transfer-pending")
    decision.locator("button.approve").click()
    expect(page.get_by_text("Receipt id: rcpt-")).to_be_visible()
    expect(page.locator('.tool-card[data-tool="transfer"] .tool-status')).to_have_text("Done")
    expect(page.locator(".approval-card")).to_have_count(0)
    shot(page, screenshot_dir, "transfer-approved")
    # Its folds are read by their words, in a group named for the call (not "▸ Arguments",
    # the same on every card).
    card = page.get_by_role("group", name="Tool call: transfer")
    expect(card.locator(".tool-arguments .fold-summary")).to_have_accessible_name("Arguments")
    expect(card.locator(".tool-result .fold-summary")).to_have_accessible_name("Result")


def test_reject_needs_a_reason_and_the_model_reads_it(page: Page, screenshot_dir: Path) -> None:
    ask(page, "transfer 25 to Ada")
    toggle = page.locator(".approval-card button.reject")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    form = page.locator(".form-reject")
    # Opened, the form has the keyboard: the reason is typed at once.
    expect(toggle).to_have_attribute("aria-expanded", "true")
    reason = form.locator('[name="reason"]')
    expect(reason).to_be_focused()
    # Its hints are what describe it to a screen reader: what it is for, and its limit.
    hints = (reason.get_attribute("aria-describedby") or "").split()
    assert [page.locator(f'[id="{i}"]').inner_text() for i in hints] == [
        "Why the transfer is refused; the agent reads this.", "At most 500 characters."
    ]
    form.locator("button[type=submit]").click()
    expect(form.locator(".field-error")).to_have_text("This field is required.")
    expect(page.locator(".approval-card")).to_be_visible()  # nothing was sent
    shot(page, screenshot_dir, "reject-without-reason")
    form.locator('[name="reason"]').fill("Wrong account")
    form.locator("button[type=submit]").click()
    expect(page.get_by_text("Reason: Wrong account.")).to_be_visible()
    expect(page.locator('.tool-card[data-tool="transfer"] .tool-status')).to_have_text("Rejected")
    shot(page, screenshot_dir, "transfer-rejected")


def test_markup_typed_in_a_reason_reaches_the_reply_as_text(page: Page) -> None:
    """The model's reply carries the reason as typed; HTML in it is shown, never rendered
    (one person's reason is read on another's page: it must not be able to cover it)."""
    ask(page, "transfer 25 to Ada")
    page.locator(".approval-card button.reject").click()
    typed = '<div id="typed-markup" style="position:fixed;inset:0">Session expired</div>'
    page.locator('.form-reject [name="reason"]').fill(typed)
    page.locator(".form-reject button[type=submit]").click()
    reply = page.locator('.chat-message[data-role="assistant"]').filter(has_text="Reason:")
    expect(reply).to_contain_text(f"Reason: {typed}")
    expect(page.locator("#typed-markup")).to_have_count(0)
    # The reply's own Markdown still renders: the demo's help has bold tool names.
    ask(page, "hello")
    expect(page.locator('.chat-message[data-role="assistant"] strong').first).to_be_visible()


def test_escape_closes_a_form_and_keeps_what_was_typed(page: Page) -> None:
    """Escape in an open form closes it as its button would, the keyboard goes back to that
    button, and the form opened again holds what was typed (even at once after typing,
    before the draft's own pause)."""
    ask(page, "transfer 25 to Ada")
    toggle = page.locator(".approval-card button.reject")
    toggle.click()
    reason = page.locator('.form-reject [name="reason"]')
    expect(reason).to_be_focused()
    reason.press_sequentially("Wrong acc")
    reason.press("Escape")
    expect(page.locator(".form-reject")).to_have_count(0)
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_be_focused()
    page.keyboard.press("Enter")  # the button has the keyboard: it opens the form again
    expect(reason).to_have_value("Wrong acc")
    expect(reason).to_be_focused()
    # Escape outside a form closes nothing.
    page.locator("#composer-input").press("Escape")
    expect(page.locator(".form-reject")).to_have_count(1)


def test_a_decision_that_appears_while_someone_types_leaves_them_typing(page: Page) -> None:
    """Rita sends with Enter and types on: the card that appears does not take the keyboard
    from her (a space would press Approve, and run a deletion); her words stay in the box.
    Opened from a button (a suggestion), the card does take it."""
    ask(page, "delete project apollo")
    card = page.locator(".approval-card")
    expect(card).to_be_visible()
    box = page.locator("#composer-input")
    expect(box).to_be_focused()
    page.keyboard.type(" and after that archive the old repo")
    expect(box).to_have_value(" and after that archive the old repo")
    expect(card.locator("button.approve")).to_be_visible()  # nothing was approved
    expect(page.get_by_text("Project apollo is deleted")).to_have_count(0)


def test_each_page_has_one_heading_and_its_landmarks(page: Page) -> None:
    """Each page names itself in one `<h1>` (the product's name in the header is not a
    heading), inside its `<main>`, after the header's `banner`: what a screen reader's
    lists of headings and landmarks offer."""
    ask(page, "hello")
    for path in ("", "/inbox", "/conversations", "/inbox/decided", "/signin", "/audit"):
        if path:
            page.goto(path)
            hydrated(page)
        headings = page.locator("h1")
        expect(headings).to_have_count(1)
        expect(page.get_by_role("main").locator("h1")).to_have_count(1)
        expect(page.get_by_role("banner")).to_contain_text("Ops desk")
        expect(page.get_by_role("main")).to_have_count(1)
    expect(page.get_by_role("heading", level=1)).to_have_text("Audit trail")


def test_cancel_runs_nothing(page: Page, screenshot_dir: Path) -> None:
    ask(page, "delete project apollo")
    assert_one_row(page.locator(".approval-card"), "approve", "cancel")
    page.locator(".approval-card button.cancel").click()
    expect(page.get_by_text("Cancelled: delete project did not run.")).to_be_visible()
    expect(page.locator('.tool-card[data-tool="delete_project"] .tool-status')).to_have_text(
        "Cancelled"
    )
    shot(page, screenshot_dir, "delete-cancelled")


def test_two_open_edit_forms_each_label_and_describe_their_own_fields(page: Page) -> None:
    """Two invoices' Edit forms open at once hold the same fields: each label points at its
    own card's control (a click on it focuses that one), no id is on the page twice, and a
    field's error is what describes it to assistive technology."""
    ask(page, "pay invoices")
    cards = page.locator(".approval-card")
    expect(cards).to_have_count(3)
    cards.nth(0).locator("button.edit").click()
    cards.nth(1).locator("button.edit").click()
    second = cards.nth(1).locator(".form-edit")
    label = second.locator("label.field-label", has_text="Amount")
    control = second.locator(f'[id="{label.get_attribute("for")}"]')
    expect(control).to_have_count(1)
    label.click()
    expect(control).to_be_focused()
    ids = page.evaluate("[...document.querySelectorAll('[id]')].map((e) => e.id)")
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)

    control.fill("")
    second.locator("button[type=submit]").click()
    error = second.locator(".field-error")
    expect(error).to_have_text("This field is required.")
    expect(control).to_have_attribute("aria-invalid", "true")
    expect(control).to_have_attribute("aria-required", "true")  # the label's "*" is hidden
    error_id = error.get_attribute("id") or "?"
    expect(control).to_have_attribute("aria-describedby", re.compile(rf"(^| ){error_id}$"))


def test_edited_arguments_are_validated_then_sent(page: Page, screenshot_dir: Path) -> None:
    ask(page, "email ada@example.com about Launch")
    page.locator(".approval-card button.edit").click()
    form = page.locator(".form-edit")
    expect(form.locator('input[name="to"]')).to_have_value("ada@example.com")
    # Nothing changed yet: no field shows the proposal.
    expect(form.locator(".proposed-value").first).to_be_hidden()
    form.locator('input[name="to"]').fill("not an email")
    form.locator('input[name="subject"]').fill("Launch day")
    # Each changed field shows what was proposed, as it is typed; an unchanged one does not.
    subject = form.locator('[data-field="subject"]')
    expect(subject).to_have_class(re.compile(r"\bchanged\b"))
    expect(subject.locator(".proposed-value")).to_be_visible()
    expect(subject.locator(".proposed-value")).to_have_text("Proposed: Launch")
    expect(form.locator('[data-field="body"] .proposed-value')).to_be_hidden()
    form.locator('input[name="subject"]').fill("Launch")
    expect(subject.locator(".proposed-value")).to_be_hidden()
    form.locator('input[name="subject"]').fill("Launch day")
    form.locator("button[type=submit]").click()
    error = form.locator('[data-field="to"] .field-error')
    expect(error).to_have_text("Enter a valid email address.")
    expect(form.locator('input[name="subject"]')).to_have_value("Launch day")  # draft kept
    expect(subject.locator(".proposed-value")).to_be_visible()  # changed, after the round trip
    shot(page, screenshot_dir, "edit-invalid")
    # One address: a second recipient slipped in after a comma is no email address either.
    form.locator('input[name="to"]').fill("grace@example.com, eve@evil.example")
    form.locator("button[type=submit]").click()
    # The same words as the first refusal: the card's count of refusals says this one came.
    expect(page.locator(".approval-card .card-replies")).to_have_text("2")
    expect(error).to_have_text("Enter a valid email address.")
    form.locator('input[name="to"]').fill("grace@example.com")
    subject_text = "Launch-day-" + "x" * 109  # 120 characters, the most, without a space
    form.locator('input[name="subject"]').fill(subject_text)
    form.locator("button[type=submit]").click()
    expect(page.get_by_text("sent to grace@example.com")).to_be_visible()
    # The card keeps what the model proposed and says what ran instead, inside the card.
    card = page.locator('.tool-card[data-tool="send_email"]')
    expect(card.locator(".tool-change")).to_have_text(
        ["to: ada@example.com → grace@example.com", f"subject: Launch → {subject_text}"]
    )
    edge = card.bounding_box()
    line = card.locator(".tool-change").last.bounding_box()
    assert edge is not None and line is not None
    assert line["x"] + line["width"] <= edge["x"] + edge["width"], (line, edge)
    shot(page, screenshot_dir, "edit-sent")


def test_batch_approved_all_at_once(page: Page, screenshot_dir: Path) -> None:
    ask(page, "pay invoices")
    expect(page.locator("#batch-title")).to_have_text("3 decisions needed")
    expect(page.locator(".approval-card")).to_have_count(3)
    shot(page, screenshot_dir, "batch-pending")
    page.locator("#approve-all").click()
    for invoice in ("INV-1001", "INV-1002", "INV-1003"):
        expect(page.get_by_text(f"Paid {invoice}")).to_be_visible()
    expect(page.locator(".batch-bar")).to_have_count(0)
    shot(page, screenshot_dir, "batch-approved")


def test_approve_all_clicked_twice_approves_the_batch_once(page: Page) -> None:
    """A double click on Approve all: the second click waits for the first's run, then finds
    the batch it was about answered, and does nothing (it would otherwise act on whatever
    is open by then: the next batch, which nobody has seen, or nothing, an error)."""
    ask(page, "pay invoices")
    expect(page.locator(".approval-card")).to_have_count(3)
    page.locator("#approve-all").evaluate("(button) => { button.click(); button.click(); }")
    for invoice in ("INV-1001", "INV-1002", "INV-1003"):
        expect(page.get_by_text(f"Paid {invoice}")).to_have_count(1)
    run_ended(page)
    page.wait_for_timeout(1_000)  # the second click's turn
    expect(page.locator("#run-error-text")).to_have_count(0)
    expect(page.locator("#agent-notices")).to_have_count(0)
    expect(page.get_by_text(re.compile("Paid INV-1001"))).to_have_count(1)


def test_batch_answered_item_by_item_sends_once_the_last_is_answered(
    page: Page, screenshot_dir: Path
) -> None:
    ask(page, "pay invoices")
    cards = page.locator(".approval-card")
    expect(cards).to_have_count(3)
    cards.nth(0).locator("button.approve").click()
    expect(page.locator("#batch-title")).to_have_text("2 decisions needed")
    cards.nth(1).locator("button.reject").click()
    expect(page.locator("#batch-title")).to_have_text("1 decision needed")
    expect(page.get_by_text("Paid INV-1001")).to_have_count(0)  # nothing ran yet
    # Each staged answer is marked as what it is: a check for approved, a cross for rejected.
    expect(cards.nth(0).locator(".staged svg.lucide-circle-check")).to_have_count(1)
    expect(cards.nth(1).locator(".staged svg.lucide-circle-x")).to_have_count(1)
    shot(page, screenshot_dir, "batch-partial")
    page.locator(".approval-card").last.locator("button.approve").click()
    expect(page.get_by_text("Paid INV-1001")).to_be_visible()
    expect(page.get_by_text("Paid INV-1003")).to_be_visible()
    expect(page.get_by_text("pay invoice was not run")).to_be_visible()
    shot(page, screenshot_dir, "batch-item-by-item")


def test_a_batch_answered_in_three_quick_clicks_loses_none(page: Page) -> None:
    """Three Approves in one go, as fast as a person taps down a list: each is staged while
    the one before may still be ending, and the last, which completes the batch, sends it.
    None is lost; before, one clicked as the last one's run ended was dropped (more often
    than not over two rounds; the tab gave it again at its live loop's next look, 10-20 s
    later)."""
    for _ in range(2):
        ask(page, "pay invoices")
        cards = page.locator(".approval-card")
        expect(cards).to_have_count(3)
        cards.evaluate_all("(cards) => cards.forEach((c) => c.querySelector('.approve').click())")
        for invoice in ("INV-1001", "INV-1002", "INV-1003"):
            expect(page.get_by_text(f"Paid {invoice}")).to_be_visible(timeout=10_000)
        page.locator("#new-conversation").click()
        expect(page.locator("#transcript-empty")).to_be_visible()


def test_the_keyboard_goes_from_decision_to_decision(page: Page) -> None:
    """Answered from the keyboard, a decision's buttons go: the next open decision's Approve
    takes the focus, so Enter, Enter, Enter answers a batch of three (reached with Shift+Tab
    from the box the request was typed in, which keeps the keyboard as the cards appear);
    then the box has it again."""
    ask(page, "pay invoices")
    cards = page.locator(".approval-card")
    expect(cards).to_have_count(3)
    first = cards.nth(0).locator("button.approve")
    for _ in range(30):
        if first.evaluate("(button) => button === document.activeElement"):
            break
        page.keyboard.press("Shift+Tab")
    for at in range(3):
        expect(cards.nth(at).locator("button.approve")).to_be_focused()
        page.keyboard.press("Enter")
        if at < 2:
            expect(page.locator("#batch-title")).to_have_text(
                f"{2 - at} decision{'s' if at == 0 else ''} needed"
            )
    expect(page.get_by_text("Paid INV-1003")).to_be_visible()
    # None left: the message box has the keyboard, not the top of the page.
    expect(page.locator("#composer-input")).to_be_focused()


#: The focused element's outline and what is behind it, as sRGB (a 1×1 canvas converts the
#: Display P3 colours Radix gives where the screen has them), each over the one behind.
RING_JS = """(el) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  const paint = (css) => { ctx.fillStyle = css; ctx.fillRect(0, 0, 1, 1);
                           return Array.from(ctx.getImageData(0, 0, 1, 1).data).slice(0, 3); };
  const under = [];
  for (let node = el.parentElement; node; node = node.parentElement) {
    const colour = getComputedStyle(node).backgroundColor;
    if (colour && colour !== 'transparent' && colour !== 'rgba(0, 0, 0, 0)') under.unshift(colour);
  }
  paint(getComputedStyle(document.documentElement).colorScheme === 'dark' ? 'black' : 'white');
  let back = null;
  for (const colour of under) back = paint(colour);
  const style = getComputedStyle(el);
  return { style: style.outlineStyle, width: parseFloat(style.outlineWidth),
           back: back || paint('white'), ring: paint(style.outlineColor) };
}"""


def _contrast(one: list[int], two: list[int]) -> float:
    def luminance(rgb: list[int]) -> float:
        linear = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(one), luminance(two)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_focus_ring_stands_out_from_what_is_behind_it(page: Page) -> None:
    """A button reached with the keyboard is ringed at 3:1 or more against what is behind it
    (WCAG 2.2, 1.4.11; Radix's own ring was about 2.4:1), in light and in dark."""
    ask(page, "delete project apollo")
    approve = page.locator(".approval-card button.approve")
    expect(approve).to_be_enabled()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # the theme follows the system's
        page.locator("#composer-input").focus()
        for _ in range(30):
            if approve.evaluate("(button) => button === document.activeElement"):
                break
            page.keyboard.press("Shift+Tab")
        expect(approve).to_be_focused()
        ring = approve.evaluate(RING_JS)
        assert ring["style"] == "solid" and ring["width"] >= 2, (scheme, ring)
        assert _contrast(ring["ring"], ring["back"]) >= 3, (scheme, ring)


@pytest.mark.parametrize("bulk", ["#approve-all", "#reject-all", "#cancel-all"])
def test_a_batch_answered_whole_from_the_keyboard_gives_the_box_the_focus(
    page: Page, bulk: str
) -> None:
    """Approve all, Reject all or Cancel all pressed with Enter: the cards go, and the box
    takes the keyboard, as after the batch's last single answer (not the top of the page)."""
    ask(page, "pay invoices")
    expect(page.locator(".approval-card")).to_have_count(3)
    page.locator(bulk).focus()
    page.keyboard.press("Enter")
    expect(page.locator(".approval-card button.approve")).to_have_count(0)
    expect(page.locator("#composer-input")).to_be_focused()


def test_generic_form_invalid_then_valid(page: Page, screenshot_dir: Path) -> None:
    ask(page, "plan release")
    generic = page.locator(".generic-card")
    expect(generic.get_by_text("Release 2026.12")).to_be_visible()
    expect(generic.get_by_text("Audit export as JSON lines")).to_be_visible()
    # The plan's points are a list a reader sees as one: each with its marker.
    markers = generic.locator(".payload-items li").evaluate_all(
        "items => items.map(li => getComputedStyle(li).listStyleType)"
    )
    assert markers == ["disc", "disc", "disc"]
    generic.locator('[name="note"]').fill("x" * 501)
    generic.locator("button[type=submit]").click()
    expect(generic.locator('[data-field="note"] .field-error')).to_have_text(
        "Use at most 500 characters."
    )
    # A required yes or no is chosen, not read from a box left unticked.
    expect(generic.locator('[data-field="approved"] .field-error')).to_have_text(
        "Choose one of: Yes, No."
    )
    yes = generic.get_by_role("radio", name="Yes")
    expect(yes).to_be_focused()  # the first field in error
    expect(page.locator(".generic-card")).to_have_count(1)  # nothing was sent
    shot(page, screenshot_dir, "plan-invalid")
    # The same Submit again gets the same errors: the card is not left "Sending…".
    generic.locator("button[type=submit]").click()
    expect(generic.locator(".card-replies")).to_have_text("2")
    expect(generic).not_to_have_attribute("aria-busy", "true")
    # A field typed over loses its error as it is typed, long before the draft reaches the
    # server (700 ms after typing pauses): the form moves while the person types, not under
    # the click that follows. Typed back as it was, the error holds again (both read in the
    # page's own turn: the draft cannot come between).
    note = generic.locator('[name="note"]')
    note_error = generic.locator('[data-field="note"] .field-error')
    over, back = note.evaluate(
        """(note) => {
          const shown = () => note.closest('.form-field').querySelector('.field-error')
            .checkVisibility();
          const was = note.value;
          note.value = 'y'.repeat(502);
          note.dispatchEvent(new Event('input', {bubbles: true}));
          const over = shown();
          note.value = was;
          note.dispatchEvent(new Event('input', {bubbles: true}));
          return [over, shown()];
        }"""
    )
    assert (over, back) == (False, True)
    note.fill("y" * 502)
    hidden = "(error) => [error.isConnected, error.checkVisibility()]"
    assert note_error.evaluate(hidden) == [True, False]  # there, and hidden
    assert generic.locator('[data-field="approved"] .field-error').is_visible()
    # A Submit that refuses it again shows its error again.
    generic.locator("button[type=submit]").click()
    expect(generic.locator(".card-replies")).to_have_text("3")
    expect(note_error).to_be_visible()
    expect(note_error).to_have_text("Use at most 500 characters.")
    yes.click()
    generic.locator('[name="note"]').fill("Ship it")
    generic.locator("button[type=submit]").click()
    expect(page.get_by_text("Release plan approved. Note: Ship it")).to_be_visible()
    shot(page, screenshot_dir, "plan-approved")


def test_what_is_typed_in_a_form_survives_a_reload(page: Page, screenshot_dir: Path) -> None:
    """Typed and not sent, a note comes back after a reload; after a refused Submit and a
    fix, the fix comes back, without the error it no longer has."""
    ask(page, "plan release")
    generic = page.locator(".generic-card")
    expect(generic.locator(".field-limit")).to_have_text("At most 500 characters.")  # the note's
    note = generic.locator('[name="note"]')
    note.fill("Hold the audit export")
    note.blur()
    page.wait_for_timeout(1_500)  # the draft is kept once typing pauses
    page.reload()
    hydrated(page)
    expect(note).to_have_value("Hold the audit export")

    note.fill("x" * 501)
    generic.locator("button[type=submit]").click()
    error = generic.locator('[data-field="note"] .field-error')
    expect(error).to_have_text("Use at most 500 characters.")
    note.fill("Ship it")
    note.blur()
    page.wait_for_timeout(1_500)
    page.reload()
    hydrated(page)
    expect(note).to_have_value("Ship it")
    expect(error).to_have_count(0)
    shot(page, screenshot_dir, "plan-draft-kept")
    generic.get_by_role("radio", name="Yes").click()
    generic.locator("button[type=submit]").click()
    expect(page.get_by_text("Release plan approved. Note: Ship it")).to_be_visible()


def test_text_typed_just_before_a_reload_comes_back_and_is_kept(
    page: Page, screenshot_dir: Path
) -> None:
    """Reloaded at once, before typing has paused long enough to send a draft: the edit comes
    back, and is then kept as the tab's draft on the server."""
    ask(page, "email ada@example.com about Launch")
    page.locator(".approval-card button.edit").click()
    form = page.locator(".form-edit")
    subject = form.locator('input[name="subject"]')
    expect(subject).to_have_value("Launch")
    subject.fill("Launch day, moved to Friday")
    page.reload()  # at once: no pause for the draft to be sent
    hydrated(page)
    expect(subject).to_have_value("Launch day, moved to Friday")
    expect(form.locator('[data-field="subject"] .proposed-value')).to_have_text("Proposed: Launch")
    # Given back, it is sent as the draft, and the tab holds nothing more.
    eventually(
        lambda: not page.evaluate("sessionStorage.getItem('chat_app_unsent_drafts')"),
        "the given-back text to be sent as the draft",
    )
    page.reload()  # the tab holds nothing now: what comes back is the server's draft
    hydrated(page)
    expect(subject).to_have_value("Launch day, moved to Friday")
    shot(page, screenshot_dir, "edit-kept-across-reload")
    form.locator("button[type=submit]").click()
    sent = 'Email "Launch day, moved to Friday" sent to ada@example.com'
    expect(page.get_by_text(sent)).to_be_visible()


def test_text_held_for_a_reload_is_not_given_to_the_next_person(page: Page) -> None:
    """Switched to another person at once after typing: the tab holds nothing of it, and
    the form shows the proposal when the first person comes back and opens it again."""
    ask(page, "email ada@example.com about Launch")
    page.locator(".approval-card button.edit").click()
    subject = page.locator('.form-edit input[name="subject"]')
    subject.fill("Not for Ada")
    sign_in_as_demo(page, "ada@example.com")
    assert page.evaluate("sessionStorage.getItem('chat_app_unsent_drafts')") is None
    sign_in_as_demo(page, "rita@example.com")
    page.locator(".approval-card button.edit").click()
    expect(subject).to_have_value("Launch")


def test_shipping_form_ships_with_the_answer(page: Page, screenshot_dir: Path) -> None:
    ask(page, "ship order 42")
    generic = page.locator(".generic-card")
    expect(generic).to_contain_text("How should order 42 ship?")
    assert_one_row(generic, "submit", "cancel")
    # An option chosen and a box ticked are kept as a draft too (Radix's own controls).
    # The choice says it must be made (and, with a value, is not in error).
    speed = generic.get_by_role("radiogroup", name="Shipping speed")
    label = generic.locator("label.field-label", has_text="Shipping speed")
    expect(speed).to_have_attribute("id", label.get_attribute("for") or "?")
    expect(speed).to_have_attribute("aria-required", "true")
    expect(speed).to_have_attribute("aria-invalid", "false")
    generic.get_by_role("radio", name="express").click()
    generic.locator('button[role="checkbox"]').click()
    page.wait_for_timeout(1_500)
    page.reload()
    hydrated(page)
    expect(generic.get_by_role("radio", name="express")).to_have_attribute("aria-checked", "true")
    expect(generic.locator('button[role="checkbox"]')).to_have_attribute("aria-checked", "true")
    # A draft is no answer: the tab notes nothing to give again on reconnecting.
    assert not page.evaluate("sessionStorage.getItem('chat_app_unconfirmed')")
    # Chosen again, then another page and back (no reload): the newer choice is drawn.
    generic.get_by_role("radio", name="standard").click()
    page.wait_for_timeout(1_500)
    page.locator("#nav-conversations").click()
    expect(page.locator(".conversation-row").first).to_be_visible()
    page.go_back()
    hydrated(page)
    expect(generic.get_by_role("radio", name="standard")).to_have_attribute("aria-checked", "true")
    generic.locator('button[role="checkbox"]').click()
    generic.get_by_role("radio", name="overnight").click()
    generic.locator("button[type=submit]").click()
    expect(page.get_by_text("Order 42 ships overnight.")).to_be_visible()
    # The question and its answer stay in the conversation, where they were asked.
    answered = page.locator(".answered-question")
    expect(answered).to_have_count(1)
    expect(answered).to_contain_text("How should order 42 ship?")
    expect(answered.locator(".answer-line")).to_have_text(
        ["Shipping speed: overnight", "Gift wrap: no"]
    )
    expect(answered.locator(".answer-note")).to_have_text("Answered by you")
    shot(page, screenshot_dir, "shipped")
    page.reload()
    hydrated(page)
    order = page.locator(".chat-message, .answered-question").all_inner_texts()
    at = next(i for i, text in enumerate(order) if "How should order 42 ship?" in text)
    assert order[at - 1] == "ship order 42" and order[at + 1] == "Shipping order 42 overnight."


def test_two_tabs_answering_one_question_the_one_that_lost_says_so(
    page: Page, screenshot_dir: Path
) -> None:
    """Two tabs of one person answer the same question at the same moment, differently. The
    ledger takes one answer and refuses the other's run; both tabs then show the answer
    that counted, and the tab whose answer went nowhere says so (the other does not)."""
    ask(page, "ship order 88")
    expect(page.locator(".generic-card")).to_contain_text("How should order 88 ship?")
    page.wait_for_url(re.compile("/c/"))
    other = page.context.new_page()
    other.goto(page.url)
    hydrated(other)
    chosen = {"express": page, "overnight": other}
    for speed, tab in chosen.items():
        tab.locator(".generic-card").get_by_role("radio", name=speed).click()
    # Sent one right after the other: neither tab has heard of the other's answer yet.
    for tab in chosen.values():
        tab.evaluate("document.querySelector('.generic-card button[type=submit]').click()")
    ships = re.compile(r"Order 88 ships (express|overnight)\.")
    expect(page.get_by_text(ships)).to_be_visible()
    won = ships.search(page.locator("#transcript").inner_text())
    assert won is not None
    winner = chosen[won.group(1)]
    loser = other if winner is page else page
    for tab in chosen.values():
        answered = tab.locator(".answered-question .answer-line").first
        expect(answered).to_have_text(f"Shipping speed: {won.group(1)}")
    # The later answer found the conversation running on the first, or answered already.
    expect(loser.locator("#agent-notices")).to_contain_text(NOTHING_RAN)
    expect(winner.locator("#agent-notices")).to_have_count(0)
    expect(loser.get_by_text(ships)).to_have_count(1)  # one answer ran, once


class HeldNews:
    """A page's socket, routed: what it sends is counted, and what the server sends it can
    be held back (as a slow or stalled link would), then let through."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.sent: list[str] = []
        self._held: list[tuple[WebSocketRoute, str | bytes]] = []
        self._holding = False
        page.route_web_socket(re.compile(r"/_event"), self._route)

    def _route(self, socket: WebSocketRoute) -> None:
        server = socket.connect_to_server()

        def to_server(message: str | bytes) -> None:
            self.sent.append(message if isinstance(message, str) else message.decode())
            server.send(message)

        def to_page(message: str | bytes) -> None:
            if self._holding:
                self._held.append((socket, message))
            else:
                socket.send(message)

        socket.on_message(to_server)
        server.on_message(to_page)

    def hold(self) -> None:
        self._holding = True

    def release(self) -> None:
        """Lets through what was held, once something is (a reply on its way is waited
        for, up to 5 s)."""
        for _ in range(250):
            if self._held:
                break
            self.page.wait_for_timeout(20)
        assert self._held, "the server's news for the page, held"
        self._holding = False
        for socket, message in self._held:
            socket.send(message)
        self._held.clear()


#: A decision form's Submit (`submit_form` with its draft flag unset), as the socket sends it.
SUBMITTED = '["__draft",""]'


def test_an_answer_on_its_way_says_so_and_takes_no_other(
    page: Page, screenshot_dir: Path
) -> None:
    """On a slow link (the server's replies held back), a Submit says at once that the answer
    is on its way, and a corrected answer after it is not sent: the first one counts, and
    the card turns to it once the reply comes."""
    news = HeldNews(page)
    page.reload()
    hydrated(page)
    ask(page, "ship order 90")
    card = page.locator(".generic-card")
    expect(card).to_contain_text("How should order 90 ship?")
    card.get_by_role("radio", name="express").click()
    page.wait_for_timeout(500)  # its draft kept
    news.hold()
    card.locator("button[type=submit]").click()
    expect(card).to_have_attribute("aria-busy", "true")
    said = card.evaluate("(card) => getComputedStyle(card, '::after').content")
    assert said == '"Sending…"'
    shot(page, screenshot_dir, "answer-sending")
    card.get_by_role("radio", name="overnight").click(force=True)
    card.locator("button[type=submit]").click(force=True)
    page.wait_for_timeout(500)
    assert sum(SUBMITTED in frame for frame in news.sent) == 1
    news.release()
    expect(page.get_by_text("Order 90 ships express.")).to_be_visible()
    expect(page.get_by_text("Order 90 ships overnight.")).to_have_count(0)
    expect(page.locator(".answered-question .answer-line").first).to_have_text(
        "Shipping speed: express"
    )
    assert sum(SUBMITTED in frame for frame in news.sent) == 1


def test_a_refusal_that_comes_while_typing_elsewhere_leaves_the_focus_there(
    page: Page, screenshot_dir: Path
) -> None:
    """On a slow link a refused Submit's errors can arrive while the person already types in
    another field: the field in error shows its error, and the focus, with what is typed
    next, stays where the person went rather than jumping into the field in error."""
    news = HeldNews(page)
    page.reload()
    hydrated(page)
    ask(page, "email ada@example.com about Launch")
    page.locator(".approval-card button.edit").click()
    form = page.locator(".form-edit")
    to, subject = form.locator('input[name="to"]'), form.locator('input[name="subject"]')
    to.fill("not an email")
    # The run's last writes come after its card shows: held, they would be let through in
    # the refusal's place (on a loaded machine), and the refusal come unheld, or late.
    run_ended(page)
    news.hold()
    form.locator("button[type=submit]").click()
    subject.click()
    subject.press("End")
    news.release()
    expect(form.locator('[data-field="to"] .field-error')).to_have_text(
        "Enter a valid email address."
    )
    page.wait_for_timeout(300)  # the refusal's focus would have moved by now (50 ms)
    page.keyboard.type(" day")  # where the focus is
    expect(subject).to_be_focused()
    expect(subject).to_have_value("Launch day")
    expect(to).to_have_value("not an email")
    shot(page, screenshot_dir, "refusal-while-typing")
    # A click on text (the log takes the focus) is no going on: the refusal still takes the
    # focus to the field in error, as it does when the person stays put.
    news.hold()
    form.locator("button[type=submit]").click()
    page.locator(".approval-card dd").first.click()
    news.release()
    expect(page.locator(".approval-card .card-replies")).to_have_text("2")
    expect(to).to_be_focused()
    form.locator("button[type=submit]").click()
    expect(page.locator(".approval-card .card-replies")).to_have_text("3")
    expect(to).to_be_focused()


def test_an_answer_given_on_a_card_already_answered_elsewhere_says_so(
    page: Page, screenshot_dir: Path
) -> None:
    """A tab that has not yet drawn an answer given in another tab (its socket's news held
    back, as on a slow link) sends its own answer to the same question. The server has the
    stored conversation by then: nothing is sent, and the tab says whose answer counted
    rather than dropping the click."""
    ask(page, "ship order 89")
    expect(page.locator(".generic-card")).to_contain_text("How should order 89 ship?")
    page.wait_for_url(re.compile("/c/"))
    late = page.context.new_page()
    news = HeldNews(late)
    late.goto(page.url)
    hydrated(late)
    late.locator(".generic-card").get_by_role("radio", name="overnight").click()
    late.wait_for_timeout(500)  # its draft kept
    news.hold()
    page.locator(".generic-card").get_by_role("radio", name="express").click()
    page.locator(".generic-card button[type=submit]").click()
    expect(page.get_by_text("Order 89 ships express.")).to_be_visible()
    late.locator(".generic-card button[type=submit]").click()
    late.wait_for_timeout(1_500)  # the click reaches the server; its answer is held
    news.release()
    # Said by the tab when its server side had the stored conversation at the click; by the
    # refusal of its run when the other tab's run was not stored yet.
    beaten = "“How should order 89 ship?” was answered before your answer arrived"
    expect(late.locator("#agent-notices")).to_contain_text(
        re.compile(
            f"({re.escape(beaten)}|Already answered), in another tab or by someone else\\. "
            + re.escape(NOTHING_RAN)
        )
    )
    shot(late, screenshot_dir, "answer-beaten")
    expect(late.locator(".answered-question .answer-line").first).to_have_text(
        "Shipping speed: express"
    )
    expect(late.get_by_text("Order 89 ships express.")).to_have_count(1)
    expect(late.get_by_text("Order 89 ships overnight.")).to_have_count(0)


def test_unbound_item_is_visible_and_does_not_block(page: Page, screenshot_dir: Path) -> None:
    ask(page, "deploy")
    unbound = page.locator(".unbound-card")
    expect(unbound).to_contain_text("Paused elsewhere: Change-freeze sign-off is pending")
    expect(unbound.locator(".unbound-note")).to_have_text(
        "Nothing to answer here: it is decided where it is kept, and your answers here go on "
        "without it."
    )
    expect(unbound.locator("button")).to_have_count(0)
    shot(page, screenshot_dir, "deploy-pending")
    page.locator(".approval-card button.approve").click()
    expect(page.get_by_text("Deployed checkout 2.4.1")).to_be_visible()
    shot(page, screenshot_dir, "deploy-approved")


def test_local_time_runs_in_the_browser_without_a_decision(page: Page) -> None:
    ask(page, "what time is it")
    expect(page.get_by_text("where you are")).to_be_visible()
    zone = page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
    expect(page.get_by_text(f"({zone})")).to_be_visible()
    expect(page.locator(".decision")).to_have_count(0)
    # Its output is the call's result, on its card: not also a question someone answered.
    expect(page.locator('.tool-card[data-tool="get_local_time"] .tool-status')).to_have_text("Done")
    expect(page.locator(".answered-question")).to_have_count(0)


LOCATION_CARD = '.tool-card[data-tool="get_location"]'


@contextlib.contextmanager
def page_in(browser: Browser, app_url: str, **options: Any) -> Iterator[Page]:
    """Like the `page` fixture, in a context made with `options` (geolocation, permissions)."""
    with fresh_page(browser, app_url, **options) as pg:
        pg.goto("/")
        hydrated(pg)
        yield pg


def test_location_is_read_in_the_browser_only_after_its_approval(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    berlin = {"latitude": 52.52, "longitude": 13.405, "accuracy": 25}
    with page_in(browser, app_url, geolocation=berlin, permissions=["geolocation"]) as page:
        ask(page, "share my location")
        expect(page.locator(".approval-card")).to_be_visible()
        expect(page.get_by_text("you're at")).to_have_count(0)
        page.locator(".approval-card button.approve").click()
        expect(page.get_by_text("Got it: you're at 52.5200, 13.4050 (±25 m).")).to_be_visible()
        expect(page.locator(f"{LOCATION_CARD} .tool-status")).to_have_text("Done")
        expect(page.locator(".answered-question")).to_have_count(0)
        shot(page, screenshot_dir, "location")


def test_location_refused_by_the_browser_is_an_error_the_model_reads(
    page: Page, screenshot_dir: Path
) -> None:
    page.context.clear_permissions()  # headless Chromium refuses geolocation when not granted
    ask(page, "share my location")
    page.locator(".approval-card button.approve").click()
    refusal = "the browser refused location access"
    expect(page.get_by_text(f"I couldn't read your location: {refusal}.")).to_be_visible()
    expect(page.locator(f"{LOCATION_CARD} .tool-status")).to_have_text("Error")
    expect(page.locator(f"{LOCATION_CARD} .tool-reason")).to_have_text(refusal)
    expect(page.get_by_text("you're at")).to_have_count(0)
    shot(page, screenshot_dir, "location-refused")


def test_location_in_a_browser_without_geolocation(browser: Browser, app_url: str) -> None:
    with page_in(browser, app_url) as page:
        page.context.add_init_script("delete Navigator.prototype.geolocation")
        page.reload()
        page.wait_for_selector('#app-root[data-hydrated="true"]')
        assert page.evaluate("'geolocation' in navigator") is False
        ask(page, "share my location")
        page.locator(".approval-card button.approve").click()
        expect(
            page.get_by_text("I couldn't read your location: this browser has no geolocation.")
        ).to_be_visible()


def test_a_reload_during_a_pause_keeps_the_decision_and_it_still_resolves(
    page: Page, screenshot_dir: Path
) -> None:
    ask(page, "transfer 25 to Ada")
    expect(page.locator(".approval-card")).to_be_visible()
    page.reload()
    page.wait_for_selector('#app-root[data-hydrated="true"]')
    expect(page.locator(".approval-card")).to_be_visible()
    expect(page.locator(".chat-message").filter(has_text="transfer 25 to Ada")).to_have_count(1)
    shot(page, screenshot_dir, "reloaded-pause")
    page.locator(".approval-card button.approve").click()
    expect(page.get_by_text("Receipt id: rcpt-")).to_be_visible()


def test_a_message_is_held_while_decisions_are_pending(page: Page, screenshot_dir: Path) -> None:
    ask(page, "delete project apollo")
    expect(page.locator(".approval-card")).to_be_visible()
    ask(page, "what time is it")
    expect(page.locator("#held-notice")).to_be_visible()
    expect(page.locator("#composer-input")).to_have_value("what time is it")
    shot(page, screenshot_dir, "held")
    page.locator(".approval-card button.approve").click()
    expect(page.get_by_text("Project apollo is deleted.")).to_be_visible()
    # Nothing is pending now: the notice that said so goes, the message stays to send.
    expect(page.locator("#held-notice")).to_have_count(0)
    expect(page.locator("#composer-input")).to_have_value("what time is it")
    run_ended(page)  # the reply shown is not yet the run ended: Enter would be held again
    page.locator("#composer-input").press("Enter")
    expect(page.get_by_text("where you are")).to_be_visible(timeout=20_000)


def test_stop_ends_a_reply_mid_stream(page: Page, screenshot_dir: Path) -> None:
    ask(page, "hello")
    streaming = page.locator(".chat-message.streaming")
    expect(streaming).to_be_visible()
    page.locator("#composer-stop").click()
    expect(page.locator("#run-error")).to_have_text("Stopped.")
    run_ended(page)
    full_help = "deploy** — an approval next to a pause owned by another system"
    expect(page.get_by_text(full_help)).to_have_count(0)
    shot(page, screenshot_dir, "stopped")


def test_enter_while_the_agent_answers_keeps_the_message_and_says_why(
    page: Page, screenshot_dir: Path
) -> None:
    """A message sent while a reply streams does not go, and is not dropped without a word:
    it stays in the box with a notice, which goes when the reply ends; then it sends."""
    ask(page, "hello")
    expect(page.locator(".chat-message.streaming")).to_be_visible()
    page.locator("#composer-input").fill("what time is it")
    # The live region is there, empty, before the notice is put into it (read out then).
    status = page.locator('#composer-status[role="status"]')
    expect(status).to_have_text("")
    page.locator("#composer-input").press("Enter")
    expect(status.locator("#held-notice")).to_have_text(RUNNING_NOTICE)
    expect(page.locator("#composer-input")).to_have_value("what time is it")
    shot(page, screenshot_dir, "enter-while-answering")
    run_ended(page)
    expect(page.locator("#held-notice")).to_have_count(0)
    expect(page.locator("#composer-input")).to_have_value("what time is it")
    sent = page.locator('.chat-message[data-role="user"]').filter(has_text="what time is it")
    expect(sent).to_have_count(0)
    page.locator("#composer-input").press("Enter")
    expect(page.get_by_text("where you are")).to_be_visible(timeout=20_000)
    expect(sent).to_have_count(1)


def test_new_conversation_while_a_reply_streams_stops_it(page: Page) -> None:
    """The reply being written stops, as Stop stops it: the new, empty chat takes a
    message at once rather than waiting on a Stop that belongs to the old one."""
    ask(page, "hello")
    expect(page.locator(".chat-message.streaming")).to_be_visible()
    page.locator("#new-conversation").click()
    expect(page.locator("#composer-stop")).to_have_count(0)
    run_ended(page)
    ask(page, "what time is it")
    expect(page.get_by_text("where you are")).to_be_visible(timeout=20_000)


@pytest.mark.long
def test_bytes_per_streamed_token_do_not_grow_with_the_history(page: Page) -> None:
    """The frames that carry streamed text are as small with a long history as a short one."""
    frames: list[str] = []

    def watch(socket: WebSocket) -> None:
        socket.on("framereceived", lambda payload: frames.append(str(payload)))

    page.on("websocket", watch)
    page.reload()
    page.wait_for_selector('#app-root[data-hydrated="true"]')

    def streamed_frame_sizes() -> list[int]:
        frames.clear()
        replies = page.get_by_text("Try one of these")
        before = replies.count()
        ask(page, "hello")
        # This reply, not the one before it (still on the page): else the wait can end before
        # the run has begun, with no frame recorded.
        expect(replies).to_have_count(before + 1)
        run_ended(page)
        lists = ('"archive_rx_state_"', '"recent_rx_state_"', '"turn_rx_state_"')
        return [
            len(frame)
            for frame in frames
            if "streaming_text" in frame and not any(name in frame for name in lists)
        ]

    short = streamed_frame_sizes()
    for _ in range(5):
        streamed_frame_sizes()
    long = streamed_frame_sizes()
    assert len(short) >= 3 and len(long) >= 3, (short, long)
    # Same reply, five more exchanges of history: a token frame costs the same.
    assert max(long) <= max(short) * 1.1 + 64, (short, long)


def test_a_lost_connection_is_said_in_the_pages_words_and_an_answer_given_then_goes(
    page: Page,
) -> None:
    """Offline, the page says it is reconnecting, in its words (Reflex's toast named the
    websocket's address and covered a phone's screen), above the header, not over its links,
    the message box still on screen; an Approve clicked meanwhile is sent once the connection
    is back, and the notice goes."""
    ask(page, "delete project apollo")
    approve = page.locator(".approval-card button.approve")
    expect(approve).to_be_enabled()
    notice = page.locator("#connection-lost")
    expect(notice).to_have_text("")  # the live region is there, empty, before it is needed
    try:
        page.context.set_offline(True)
        expect(notice).to_have_text(CONNECTION_LOST)
        expect(page.get_by_text("Cannot connect to server")).to_have_count(0)
        # On a phone too: above the header's links, not over them, and the box where it was
        # typed in still on screen (the notice takes its room from the transcript).
        page.set_viewport_size({"width": 390, "height": 844})
        said, inbox = notice.bounding_box(), page.locator("#nav-inbox").bounding_box()
        assert said and inbox and said["y"] + said["height"] <= inbox["y"], (said, inbox)
        box = page.locator("#composer-input").bounding_box()
        assert box and box["y"] + box["height"] <= 844, box
        approve.click()
    finally:
        page.context.set_offline(False)
    expect(page.get_by_text("Project apollo is deleted.")).to_be_visible()
    expect(notice).to_have_text("")


def test_a_streamed_frame_carries_the_words_alone(page: Page) -> None:
    """Once a reply's first words show, each frame of it is its words: no var assigned the
    value it had, nor a computed var reading one (they were ~170 bytes of each frame)."""
    frames: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda f: frames.append(str(f))))
    page.reload()
    page.wait_for_selector('#app-root[data-hydrated="true"]')
    ask(page, "hello")
    expect(page.get_by_text("Try one of these")).to_be_visible()
    run_ended(page)
    changed: list[set[str]] = []
    for frame in frames:
        if not frame.startswith("42/_event,"):  # socket.io's event frames; not its pings
            continue
        event = json.loads(frame.partition(",")[2])
        for delta in event[1].get("delta", {}).values():
            if "streaming_text_rx_state_" in delta and delta["streaming_text_rx_state_"]:
                changed.append(set(delta))
    assert len(changed) >= 4, changed
    assert all(names == {"streaming_text_rx_state_"} for names in changed[1:-1]), changed


def test_answering_a_decision_does_not_send_the_history_again(page: Page) -> None:
    """From the Approve click to the end of the continuation, the page is sent the current
    turn and the small vars, never the earlier transcript (it would grow with the history)."""
    frames: list[str | bytes] = []

    def watch(socket: WebSocket) -> None:
        socket.on("framereceived", lambda payload: frames.append(payload))

    page.on("websocket", watch)
    page.reload()
    page.wait_for_selector('#app-root[data-hydrated="true"]')
    ask(page, "hello")  # the earlier transcript: its words must not come back
    expect(page.get_by_text("Try one of these")).to_be_visible()
    run_ended(page)
    ask(page, "delete project apollo")
    decision = page.locator(".approval-card")
    expect(decision.locator("button.approve")).to_be_enabled()

    frames.clear()
    decision.locator("button.approve").click()
    expect(page.get_by_text("Project apollo is deleted.")).to_be_visible()
    run_ended(page)
    text = "".join(str(frame) for frame in frames)
    assert "delete_project" in text  # the turn itself was updated
    assert "hello" not in text and "Try one of these" not in text
    # The earlier rows are still on the page, untouched.
    expect(page.get_by_text("hello", exact=True)).to_be_visible()


def test_the_demo_person_is_chosen_with_arrows_and_taken_with_enter(page: Page) -> None:
    """With the keyboard on the demo sign-in, the arrows go through the people without
    signing in as each (each did, and the page came back with the focus lost); Enter signs
    in as the one chosen, and the select has the keyboard again. It is a target a finger
    or an unsteady hand finds: 24 px square at least (it was 22 px tall)."""
    switcher = page.locator("#demo-person")
    expect(switcher).to_have_value("rita@example.com")
    size = switcher.bounding_box()
    assert size and size["height"] >= 24 and size["width"] >= 24, size
    emails = switcher.locator("option").evaluate_all("(all) => all.map((o) => o.value)")
    at = emails.index("rita@example.com")
    switcher.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_selector('#app-root[data-hydrated="true"]')
    expect(switcher).to_have_value(emails[at + 2])
    expect(switcher).to_be_focused()
    sign_in_as_demo(page, "rita@example.com")  # a choice made with the mouse: at once


def test_on_a_phone_the_header_and_the_demo_banner_leave_the_chat_the_screen(
    page: Page, screenshot_dir: Path
) -> None:
    """At 390 × 844 the header is two rows (the name; the pages, then who is signed in
    beside the dark-mode button) and the demo banner one line: together they took ~245 px."""
    page.set_viewport_size({"width": 390, "height": 844})
    switcher, toggle = page.locator("#demo-person"), page.get_by_label("Toggle dark mode")
    expect(page.get_by_label("Demo sign-in")).to_have_value("rita@example.com")
    expect(page.get_by_text("Demo accounts: anyone can switch person.")).to_be_visible()
    banner = page.locator("#auth-banner").bounding_box()
    picked, dark = switcher.bounding_box(), toggle.bounding_box()
    assert banner is not None and picked is not None and dark is not None
    assert abs((picked["y"] + picked["height"] / 2) - (dark["y"] + dark["height"] / 2)) < 6
    assert banner["y"] + banner["height"] <= 190, banner
    shot(page, screenshot_dir, "phone-header")
    # A card waiting for someone else: its icon beside the first line of the sentence.
    ask(page, "transfer 5000 to Ada")
    note = page.locator(".waiting").last
    expect(note.locator(".waiting-label")).to_contain_text("Waiting for finance")
    # Rita reads until when it waits (a day, the demo policy's expiry), as a date.
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    expect(note.locator(".waiting-expires")).to_have_text(
        re.compile(rf"^Expires {tomorrow.day} {tomorrow:%b}, \d\d:\d\d UTC, if nobody decides\.$")
    )
    icon, label = note.locator("svg").first.bounding_box(), note.locator(".waiting-label")
    said = label.bounding_box()
    assert icon is not None and said is not None
    assert said["height"] > 2 * icon["height"], "the sentence fits one line: nothing checked"
    assert said["y"] <= icon["y"] + icon["height"] / 2 <= said["y"] + icon["height"] * 2
    assert icon["x"] + icon["width"] <= said["x"]
    shot(page, screenshot_dir, "phone-waiting-note")
    # The pages' links and a card's folds are targets a finger can hit: 24 px at least.
    for target in (page.locator("#nav-inbox"), page.locator(".fold-summary").first):
        box = target.bounding_box()
        assert box is not None and box["height"] >= 24, (target, box)
    note.locator("button.withdraw").click()  # nothing left pending for the other tests
    expect(page.locator(".waiting")).to_have_count(0)
    page.set_viewport_size({"width": 1200, "height": 800})  # the long banner again
    expect(page.get_by_text("Set CHAT_APP_AUTH to password or proxy")).to_be_visible()
    expect(page.get_by_text("Demo accounts: anyone can switch person.")).to_be_hidden()

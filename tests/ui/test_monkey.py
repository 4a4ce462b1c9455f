"""A monkey test (issue 15, point 5): a seeded random walk over the demo, in Chromium.

Each seed gets a fresh browser context on one app copy of this module's own (its data folder,
so its ledger, and its log are read here; words stream every 5 ms, so Stop has something to
stop; a decision expires after `TTL_SECONDS`, so Start over has something to start over).
At every step the walk looks at what the page offers right now (the elements that exist, are
visible and enabled), picks one action among them by weight, does it, and waits only for the
app to settle: the DOM has changed (when the action talks to the server) and stays quiet, and
no run is going on (no Stop, no "Resuming", no streamed bubble, Send enabled unless the
conversation is someone else's), each wait with a short cap. Answering decisions weighs more
than reloading, so the walk gets deep.

The actions: the suggestion chips; typing in the composer, sending a demo phrase or free text
(also while decisions are pending, so it is held, or refused), Stop during a stream; on a
decision Approve, Reject (and their forms), Edit arguments, Cancel, Change, Withdraw; every
field of an open form filled with a valid or an invalid value, radio buttons, checkboxes and
selects, Submit; Approve all / Reject all / Cancel all, Start over, and Retry and Dismiss
whenever the page shows them (the in-process demo agent seldom fails, so they seldom do);
the demo-person switcher (mostly to someone a waiting card names, when nothing on the page
is the current person's to answer), dark mode, the Chat and Audit links, the tool cards'
folded details, reload and back. Odd seeds let the page read a position, even ones do not.

Checked after every step: no JavaScript error on the page (`pageerror`), no "Traceback" or
"ERROR" in the app's log. At the end of each walk, once the app has settled: every decision
card shown is answerable, answered (staged, with Change), refused with its error (and still
answerable), expired (with Start over) or waiting for someone else (or another system); no
tool call awaits an approval without a card to give it; and in the ledger no tool ran twice
(no two `execution` records share a toolCallId), every approval-gated tool that ran was
approved first, and the hash chain verifies.

Every failure says `seed=<n> step=<i> action=<name>`, the last 20 actions and the command
that replays the walk: `MONKEY_SEED=<n> [MONKEY_STEPS=<k>] pytest -m monkey`. The walk draws
one number per step from `random.Random(seed)` and makes that step's choices from it, so a
step's choices do not depend on how many draws earlier steps needed (what the page offers
still depends on timing, so a replay follows the same path as far as the page lets it).

Run it alone with `pytest -m monkey`; it is also `browser`. `MONKEY_DEBUG=1` (with `-s`)
prints every step, what the page offered and how long the step took; each walk prints what
it did and what the ledger holds.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page
from playwright.sync_api import Error as PlaywrightError

from chat_app.demo import build_demo_agent
from chat_app.trust import SQLiteLedger, verify_chain
from chat_app.ui.state import SUGGESTIONS
from tests.ui.conftest import app_copy

pytestmark = [pytest.mark.browser, pytest.mark.monkey, pytest.mark.long]

SEEDS = [int(os.environ["MONKEY_SEED"])] if os.environ.get("MONKEY_SEED") else [1, 2, 3]
STEPS = int(os.environ.get("MONKEY_STEPS", "300"))
TTL_SECONDS = 30

# --- what the page offers ----------------------------------------------------------------

#: Action name -> the CSS selector of the elements it acts on (the page is asked for the
#: visible, enabled ones at every step).
TARGETS: dict[str, str] = {
    "suggestion": "button.suggestion",
    "approve": ".decision button.approve",
    "reject": ".decision button.reject",
    "edit": ".decision button.edit",
    "cancel": ".decision button.cancel",
    "change": ".decision button.change",
    "withdraw": ".decision button.withdraw",
    "submit": ".decision-form button.submit",
    "fill_field": ".decision-form input:not([type=hidden]):not([type=checkbox]), "
    ".decision-form textarea",
    "toggle_choice": ".decision-form button[role=checkbox], .decision-form button[role=radio], "
    ".decision-form input[type=checkbox]",
    "pick_select": ".decision-form button[role=combobox]",
    "approve_all": "#approve-all",
    "reject_all": "#reject-all",
    "cancel_all": "#cancel-all",
    "retry": "#retry",
    "retry_send": "#retry-send",
    "start_over": "button.start-over",
    "stop": "#composer-stop",
    "dismiss": ".agent-notice button",
    "details": ".tool-card .fold-summary",
    "dark_mode": 'button[aria-label="Toggle dark mode"]',
    "switch_person": "#demo-person",
    "nav_audit": "#nav-audit",
    "nav_chat": "#nav-chat",
    "type_draft": "#composer-input",
    "send_phrase": "#composer-input",
    "send_text": "#composer-input",
    "send_and_stop": "#composer-input",
    "clear_draft": "#composer-input",
}

#: How often each action is picked when it is available: answering outweighs leaving.
WEIGHTS: dict[str, float] = {
    "suggestion": 4, "approve": 8, "reject": 5, "edit": 3, "cancel": 3, "change": 2,
    "withdraw": 3,
    "submit": 7, "fill_field": 6, "toggle_choice": 4, "pick_select": 3,
    "approve_all": 3, "reject_all": 2, "cancel_all": 2, "retry": 4, "retry_send": 4,
    "start_over": 4, "stop": 6, "dismiss": 1, "details": 1, "dark_mode": 0.4,
    "switch_person": 0.5, "nav_audit": 0.2, "nav_chat": 3,
    "type_draft": 1.5, "send_phrase": 6, "send_text": 0.8, "send_and_stop": 1.5,
    "clear_draft": 0.5, "reload": 0.3, "back": 0.2,
}  # fmt: skip

#: Actions that answer a decision (or open its forms).
ANSWERS = {"approve", "reject", "edit", "cancel", "change", "withdraw", "submit", "fill_field",
           "toggle_choice", "pick_select", "approve_all", "reject_all", "cancel_all", "retry",
           "start_over"}  # fmt: skip
#: Actions that leave the page (it loads and hydrates again).
NAVIGATIONS = {"reload", "back", "switch_person", "nav_audit", "nav_chat"}
#: The weight of switching person when nothing on the page is this person's to answer.
SWITCH_WHEN_WAITING = 3
#: Who to ask for a card that waits for a role.
DEMO_BY_ROLE = {"finance": ["ada@example.com"], "ops": ["sam@example.com", "olive@example.com"]}

#: Actions that talk to the server: the walk waits for the page to change after them.
SERVER_ACTIONS = set(WEIGHTS) - {"fill_field", "toggle_choice", "pick_select", "details",
                                 "type_draft", "clear_draft", "dark_mode"}  # fmt: skip

FREE_TEXT = [
    "hello",
    "",
    "   ",
    "what can you do?",
    "ünïcødé ✓ — 日本語",
    "**bold** <img src=x onerror=alert(1)> `code`",
    "x" * 600,
    "transfer -5 to Ada",
    "transfer 25 to",
    "ship order",
    "Robert'); DROP TABLE audit;--",
]
TEXT_VALUES = ["Wrong account", "", " ", "Ship it", "x" * 501, "ünïcødé ✓", "<b>bold</b>",
               "a\nb", "Launch day"]  # fmt: skip
EMAIL_VALUES = ["grace@example.com", "ada@example.com", "not an email", "", "a@b", "@example.com"]
NUMBER_VALUES = ["10", "25.5", "0", "-5", "5000", "", "1e3", "0.0001"]

#: Asks the page, in one round trip, which targets are visible and enabled: for each, its
#: index among the selector's matches, its centre and whether a click there reaches it (not
#: scrolled away, not covered); and what the fields are. It also marks the page, so that
#: `SETTLED_JS` can tell a change made after the action.
OFFERED_JS = """
(targets) => {
  const usable = (el) => {
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') return false;
    if (el.hasAttribute('data-disabled')) return false;
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return false;
    const style = getComputedStyle(el);
    return style.visibility !== 'hidden' && style.display !== 'none';
  };
  const offered = {};
  for (const [name, selector] of Object.entries(targets)) {
    const found = [];
    document.querySelectorAll(selector).forEach((el, index) => {
      if (!usable(el)) return;
      const box = el.getBoundingClientRect();
      const x = box.left + box.width / 2, y = box.top + box.height / 2;
      const hit = document.elementFromPoint(x, y);
      found.push({index, x, y, reachable: !!hit && (el === hit || el.contains(hit)),
                  type: el.type || '', name: el.name || ''});
    });
    offered[name] = found;
  }
  // Who decides the cards this person may not answer ("Waiting for finance — …").
  const waiting = [...document.querySelectorAll('.waiting-label')]
    .filter(usable).map((el) => el.textContent);
  // A message sent now would start a run (nothing pending, nobody else's pause either).
  const box = document.querySelector('#composer-input');
  const calm = !!box && !box.placeholder.startsWith('Decisions') && waiting.length === 0;
  const m = window.__monkey;
  if (m) { m.mark = m.changes; m.markAt = performance.now(); }
  return {offered, waiting, calm, path: location.pathname};
}
"""
#: Scrolls a target into view; its centre, or null when it is gone.
REACH_JS = """
([selector, index]) => {
  const el = document.querySelectorAll(selector)[index];
  if (!el) return null;
  el.scrollIntoView({block: 'center', inline: 'center'});
  const box = el.getBoundingClientRect();
  return [box.left + box.width / 2, box.top + box.height / 2];
}
"""

#: Counts the page's changes (so `SETTLED_JS` can tell one after an action).
INSTALL_JS = """
(() => {
  if (window.__monkey) return;
  const m = window.__monkey = {changes: 0, last: performance.now(), mark: 0, markAt: 0};
  new MutationObserver(() => { m.changes += 1; m.last = performance.now(); }).observe(
    document, {subtree: true, childList: true, attributes: true, characterData: true});
})();
"""
#: Settled: hydrated, (the page changed since the mark, or `changeCap` ms went by without a
#: change), quiet for `quiet` ms, and no run going on.
SETTLED_JS = """
([changeCap, quiet]) => {
  const m = window.__monkey;
  if (!m || !document.querySelector('#app-root[data-hydrated="true"]')) return false;
  const now = performance.now();
  if (m.changes === m.mark && now - m.markAt < changeCap) return false;
  if (now - m.last < quiet) return false;
  if (document.querySelector('#composer-stop, #resuming, .chat-message.streaming')) return false;
  const send = document.querySelector('#composer-send');
  return !(send && send.disabled && send.dataset.readOnly !== 'true');
}
"""
#: Every decision card on the page and what it offers.
DECISIONS_JS = """
() => {
  const shown = (el) => !!el && el.getClientRects().length > 0;
  const usable = (el) => shown(el) && !el.disabled;
  const cards = [];
  document.querySelectorAll('.decision').forEach((card) => {
    const q = (s) => card.querySelector(s);
    const kind = card.classList.contains('unbound-card') ? 'unbound'
      : card.classList.contains('generic-card') ? 'generic' : 'approval';
    const answerable = kind === 'generic'
      ? usable(q('button.submit')) && usable(q('button.cancel'))
      : usable(q('button.approve')) && usable(q('button.reject')) && usable(q('button.cancel'));
    cards.push({
      id: card.getAttribute('data-decision') || '', kind,
      text: card.innerText.slice(0, 300),
      expired: shown(q('.expired-badge')) && usable(q('button.start-over')),
      staged: shown(q('.staged')) && usable(q('button.change')),
      waiting: shown(q('.waiting-label')),
      error: shown(q('.decision-error')),
      answerable,
    });
  });
  const orphans = [];
  document.querySelectorAll('.tool-card[data-status="awaiting-approval"]').forEach((card) => {
    if (!card.querySelector('.decision')) orphans.push(card.innerText.slice(0, 200));
  });
  return {cards, orphans, path: location.pathname};
}
"""

# --- the walk -----------------------------------------------------------------------------


@dataclass
class MonkeyApp:
    url: str
    log: Path
    ledger: Path


@pytest.fixture(scope="module")
def monkey_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MonkeyApp]:
    data = tmp_path_factory.mktemp("monkey-data")
    root = tmp_path_factory.mktemp("monkey-app")
    extra = {
        "CHAT_APP_DATA_DIR": str(data),
        "CHAT_APP_DEMO_TOKEN_DELAY_MS": "5",
        "CHAT_APP_INTERRUPT_TTL_SECONDS": str(TTL_SECONDS),
    }
    with app_copy(root, extra) as url:
        yield MonkeyApp(url=url, log=root / "reflex-run.log", ledger=data / "ledger.db")


class WalkFailed(AssertionError):
    pass


@dataclass
class Walk:
    """One seed's walk: the page, where it is, what it did, and what went wrong."""

    seed: int
    page: Page
    app: MonkeyApp
    screenshots: Path
    step: int = 0
    action: str = "(start)"
    history: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    log_offset: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    missed: Counter[str] = field(default_factory=Counter)
    unsettled: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    # --- reporting ---

    def where(self) -> str:
        recent = "\n".join(f"  {line}" for line in self.history[-20:]) or "  (none)"
        replay = f"MONKEY_SEED={self.seed}"
        if STEPS != 300:
            replay += f" MONKEY_STEPS={STEPS}"
        return (
            f"seed={self.seed} step={self.step} action={self.action}\n"
            f"last {min(20, len(self.history))} actions:\n{recent}\n"
            f"replay: {replay} .venv/bin/python -m pytest -m monkey tests/ui/test_monkey.py"
        )

    def fail(self, what: str) -> None:
        try:
            path = self.screenshots / f"monkey-seed{self.seed}-step{self.step}.png"
            self.page.screenshot(path=str(path), full_page=True)
            what += f"\n(screenshot: {path})"
        except PlaywrightError:
            pass
        raise WalkFailed(f"{what}\n{self.where()}")

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.fail(what)

    # --- checks after every step ---

    def check_page_errors(self) -> None:
        self.check(not self.errors, f"JavaScript errors on the page: {self.errors}")

    def check_log(self) -> None:
        with open(self.app.log, "rb") as log:
            log.seek(self.log_offset)
            new = log.read().decode("utf-8", "replace")
            self.log_offset = log.tell()
        bad = [line for line in new.splitlines() if "Traceback" in line or "ERROR" in line]
        if bad:
            self.fail(f"The app's log ({self.app.log}) has an exception at or before this step:"
                      f"\n{new[-4000:]}")  # fmt: skip

    # --- settling ---

    def settle(self, *, changed: bool, cap: float = 8.0, quiet: int = 40) -> bool:
        """Wait until the app settles (see `SETTLED_JS`), at most `cap` seconds."""
        change_cap = 500 if changed else 0
        try:
            self.page.wait_for_function(
                SETTLED_JS, arg=[change_cap, quiet], timeout=cap * 1000, polling=25
            )
            return True
        except PlaywrightError:
            return False

    def hydrated(self) -> None:
        self.page.wait_for_selector('#app-root[data-hydrated="true"]', timeout=20_000)
        self.page.evaluate(INSTALL_JS)

    # --- one step ---

    def offered(self) -> dict[str, Any]:
        try:
            found: dict[str, Any] = self.page.evaluate(OFFERED_JS, TARGETS)
        except PlaywrightError:  # navigating: offer what always works
            return {"offered": {}, "waiting": [], "calm": False, "path": ""}
        return found

    def take_step(self, rng: random.Random) -> None:
        began = time.monotonic()
        found = self.offered()
        offered: dict[str, list[dict[str, Any]]] = found["offered"]
        names = [name for name, targets in offered.items() if targets]
        if found["path"] not in ("/", ""):
            names = [n for n in names if n in ("switch_person", "nav_chat", "dark_mode")]
        else:  # the link to the page it is on does nothing; Stop needs a run to stop
            names = [n for n in names if n != "nav_chat"]
            if not found["calm"]:
                names = [n for n in names if n != "send_and_stop"]
        names += ["reload", "back"]
        weights = {n: WEIGHTS[n] for n in names}
        if found["waiting"] and not set(names) & ANSWERS and "switch_person" in weights:
            weights["switch_person"] = SWITCH_WHEN_WAITING  # nothing here is ours to answer
        name = rng.choices(names, weights=[weights[n] for n in names])[0]
        self.action = name
        target = Target(name, rng.choice(offered[name])) if offered.get(name) else None
        detail = ACTIONS[name](self, rng, target, found)
        self.history.append(f"{self.step}: {name}{f' {detail}' if detail else ''}")
        if os.environ.get("MONKEY_DEBUG"):
            print(self.history[-1], "| offered:", sorted(names), found["waiting"])
        self.counts[name] += 1
        if name in NAVIGATIONS:
            self.hydrated()
        if not self.settle(changed=name in SERVER_ACTIONS):
            self.unsettled += 1
        took = time.monotonic() - began
        self.seconds[name] = self.seconds.get(name, 0.0) + took
        if os.environ.get("MONKEY_DEBUG"):
            print(f"   {took:.2f}s")

    def click(self, target: Target | None) -> str:
        """A mouse click at the target's centre (scrolled into view first when it is not
        reachable there); "(missed)" when it went away."""
        assert target is not None
        x, y = target.x, target.y
        try:
            if not target.reachable:
                centre = self.page.evaluate(REACH_JS, [TARGETS[target.action], target.index])
                if centre is None:
                    self.missed[target.action] += 1
                    return "(missed: gone)"
                x, y = centre
            self.page.mouse.click(x, y)
        except PlaywrightError:
            self.missed[target.action] += 1
            return "(missed)"
        return ""

    def locator(self, target: Target | None) -> Locator:
        assert target is not None
        return self.page.locator(TARGETS[target.action]).nth(target.index)


@dataclass(frozen=True)
class Target:
    """One element an action was given: where it was when the page was asked."""

    action: str
    found: dict[str, Any]

    @property
    def index(self) -> int:
        return int(self.found["index"])

    @property
    def x(self) -> float:
        return float(self.found["x"])

    @property
    def y(self) -> float:
        return float(self.found["y"])

    @property
    def reachable(self) -> bool:
        return bool(self.found["reachable"])


Action = Callable[[Walk, random.Random, Target | None, dict[str, Any]], str]


def _click(walk: Walk, rng: random.Random, target: Target | None, found: dict[str, Any]) -> str:
    return walk.click(target)


def _send(walk: Walk, text: str, *, enter: bool) -> None:
    walk.page.locator("#composer-input").fill(text, timeout=2_000)
    if enter:
        walk.page.keyboard.press("Enter")
    else:
        # As a person clicks it, whether it reads as off (a continuation: the page says why
        # nothing went) or is (someone else's conversation): Playwright would wait for it.
        walk.page.locator("#composer-send").click(force=True, timeout=2_000)


def _send_phrase(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    text = rng.choice(SUGGESTIONS)
    try:
        _send(walk, text, enter=rng.random() < 0.8)
    except PlaywrightError:
        walk.missed["send_phrase"] += 1
        return f"{text!r} (missed)"
    return repr(text)


def _send_text(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    text = rng.choice(FREE_TEXT)
    try:
        _send(walk, text, enter=True)
    except PlaywrightError:
        walk.missed["send_text"] += 1
        return f"{text[:40]!r} (missed)"
    return repr(text[:40])


def _send_and_stop(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    """A reply long enough to stop (the demo's help), stopped as soon as Stop shows."""
    try:
        _send(walk, "hello", enter=True)
        # Stop, or why there is none: the message is held or refused, or the conversation is
        # someone else's (nothing goes).
        walk.page.wait_for_selector(
            '#composer-stop, #held-notice, #run-error, #composer-send[data-read-only="true"]',
            timeout=2_000,
        )
        stop = walk.page.locator("#composer-stop")
        if stop.count():
            stop.click(timeout=500)
            return ""
    except PlaywrightError:
        pass
    walk.missed["send_and_stop"] += 1
    return "(no stream to stop)"


def _type_draft(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    text = rng.choice([*FREE_TEXT, *SUGGESTIONS])
    try:
        walk.page.locator("#composer-input").fill(text, timeout=2_000)
    except PlaywrightError:
        walk.missed["type_draft"] += 1
    return repr(text[:40])


def _clear_draft(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    try:
        walk.page.locator("#composer-input").fill("", timeout=2_000)
    except PlaywrightError:
        walk.missed["clear_draft"] += 1
    return ""


def _fill_field(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    """A valid or an invalid value, by the field's type and name."""
    assert target is not None
    kind, name = target.found["type"], target.found["name"]
    if kind == "number" or name == "amount":
        value = rng.choice(NUMBER_VALUES)
    elif kind == "email" or name == "to":
        value = rng.choice(EMAIL_VALUES)
    else:
        value = rng.choice(TEXT_VALUES)
    try:
        walk.locator(target).fill(value, timeout=2_000)
    except PlaywrightError:
        walk.missed["fill_field"] += 1
        return f"{name}={value[:30]!r} (missed)"
    return f"{name}={value[:30]!r}"


def _pick_select(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    if walk.click(target):
        return "(missed)"
    options = walk.page.locator("[role=option]")
    try:
        options.first.wait_for(timeout=2_000)
        options.nth(rng.randrange(options.count())).click(timeout=2_000)
    except PlaywrightError:
        walk.missed["pick_select"] += 1
        walk.page.keyboard.press("Escape")
        return "(missed)"
    return ""


def _switch_person(
    walk: Walk, rng: random.Random, target: Target | None, found: dict[str, Any]
) -> str:
    """Someone else, mostly the person a waiting card names (else anyone)."""
    menu = walk.page.locator("#demo-person")
    try:
        current = menu.input_value(timeout=2_000)
        values = menu.locator("option").evaluate_all("options => options.map(o => o.value)")
        emails = [str(e) for e in values if e != current]
        wanted = [e for e in _deciders(found["waiting"], emails) if e != current]
        email = rng.choice(wanted if wanted and rng.random() < 0.75 else emails)
        with walk.page.expect_navigation(timeout=15_000):
            menu.select_option(email, timeout=2_000)
    except PlaywrightError:
        walk.missed["switch_person"] += 1
        return "(missed)"
    return email


def _deciders(waiting: list[str], people: list[str]) -> list[str]:
    """The demo people the waiting cards name, by email or by role."""
    named = [person for text in waiting for person in people if person in text]
    return named + [
        person
        for text in waiting
        for role, members in DEMO_BY_ROLE.items()
        if role in text
        for person in members
    ]


def _reload(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    walk.page.reload(wait_until="commit", timeout=20_000)
    return ""


def _back(walk: Walk, rng: random.Random, target: Target | None, found: Any) -> str:
    try:
        walk.page.go_back(wait_until="commit", timeout=10_000)
    except PlaywrightError:
        pass
    if not walk.page.url.startswith(walk.app.url):  # back out of the app: come back in
        walk.page.goto("/", wait_until="commit")
        return "(left the app; opened it again)"
    return walk.page.url.removeprefix(walk.app.url) or "/"


ACTIONS: dict[str, Action] = {
    **{name: _click for name in TARGETS},
    "send_phrase": _send_phrase,
    "send_text": _send_text,
    "send_and_stop": _send_and_stop,
    "type_draft": _type_draft,
    "clear_draft": _clear_draft,
    "fill_field": _fill_field,
    "pick_select": _pick_select,
    "switch_person": _switch_person,
    "reload": _reload,
    "back": _back,
}


# --- the checks at the end ----------------------------------------------------------------


def check_decisions(walk: Walk) -> None:
    """Every decision shown can be answered, is answered, refused with its error, expired,
    or someone else's; no tool call awaits an approval without a card."""
    if not walk.settle(changed=False, cap=30.0, quiet=300):
        walk.fail("The app did not settle within 30 s after the walk: a run never ended.")
    if walk.page.evaluate("location.pathname") != "/":
        walk.page.goto("/")
        walk.hydrated()
        walk.settle(changed=False, cap=10.0, quiet=300)
    shown = walk.page.evaluate(DECISIONS_JS)
    stuck = [
        card
        for card in shown["cards"]
        if card["kind"] != "unbound"
        and not (card["answerable"] or card["staged"] or card["expired"] or card["waiting"])
    ]
    walk.check(not stuck, f"Decisions stuck (no way to answer, not answered, refused, "
                          f"expired or someone else's): {stuck}")  # fmt: skip
    walk.check(
        not shown["orphans"],
        f"Tool calls await approval with no decision card to give it: {shown['orphans']}",
    )
    states = ("staged", "expired", "waiting", "error", "answerable")
    walk.history.append(
        "end: decisions "
        + ", ".join(f"{c['kind']}:{next((s for s in states if c[s]), '-')}" for c in shown["cards"])
    )


def check_ledger(walk: Walk) -> dict[str, int]:
    """No tool ran twice; every gated tool that ran was approved first; the chain holds."""
    ledger = SQLiteLedger(walk.app.ledger)
    try:
        records = ledger.records()
    finally:
        ledger.close()
    chain = verify_chain(records)
    walk.check(chain.ok, f"The ledger's hash chain is broken at {chain.broken_at}: {chain.reason}")
    runs = Counter(r.data.get("toolCallId") for r in records if r.kind == "execution")
    twice = {call: n for call, n in runs.items() if n > 1}
    walk.check(not twice, f"Tools ran more than once (toolCallId: runs): {twice}")
    # Server tools that run only once someone (or a rule) approved them.
    gated = {
        tool["name"]
        for tool in build_demo_agent().tool_manifest()
        if tool["needsApproval"] and tool["runsOn"] == "server"
    }
    approved: set[str] = set()
    for record in records:
        data = record.data
        if record.kind == "decision" and data.get("decision") == "approved":
            approved.add(str(data.get("toolCallId")))
        if record.kind == "execution" and data.get("toolName") in gated:
            walk.check(
                str(data.get("toolCallId")) in approved,
                f"{data.get('toolName')} ran without an approval before it: {data}",
            )
    refusals = Counter(str(r.data.get("reason"))[:60] for r in records if r.kind == "refusal")
    return {**Counter(r.kind for r in records), **{f"refused: {k}": n for k, n in refusals.items()}}


# --- the test -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_monkey_walk(
    seed: int, browser: Browser, monkey_app: MonkeyApp, screenshot_dir: Path
) -> None:
    # Odd seeds let the page read a position; even ones leave the browser to refuse it.
    geo: dict[str, Any] = (
        {"geolocation": {"latitude": 52.52, "longitude": 13.405, "accuracy": 25},
         "permissions": ["geolocation"]} if seed % 2 else {}
    )  # fmt: skip
    context = browser.new_context(
        base_url=monkey_app.url, viewport={"width": 1200, "height": 800}, **geo
    )
    context.set_default_timeout(10_000)
    context.add_init_script(INSTALL_JS)
    page = context.new_page()
    walk = Walk(seed=seed, page=page, app=monkey_app, screenshots=screenshot_dir)
    walk.log_offset = monkey_app.log.stat().st_size
    page.on("pageerror", lambda error: walk.errors.append(f"step {walk.step}: {error}"))
    started = time.monotonic()
    rng = random.Random(seed)
    try:
        page.goto("/")
        walk.hydrated()
        for walk.step in range(1, STEPS + 1):
            step_rng = random.Random(rng.getrandbits(64))
            try:
                walk.take_step(step_rng)
            except PlaywrightError as error:  # the walk itself could not go on
                walk.fail(f"The page stopped answering: {error}")
            walk.check_page_errors()
            walk.check_log()
        walk.step, walk.action = STEPS, f"(end, after {walk.action})"
        check_decisions(walk)
        walk.check_page_errors()
        walk.check_log()
        kinds = check_ledger(walk)
    finally:
        context.close()
    took = time.monotonic() - started
    print(  # what the walk covered (pytest -s shows it)
        f"\n[monkey] seed={seed}: {STEPS} steps in {took:.1f}s; ledger {dict(kinds)}; "
        f"unsettled {walk.unsettled}; missed {dict(walk.missed)}\n"
        f"[monkey] actions {dict(sorted(walk.counts.items()))}\n"
        f"[monkey] seconds { {k: round(v, 1) for k, v in sorted(walk.seconds.items())} }\n"
        f"[monkey] {walk.history[-1]}"
    )

"""No event handler lets an exception escape to Reflex's log alone (`chat_app.ui.guard`).

Every `@rx.event` in `chat_app/ui/*.py` is wrapped by `guarded` (foreground) or `guarded_task`
(background), read with `ast` so a new handler cannot forget it; and the wrappers, on plain
objects, log the exception with its traceback, show it through the state's
`_show_failure`, or return a toast when the state has no place for it.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chat_app.ui.guard import failure_message, guarded, guarded_task
from tests.ui.app_server import run_on_own_loop

UI = Path(__file__).resolve().parents[2] / "chat_app" / "ui"


def _is_rx_event(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "event"


def _handlers() -> list[tuple[str, str, list[str]]]:
    """Each `@rx.event` function of `chat_app/ui/*.py`: file, name, decorators under it."""
    found = []
    for path in sorted(UI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            decorators = node.decorator_list
            at = next((i for i, d in enumerate(decorators) if _is_rx_event(d)), None)
            if at is not None:
                under = [ast.unparse(d) for d in decorators[at + 1 :]]
                found.append((path.name, node.name, under))
    return found


def test_every_event_handler_of_the_ui_is_guarded() -> None:
    handlers = _handlers()
    assert len(handlers) > 20  # the chat's, the audit page's, sign-in's, the header's
    unguarded = [
        f"{file}: {name}"
        for file, name, under in handlers
        if under[:1] not in (["guarded"], ["guarded_task"])
    ]
    assert not unguarded, f"Wrap these in @guarded / @guarded_task under @rx.event: {unguarded}"


class Page:
    """Stands for a state: `_show_failure` records, `async with` is the background lock."""

    def __init__(self, shows: bool) -> None:
        self.shows = shows
        self.shown: list[str] = []
        self.locked = 0

    def _show_failure(self, message: str) -> bool:
        self.shown.append(message)
        return self.shows

    async def __aenter__(self) -> Page:
        self.locked += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def boom(self: Page, word: str) -> str:
    if word == "fail":
        raise RuntimeError("the disk is full")
    return word


async def boom_async(self: Page, word: str) -> str:
    return boom(self, word)


async def boom_steps(self: Page, word: str) -> AsyncIterator[str]:
    yield "first"
    yield boom(self, word)


def test_a_foreground_handler_s_exception_is_logged_and_shown_by_the_state(
    caplog: pytest.LogCaptureFixture,
) -> None:
    page = Page(shows=True)
    handler = guarded(boom)
    assert handler(page, "ok") == "ok"
    with caplog.at_level(logging.ERROR, logger="chat_app.ui"):
        assert handler(page, "fail") is None  # shown on the page: no toast
    assert page.shown == [failure_message(RuntimeError("the disk is full"))]
    assert page.shown[0].startswith("Something went wrong in the app (the disk is full).")
    (record,) = caplog.records
    assert record.exc_info is not None and "boom" in record.getMessage()


def test_a_state_without_a_place_for_it_gets_a_toast() -> None:
    assert guarded(boom)(Page(shows=False), "fail") is not None


def test_async_and_generator_handlers_keep_their_kind() -> None:
    # On a loop of its own: in a session with browser tests, Playwright owns this thread's.
    async def steps() -> None:
        page = Page(shows=True)
        assert await guarded(boom_async)(page, "ok") == "ok"
        assert await guarded(boom_async)(page, "fail") is None
        taken: list[Any] = [step async for step in guarded(boom_steps)(page, "fail")]
        assert taken == ["first", None] and len(page.shown) == 2

    run_on_own_loop(steps())


def test_a_background_handler_shows_its_failure_under_the_lock() -> None:
    async def steps() -> None:
        page = Page(shows=False)
        taken = [step async for step in guarded_task(boom_steps)(page, "fail")]
        assert taken[0] == "first" and taken[1] is not None  # the toast
        assert page.locked == 1 and len(page.shown) == 1

    run_on_own_loop(steps())

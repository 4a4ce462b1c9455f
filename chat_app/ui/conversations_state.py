"""The Conversations page's state: the signed-in person's stored conversations, newest
first, kept live while the tab is open; and how the desk's lists say when things happened.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import reflex as rx

from chat_app.desk import (
    ConversationSummary,
    DeskError,
    inbox_topic,
    owner_topic,
    thread_topic,
)
from chat_app.trust import Identity

from . import session as sessions
from .answered import UNTITLED, how_it_ended, mid_sentence
from .components.conversation_list import ConversationRow
from .guard import guarded, guarded_task
from .identity_state import IdentityState

#: The page's address.
ROUTE = "/conversations"
#: A conversation's address: `/c/<thread id>` (as the chat page reads it).
CONVERSATION_PREFIX = "/c/"
#: How long a page's live loop waits for a notice before reading the desk anyway (which also
#: keeps "2 min ago" current).
WATCH_SECONDS = 10.0
#: How many conversations the page lists.
LIMIT = 100
NO_DESK = "This app keeps no conversations: it runs without the approval desk."

#: A finished conversation is gray, not green: "Done" says its run ended, not that what was
#: asked for was granted (its last decision, beside it, may read "Rejected by Ada").
_STATUS_COLORS = {"running": "blue", "waiting": "amber", "done": "gray", "failed": "red"}


# --- when things happened, in words --------------------------------------------------------


def how_long(seconds: float) -> str:
    """A duration, short and rounded down: "<1 min", "5 min", "3 h", "2 d"."""
    if seconds < 60:
        return "<1 min"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h"
    return f"{hours // 24} d"


def ago(moment: datetime, now: datetime) -> str:
    """When `moment` was, from `now`: "just now", "2 min ago", "3 h ago"."""
    seconds = (now - moment).total_seconds()
    return "just now" if seconds < 60 else f"{how_long(seconds)} ago"


#: What `expiry` says of a time already past.
EXPIRED = "already passed"


def expiry(moment: datetime | None, now: datetime) -> str:
    """When something expires, after the label "Expires": "in 23 h", `EXPIRED`, or
    "never"."""
    if moment is None:
        return "never"
    seconds = (moment - now).total_seconds()
    return EXPIRED if seconds <= 0 else f"in {how_long(seconds)}"


def in_words(moment: datetime | None) -> str:
    """ "2025-06-01 14:03:22 UTC" ("" for none)."""
    return "" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def iso(moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


#: The chat page's own paths besides a stored conversation's (`CONVERSATION_PREFIX`).
CHAT_PATHS = ("/",)


def address(thread_id: str) -> str:
    """A conversation's own address."""
    return CONVERSATION_PREFIX + quote(thread_id, safe="")


def status_label(summary: ConversationSummary, viewer_email: str = "") -> str:
    """What a conversation is doing, in words: "Running", "Waiting for finance", "Waiting for
    you" (to whoever started it, when it is theirs to decide), "Done", "Failed"."""
    if summary.status == "waiting":
        if summary.waits_for_owner and viewer_email and viewer_email == summary.owner_email:
            return "Waiting for you"
        return summary.waiting_for or "Waiting for a decision"
    return summary.status.capitalize()


def last_decision(summary: ConversationSummary, viewer_email: str) -> str:
    """How a finished conversation's latest decision ended: "transfer: Rejected by Ada",
    "transfer: Expired"; for a pause of several, how each did, alike ones counted together:
    "pay_invoice ×3: 2 approved by you, 1 rejected by Ada" ("" while it runs or waits: its
    status says what matters then)."""
    item = summary.last_decision
    if item is None or summary.status not in ("done", "failed"):
        return ""
    pause = summary.last_pause if len(summary.last_pause) > 1 else (item,)
    names = list(dict.fromkeys(each.name for each in pause))
    name = f"{names[0]} ×{len(pause)}" if len(names) == 1 and len(pause) > 1 else ", ".join(names)
    if len(names) > 2:  # one line in the list: the first two, and how many more
        name = f"{', '.join(names[:2])} +{len(names) - 2}"
    ends = Counter(how_it_ended(each, viewer_email) for each in pause)
    if len(ends) == 1:
        ended = next(iter(ends))
    else:
        ended = ", ".join(f"{count} {mid_sentence(end)}" for end, count in ends.items())
    # A question's name is its sentence: "How should order 42 ship? Answered by you".
    joined = " " if name.endswith(("?", ".", "!", ":")) else ": "
    return f"{name}{joined}{ended}"


def conversation_row(
    summary: ConversationSummary, now: datetime, viewer_email: str = ""
) -> ConversationRow:
    error = ""
    if summary.status == "failed":
        error = summary.error or "The run failed."
    return ConversationRow(
        thread_id=summary.thread_id,
        href=address(summary.thread_id),
        title=summary.title or UNTITLED,
        status=summary.status,
        status_label=status_label(summary, viewer_email),
        status_color=_STATUS_COLORS.get(summary.status, "gray"),
        error=error,
        activity=ago(summary.updated_at, now),
        activity_iso=iso(summary.updated_at),
        activity_title=f"Last activity {in_words(summary.updated_at)}",
        last_decision=last_decision(summary, viewer_email),
    )


def on_page(state: rx.State, route: str) -> bool:
    """Whether the tab still shows the page at `route` (its live loop ends when it left)."""
    return str(state.router.url.path or "").rstrip("/") == route


async def follow_page(
    state: Any,
    route: str,
    topics: Callable[[], set[str]],
    reload: Callable[[], Awaitable[None]],
) -> AsyncIterator[None]:
    """A page's live loop, for its background handler: while the tab is connected and shows
    `route`, wait for a desk notice on `topics()` (or `WATCH_SECONDS`), then `reload` under
    the state's lock; yields after each reload so Reflex sends the changes.

    One loop per tab and page (`start_watching`, keyed `<token>:<route>`, apart from the
    chat's own). Reflex cancels it when the tab loads another page (a newer page load
    supersedes the one that started it); should it not, the loop ends itself once it sees
    the tab elsewhere, letting go of its key under the state's lock: a `load` that brings
    the tab back runs before that (and the old loop goes on) or after it (and starts a new
    one), never in between.
    """
    desk = sessions.desk()
    token = state.router.session.client_token
    key = f"{token}:{route}"
    if desk is None or not sessions.start_watching(key):
        return
    held = True
    mark: tuple[int, ...] | None = None  # the page was read at load: wait for what follows
    try:
        while sessions.connected(token):
            async with state:
                if not on_page(state, route):
                    sessions.stop_watching(key)
                    held = False
                    return
                wanted = topics()
            await desk.fanout.wait(wanted, WATCH_SECONDS, since=mark)
            mark = desk.fanout.mark(wanted)  # before reading: nothing after it is missed
            async with state:
                if not on_page(state, route):
                    sessions.stop_watching(key)
                    held = False
                    return
                await reload()
            yield None
    finally:
        if held:
            sessions.stop_watching(key)


# --- the state ------------------------------------------------------------------------------


class ConversationsState(IdentityState):
    """The signed-in person's conversations, newest first."""

    rows: list[ConversationRow] = []
    #: The list has been read once (until then the page shows neither rows nor "none yet").
    loaded: bool = False
    #: Why the list is not shown ("" when it is).
    problem: str = ""

    def _show_failure(self, message: str) -> bool:
        self.problem = message
        return True

    async def _reload(self, viewer: Identity | None) -> None:
        desk = sessions.desk()
        if desk is None:
            self.problem, self.rows = NO_DESK, []
        elif viewer is None:
            self.problem, self.rows = self._nobody_here("Sign in to see your conversations."), []
            self.inbox_count = 0
        else:
            try:
                found = await desk.conversations(viewer)
            except DeskError as error:  # the list keeps what it showed; the page says why
                self.problem = error.message
            else:
                now = datetime.now(UTC)
                rows = [
                    conversation_row(summary, now, viewer.email) for summary in found[:LIMIT]
                ]
                if rows != self.rows:
                    self.rows = rows
                self.problem = ""
            await self._count_inbox(viewer)
        self.loaded = True

    @rx.event
    @guarded
    async def load(self) -> Any:
        viewer = self._viewer()
        redirect = self._sign_in_first(ROUTE)
        if redirect is not None:
            return redirect
        await self._reload(viewer)
        return ConversationsState.watch

    @rx.event(background=True)
    @guarded_task
    async def watch(self) -> AsyncIterator[Any]:
        """While the tab shows the page: read the list again when a conversation moves on, one
        of the viewer's begins, or a decision appears or leaves (the desk's notices, from any
        worker), and every `WATCH_SECONDS` (which keeps "2 min ago" current)."""

        def topics() -> set[str]:
            mine = {owner_topic(self.viewer_email)} if self.viewer_email else set()
            return {inbox_topic(), *mine} | {thread_topic(row.thread_id) for row in self.rows}

        async def reload() -> None:
            await self._reload(self._viewer())

        async for _ in follow_page(self, ROUTE, topics, reload):
            yield

"""The Inbox page's state: every pending decision the signed-in person may make (every one,
for an admin who asks), filtered by tool and requester, kept live while the tab is open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

import reflex as rx

from chat_app.desk import (
    ADMIN_ROLE,
    INBOX_COUNT_CAP,
    DeskError,
    InboxItem,
    InboxQuery,
    inbox_topic,
)
from chat_app.trust import Identity

from . import session as sessions
from .answered import mid_sentence
from .components.inbox_list import InboxRow
from .conversations_state import (
    EXPIRED,
    address,
    expiry,
    follow_page,
    how_long,
    in_words,
    iso,
)
from .guard import guarded, guarded_task
from .identity_state import IdentityState, replace_address

#: The page's address.
ROUTE = "/inbox"
#: How many decisions the page lists, and how many it reads to offer the filters' choices.
LIMIT = 100
NO_DESK = "This app has no inbox: it runs without the approval desk."


async def _nothing() -> tuple[list[InboxItem], int]:
    return [], 0


def _waiting_for(item: InboxItem, viewer: Identity, *, yours: bool, approved: bool) -> str:
    """Who decides, as the desk filed it ("Waiting for finance"), said to the person reading:
    an item no rule governs is decided by whoever asked, who reads that it waits for them; an
    approver reads that they are one of those it waits for, until they have approved."""
    asked = bool(viewer.email) and viewer.email.lower() == item.requester_email.lower()
    if item.rule is None:
        return "Waiting for you" if asked else item.waiting_for
    waiting = item.waiting_now
    if not yours or approved:
        return waiting
    # "You" first: after "escalated to admin", it read as if the escalation let them decide.
    # (Under its "Decides" label, "You may decide: …" said it twice.)
    return f"You — {mid_sentence(waiting)}"


def inbox_row(item: InboxItem, viewer: Identity, now: datetime, *, yours: bool) -> InboxRow:
    expires = expiry(item.expires_at, now)
    approved = bool(viewer.email) and any(v.email == viewer.email for v in item.approvals)
    return InboxRow(
        decision_id=item.decision_id,
        thread_id=item.thread_id,
        href=address(item.thread_id),
        kind=item.kind,
        name=item.name,
        summary=item.summary,
        requester=item.requester_name or item.requester_email or "someone",
        requester_email=item.requester_email,
        rule=item.rule or "",
        waiting_for=_waiting_for(item, viewer, yours=yours, approved=approved),
        progress=item.progress_for(viewer.email),
        you_approved=approved,
        yours=yours,
        waiting_since=how_long(max(0.0, (now - item.created_at).total_seconds())),
        created_iso=iso(item.created_at),
        created_title=f"Asked {in_words(item.created_at)}",
        expires=expires,
        expires_title=(
            f"Expires {in_words(item.expires_at)}" if item.expires_at is not None else ""
        ),
        expired=expires == EXPIRED,
        escalation=item.escalation,
        reminded=reminded(item.reminded_at),
        reminded_iso=iso(item.reminded_at),
        reminded_title=f"Reminder sent {in_words(item.reminded_at)}" if item.reminded_at else "",
    )


def reminded(moment: datetime | None) -> str:
    """When the approvers were reminded, after the label "Reminded": "10:42 UTC" ("" when
    they were not)."""
    return "" if moment is None else f"{moment.astimezone(UTC):%H:%M} UTC"


def tool_choices(names: Iterable[str], chosen: str) -> list[str]:
    """The tools (and questions) present, in name order, with the one chosen kept."""
    return sorted(set(names) | ({chosen} if chosen else set()))


def requester_choices(people: Iterable[tuple[str, str]], chosen: str) -> list[list[str]]:
    """Who asked (email, name), as [email, label] in label order, with the one chosen kept.
    Requests made with sign-in off name nobody (no email): "" is the filter's "everyone",
    so they are not a choice of their own."""
    names: dict[str, str] = {}
    for email, name in people:
        if email:
            names.setdefault(email, name)
    if chosen:
        names.setdefault(chosen, "")
    return sorted(
        (
            [email, f"{name} ({email})" if name and name != email else email]
            for email, name in names.items()
        ),
        key=lambda pair: pair[1].lower(),
    )


class InboxState(IdentityState):
    """The pending decisions, their filters, and the admin's "all pending" switch."""

    rows: list[InboxRow] = []
    #: How many decisions match the filters in all (the list shows at most `shown_limit`).
    total: int = 0
    #: How many the list shows at most: `LIMIT`, and `LIMIT` more at each Show more, up to
    #: the count's cap (past it, the filters narrow the list). Back to `LIMIT` when the
    #: filters change.
    shown_limit: int = LIMIT
    #: The filters: a tool's (or question's) name, a requester's email; "" for all.
    tool: str = ""
    requester: str = ""
    #: An admin asked for every pending decision, not only those they may make.
    everyone: bool = False
    is_admin: bool = False
    #: The filters' choices: from the decisions pending now (before filtering).
    tools: list[str] = []
    requesters: list[list[str]] = []
    loaded: bool = False
    #: Why the inbox is not shown ("" when it is).
    problem: str = ""

    @rx.var
    def filtered(self) -> bool:
        return self.tool != "" or self.requester != ""

    @rx.var
    def count_label(self) -> str:
        """ "3 pending", "Showing the newest 100 of 120 pending", or past the count's cap
        "Showing the newest 100 of more than 500 pending"."""
        total = f"more than {INBOX_COUNT_CAP}" if self.total > INBOX_COUNT_CAP else self.total
        if len(self.rows) < self.total:
            return f"Showing the newest {len(self.rows)} of {total} pending"
        return f"{total} pending"

    @rx.var
    def more_label(self) -> str:
        """ "Show 7 more" under a list cut short, the oldest being the ones left out; ""
        when it shows them all, or as many as it may (`INBOX_COUNT_CAP`)."""
        left = self.total - len(self.rows)
        if left <= 0 or self.shown_limit >= INBOX_COUNT_CAP:
            return ""
        return f"Show {min(left, LIMIT, INBOX_COUNT_CAP - self.shown_limit)} more"

    def _show_failure(self, message: str) -> bool:
        self.problem = message
        return True

    async def _reload(self, viewer: Identity | None) -> None:
        desk = sessions.desk()
        self.loaded = True
        if desk is None or viewer is None:
            # The banner says why nobody is signed in (`auth_error`); the list, what it needs.
            self.problem = (
                NO_DESK if desk is None else self._nobody_here("Sign in to see what waits for you.")
            )
            self.rows, self.total, self.tools, self.requesters = [], 0, [], []
            self.is_admin = self.everyone = False
            self.inbox_count = 0
            return
        self.is_admin = ADMIN_ROLE in viewer.roles
        self.everyone = self.everyone and self.is_admin
        tool, requester = self.tool or None, self.requester or None
        # The list, the person's own count (the header's badge) when the list is not just
        # theirs, and the filters' choices are independent reads: at once, the page waits
        # for the slowest instead of the sum (PostgreSQL at 10,000 pending: p50 51 -> 32 ms).
        own = self.everyone or tool or requester
        try:
            (items, total), (_, own_total), (tools, people) = await asyncio.gather(
                desk.inbox(
                    viewer, tool=tool, requester=requester, everyone=self.everyone,
                    limit=self.shown_limit,
                ),
                desk.inbox(viewer, limit=0) if own else _nothing(),
                desk.inbox_choices(viewer, everyone=self.everyone),
            )
            mine_total = own_total if own else total
        except DeskError as error:  # the list keeps what it showed; the page says why
            self.problem = error.message
            return
        self.problem = ""
        self.inbox_count = mine_total
        now = datetime.now(UTC)
        rows = [
            inbox_row(item, viewer, now, yours=not self.everyone or desk.may_decide(item, viewer))
            for item in items
        ]
        if rows != self.rows:
            self.rows = rows
        self.total = total
        self.tools = tool_choices(tools, self.tool)
        self.requesters = requester_choices(people, self.requester)

    def _filter(self, *, tool: str, requester: str, everyone: bool) -> None:
        tool, requester = tool[:200], requester[:320].lower()
        if (tool, requester, everyone) != (self.tool, self.requester, self.everyone):
            self.shown_limit = LIMIT  # another list: its first page
        self.tool, self.requester, self.everyone = tool, requester, everyone

    def _address(self) -> str:
        query = InboxQuery(self.tool, self.requester, self.everyone).query_string()
        return f"{ROUTE}?{query}" if query else ROUTE

    def _shown(self) -> Any:
        """The address says what the list is filtered by, as `GET /api/inbox` is asked it:
        a reload, a new tab or a link sent to someone shows the same list."""
        return replace_address(self._address(), on=(ROUTE,))

    @rx.event
    @guarded
    async def load(self) -> Any:
        """The filters the address names; with none named, the tab's own (the header's link
        leads here bare)."""
        asked = dict(parse_qsl(self.router.url.query, keep_blank_values=True))
        unreadable = ""
        if any(key in asked for key in InboxQuery.NAMES):
            try:
                query = InboxQuery.read(asked)
            except DeskError as error:
                unreadable = error.message  # the tab's own filters stay
            else:
                self._filter(tool=query.tool, requester=query.requester, everyone=query.everyone)
        viewer = self._viewer()
        redirect = self._sign_in_first(self._address())
        if redirect is not None:
            return redirect
        await self._reload(viewer)
        self.problem = unreadable or self.problem  # until the list is read again
        return [InboxState.watch, self._shown()]

    @rx.event
    @guarded
    async def set_tool(self, value: str) -> Any:
        self._filter(tool=str(value or ""), requester=self.requester, everyone=self.everyone)
        await self._reload(self._viewer())
        return self._shown()

    @rx.event
    @guarded
    async def set_requester(self, value: str) -> Any:
        self._filter(tool=self.tool, requester=str(value or ""), everyone=self.everyone)
        await self._reload(self._viewer())
        return self._shown()

    @rx.event
    @guarded
    async def set_everyone(self, value: bool) -> Any:
        self._filter(tool=self.tool, requester=self.requester, everyone=bool(value))
        await self._reload(self._viewer())
        return self._shown()

    @rx.event
    @guarded
    async def show_more(self) -> None:
        """The next `LIMIT` of the list, older than those shown (newest first)."""
        self.shown_limit = min(self.shown_limit + LIMIT, INBOX_COUNT_CAP)
        await self._reload(self._viewer())

    @rx.event
    @guarded
    async def clear_filters(self) -> Any:
        self._filter(tool="", requester="", everyone=self.everyone)
        await self._reload(self._viewer())
        return self._shown()

    @rx.event(background=True)
    @guarded_task
    async def watch(self) -> AsyncIterator[Any]:
        """While the tab shows the page: read the inbox again whenever a decision appears or
        leaves (the desk's `inbox` notice, from any worker), and every `WATCH_SECONDS`."""

        async def reload() -> None:
            await self._reload(self._viewer())

        async for _ in follow_page(self, ROUTE, lambda: {inbox_topic()}, reload):
            yield

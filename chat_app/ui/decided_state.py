"""The Inbox's "Decided by you" list: what the signed-in person decided (and approved towards
a quorum), newest first, with how each ended; kept live while the tab is open."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import reflex as rx

from chat_app.desk import DeskError, PastDecision, inbox_topic
from chat_app.trust import Identity

from . import session as sessions
from .answered import edits, how_it_ended
from .components.decided_list import PastRow
from .conversations_state import address, ago, follow_page, in_words, iso
from .guard import guarded, guarded_task
from .identity_state import IdentityState
from .inbox_state import NO_DESK

#: The page's address.
ROUTE = "/inbox/decided"
#: How many decisions it lists.
LIMIT = 100

#: The badge's colour by how a decision ended.
_TONES = {"approved": "green", "edited": "green", "answered": "green", "rejected": "red"}


def past_row(past: PastDecision, viewer_email: str, now: datetime) -> PastRow:
    """How the list shows one of `viewer_email`'s decisions."""
    item = past.item
    voted = any(vote.email == viewer_email and vote.approved for vote in item.votes)
    # Settled by others after the person's approval: what they did, beside how it ended.
    yours = "You approved" if voted and viewer_email not in item.deciders else ""
    asked = item.requester_email == viewer_email
    changed = edits([item]).get(item.item_id, [])
    return PastRow(
        decision_id=item.decision_id,
        thread_id=item.thread_id,
        href=address(item.thread_id),
        kind=item.kind,
        name=item.name,
        summary=item.summary,
        requester="you" if asked else item.requester_name or item.requester_email or "someone",
        requester_email=item.requester_email,
        outcome=how_it_ended(item, viewer_email),
        tone=_TONES.get(item.outcome or "", "gray"),
        yours=yours,
        changes="; ".join(changed),
        reason=past.reason,
        acted=ago(past.acted_at, now),
        acted_iso=iso(past.acted_at),
        acted_title=f"You acted {in_words(past.acted_at)}",
    )


class DecidedState(IdentityState):
    """The person's past decisions, newest first."""

    rows: list[PastRow] = []
    loaded: bool = False
    #: Why the list is not shown ("" when it is).
    problem: str = ""

    def _show_failure(self, message: str) -> bool:
        self.problem = message
        return True

    async def _reload(self, viewer: Identity | None) -> None:
        desk = sessions.desk()
        self.loaded = True
        if desk is None or viewer is None:
            # The banner says why nobody is signed in (`auth_error`); the list, what it needs.
            self.problem = (
                NO_DESK if desk is None else self._nobody_here("Sign in to see what you decided.")
            )
            self.rows = []
            return
        try:
            found = await desk.decided(viewer, limit=LIMIT)
        except DeskError as error:  # the list keeps what it showed; the page says why
            self.problem = error.message
            return
        self.problem = ""
        now = datetime.now(UTC)
        rows = [past_row(past, viewer.email, now) for past in found]
        if rows != self.rows:
            self.rows = rows
        await self._count_inbox(viewer)

    @rx.event
    @guarded
    async def load(self) -> Any:
        viewer = self._viewer()
        redirect = self._sign_in_first(ROUTE)
        if redirect is not None:
            return redirect
        await self._reload(viewer)
        return DecidedState.watch

    @rx.event(background=True)
    @guarded_task
    async def watch(self) -> AsyncIterator[Any]:
        """While the tab shows the page: read the list again whenever a decision leaves the
        inbox (the desk's `inbox` notice, from any worker: one of theirs may be among them),
        and every `WATCH_SECONDS` (which keeps "2 min ago" current)."""

        async def reload() -> None:
            await self._reload(self._viewer())

        async for _ in follow_page(self, ROUTE, lambda: {inbox_topic()}, reload):
            yield

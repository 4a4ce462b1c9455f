"""The Deliveries page's state: the notices the outbox queued, newest first, with how each
went (sent, waiting for its next try, failed) and which channels are configured; for admins.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import reflex as rx

from chat_app.desk import ADMIN_ROLE, inbox_topic
from chat_app.notify import Delivery, NotifySettings, OutboxError
from chat_app.notify.settings import SMTP_URL, WEBHOOK_URL
from chat_app.trust import Identity

from . import session as sessions
from .conversations_state import address, follow_page, in_words, iso
from .guard import guarded, guarded_task
from .identity_state import IdentityState

#: The page's address.
ROUTE = "/deliveries"
#: How many deliveries the page lists.
LIMIT = 100
NO_OUTBOX = "This app keeps no outbox: it runs without the approval desk."
NOTHING_CONFIGURED = (
    f"No notifications are configured: set {WEBHOOK_URL} or {SMTP_URL} (see the README)."
)

#: A notice's event as a person reads it.
EVENTS = {
    "decision-needed": "needs a decision",
    "reminder": "reminder",
    "escalated": "escalated",
    "decided": "how it ended",
}
#: How a delivery not sent (`skipped`) is labelled.
SKIPPED = "not sent"
_STATUS_COLORS = {"sent": "green", "pending": "amber", "failed": "red", "skipped": "gray"}


@dataclass
class DeliveryRow:
    """One notice on one channel to one recipient, as the page lists it."""

    id: int
    #: When it was queued: "2025-06-01 10:42:03" (UTC), and in ISO 8601.
    at: str
    at_iso: str
    #: "needs a decision", "reminder", "escalated" or "how it ended".
    event: str
    #: What it is about: "transfer (recipient=Ada, amount=5000)".
    what: str
    #: `webhook` or `email`.
    channel: str
    #: Who it went to: "Ada (ada@example.com)", or the webhook's host.
    to_whom: str
    #: The address as stored ("" for the webhook).
    recipient: str
    #: `pending`, `sent`, `failed` or `skipped`, and in words: "sent 10:42:05", "pending, next
    #: try at 10:43:10", "failed", "not sent".
    status: str
    status_label: str
    status_color: str
    #: Attempts made so far, the successful one included.
    attempts: int
    #: The last failure's message ("" for none).
    error: str
    #: Why it was not sent (`skipped`): "the decision was approved before it went out"; ""
    #: otherwise.
    reason: str
    #: The conversation's address ("" when the notice names none).
    href: str


def _clock(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%H:%M:%S}"


def _host(url: str | None) -> str:
    """Where a webhook goes, by host and port only: a Slack webhook's path is its secret."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def status_label(delivery: Delivery) -> str:
    """ "sent 10:42:05", "pending" (not tried yet), "pending, next try at 10:43:10",
    "failed", or "not sent" (`skipped`: `DeliveryRow.reason` says why)."""
    if delivery.status == "sent":
        return f"sent {_clock(delivery.sent_at)}" if delivery.sent_at else "sent"
    if delivery.status == "pending":
        if not delivery.attempts:
            return "pending"
        return f"pending, next try at {_clock(delivery.next_attempt_at)}"
    if delivery.status == "skipped":
        return SKIPPED
    return "failed"


def delivery_row(delivery: Delivery, settings: NotifySettings | None = None) -> DeliveryRow:
    if delivery.channel == "email":
        to_whom = delivery.to.display
    else:
        # Where it went when it was tried; one not tried yet goes where the webhook is now.
        host = _host(delivery.sent_to or (settings.webhook_url if settings is not None else None))
        to_whom = f"webhook at {host}" if host else "the webhook"
    return DeliveryRow(
        id=delivery.id,
        at=f"{delivery.created_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}",
        at_iso=iso(delivery.created_at),
        event=EVENTS.get(delivery.event, delivery.event),
        what=delivery.notice.what,
        channel=delivery.channel,
        to_whom=to_whom,
        recipient=delivery.recipient,
        status=delivery.status,
        status_label=status_label(delivery),
        status_color=_STATUS_COLORS.get(delivery.status, "gray"),
        attempts=delivery.attempts,
        error=delivery.last_error or "",
        # After the status "not sent", the reason alone.
        reason=(delivery.reason or "").removeprefix(f"{SKIPPED}: "),
        href=address(delivery.thread_id) if delivery.thread_id else "",
    )


def channels_line(settings: NotifySettings | None) -> str:
    """Which channels notices go through, in a sentence; or that none is configured."""
    if settings is None or not settings.channels:
        return NOTHING_CONFIGURED
    parts = []
    if "webhook" in settings.channels:
        kind = "Slack" if settings.webhook_format == "slack" else "signed JSON"
        parts.append(f"Webhook ({kind}, to {_host(settings.webhook_url)})")
    if "email" in settings.channels and settings.smtp is not None:
        through = f"{settings.smtp.host}:{settings.smtp.port}"
        email = f"email to the people who decide (from {settings.mail_from}, through {through})"
        parts.append(email if parts else email[0].upper() + email[1:])
    return " and ".join(parts) + "."


class DeliveriesState(IdentityState):
    """The outbox's recent deliveries, for an admin."""

    rows: list[DeliveryRow] = []
    #: Which channels are configured, in a sentence (`channels_line`).
    channels: str = ""
    configured: bool = False
    #: The list has been read once (until then the page shows neither rows nor "none yet").
    loaded: bool = False
    #: Why the page is not shown to this person ("" when it is).
    refused: str = ""
    #: Why the list could not be read ("" when it was).
    problem: str = ""
    #: When the list was read last (UTC, in words).
    read_at: str = ""

    def _show_failure(self, message: str) -> bool:
        self.problem = message
        return True

    def _allowed(self, viewer: Identity | None) -> bool:
        """Admins only (anyone, without sign-in: then anyone may do anything); otherwise
        `refused` says why."""
        if viewer is not None and (self.auth_mode == "none" or ADMIN_ROLE in viewer.roles):
            self.refused = ""
            return True
        self.refused = (
            self._nobody_here("Sign in to see the deliveries of notices.")
            if viewer is None
            else "The deliveries of notices are for admins; you are signed in as "
            f"{viewer.label}."
        )
        self.rows = []
        return False

    async def _reload(self, viewer: Identity | None) -> None:
        self.loaded = True
        if not self._allowed(viewer):
            return
        settings = sessions.notify_settings()
        self.channels = channels_line(settings)
        self.configured = settings is not None and bool(settings.channels)
        outbox = sessions.outbox()
        if outbox is None:
            self.problem, self.rows = NO_OUTBOX, []
            return
        try:
            found = await asyncio.to_thread(outbox.recent, LIMIT)
        except OutboxError as error:  # the list keeps what it showed; the page says why
            self.problem = str(error)
            return
        self.problem = ""
        rows = [delivery_row(delivery, settings) for delivery in found]
        if rows != self.rows:
            self.rows = rows
        self.read_at = in_words(datetime.now(UTC))

    @rx.event
    @guarded
    async def load(self) -> Any:
        viewer = self._viewer()
        redirect = self._sign_in_first(ROUTE)
        if redirect is not None:
            return redirect
        if viewer is not None:
            await self._count_inbox(viewer)  # the header's count on this page too
        await self._reload(viewer)
        return DeliveriesState.watch if not self.refused else None

    @rx.event
    @guarded
    async def refresh(self) -> None:
        await self._reload(self._viewer())

    @rx.event(background=True)
    @guarded_task
    async def watch(self) -> AsyncIterator[Any]:
        """While the tab shows the page: read the list again whenever a decision appears or
        leaves (when notices are queued), and every few seconds (when they are sent)."""

        async def reload() -> None:
            viewer = self._viewer()
            await self._reload(viewer)
            if viewer is not None:
                await self._count_inbox(viewer)

        async for _ in follow_page(self, ROUTE, lambda: {inbox_topic()}, reload):
            yield

"""The Conversations page's list: each conversation's title (a link to its own address), its
status, and its last activity.

Functions of their arguments: a row shows a `ConversationRow` (a Var of the page's state).
"""

from __future__ import annotations

from dataclasses import dataclass

import reflex as rx

from ._types import Handler, Prop
from .listing import listing, listing_row, moment


@dataclass
class ConversationRow:
    """One conversation as the list shows it."""

    thread_id: str
    #: Its own address: `/c/<thread id>` (the id quoted).
    href: str
    #: The first message (or "Untitled conversation").
    title: str
    #: `running`, `waiting`, `done` or `failed`.
    status: str
    #: "Running", "Waiting for finance", "Done", "Failed".
    status_label: str
    #: The badge's colour scheme.
    status_color: str
    #: Why it failed ("" unless it did).
    error: str
    #: Last activity, relative ("2 min ago"), and as ISO 8601 and in words (UTC).
    activity: str
    activity_iso: str
    activity_title: str
    #: How its latest decision ended, once it is done: "transfer: Rejected by Ada" ("" else).
    last_decision: str = ""


def _status(row: ConversationRow) -> rx.Component:
    return rx.badge(
        rx.cond(
            row.status == "running",
            rx.spinner(size="1"),
            rx.icon(
                rx.match(
                    row.status,
                    ("waiting", "hourglass"),
                    ("done", "check"),
                    ("failed", "triangle_alert"),
                    "circle",
                ),
                size=12,
            ),
        ),
        row.status_label,
        color_scheme=row.status_color,
        variant="soft",
        class_name="conversation-status",
        data_status=row.status,
        white_space="normal",
    )


def _row(row: ConversationRow) -> rx.Component:
    return listing_row(
        [
            rx.link(
                row.title,
                href=row.href,
                class_name="conversation-title",
                weight="medium",
                size="3",
                overflow_wrap="anywhere",
            ),
            rx.cond(
                row.error != "",
                rx.text(
                    row.error,
                    size="1",
                    color_scheme="red",
                    class_name="conversation-error",
                    overflow_wrap="anywhere",
                ),
            ),
            rx.cond(
                row.last_decision != "",
                rx.text(
                    row.last_decision,
                    size="1",
                    color_scheme="gray",
                    class_name="conversation-last-decision",
                    overflow_wrap="anywhere",
                ),
            ),
        ],
        [
            _status(row),
            moment(row.activity, iso=row.activity_iso, title=row.activity_title,
                   class_name="conversation-activity"),  # fmt: skip
        ],
        basis="16em",
        class_name="conversation-row",
        data_thread_id=row.thread_id,
        data_status=row.status,
    )


def conversation_list(
    *,
    rows: Prop[list[ConversationRow]],
    loaded: Prop[bool],
    problem: Prop[str],
    on_new: Handler,
) -> rx.Component:
    """The list, newest first; what stops it from being shown (`problem`); an empty state
    that offers `on_new` (a new conversation)."""
    return listing(
        rows,
        _row,
        loaded=loaded,
        problem=problem,
        problem_icon="lock",
        name="conversations",
        list_id="conversation-list",
        label="Your conversations, newest first",
        empty=[
            rx.text("No conversations yet.", weight="medium"),
            rx.text(
                "Every conversation you start in the chat is kept here, with its own "
                "address you can open on any device.",
                size="2",
                color_scheme="gray",
            ),
            rx.button(
                rx.icon("plus", size=14),
                "Start a conversation",
                on_click=on_new,
                size="2",
                variant="soft",
            ),
        ],
    )

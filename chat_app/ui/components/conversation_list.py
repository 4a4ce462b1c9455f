"""The Conversations page's list: each conversation's title (a link to its own address), its
status, and its last activity.

Functions of their arguments: a row shows a `ConversationRow` (a Var of the page's state).
"""

from __future__ import annotations

from dataclasses import dataclass

import reflex as rx

from ._types import Handler, Prop


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
    return rx.el.li(
        rx.flex(
            rx.vstack(
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
                spacing="1",
                flex="1 1 16em",
                min_width="0",
            ),
            rx.flex(
                _status(row),
                rx.el.time(
                    row.activity,
                    date_time=row.activity_iso,
                    title=row.activity_title,
                    class_name="conversation-activity",
                    font_size="0.8rem",
                    color=rx.color("gray", 11),
                    white_space="nowrap",
                ),
                align="center",
                gap="0.75em",
                wrap="wrap",
            ),
            align="center",
            justify="between",
            gap="0.5em 1em",
            wrap="wrap",
            width="100%",
        ),
        class_name="conversation-row",
        data_thread_id=row.thread_id,
        data_status=row.status,
        padding="0.75em 1em",
        border_bottom=f"1px solid {rx.color('gray', 4)}",
        list_style="none",
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
    return rx.vstack(
        rx.cond(
            problem != "",
            rx.callout(
                problem, icon="lock", color_scheme="red", id="conversations-problem", role="alert"
            ),
        ),
        rx.cond(
            loaded & (problem == ""),
            rx.cond(
                # `rows` is a Var here (see `Prop`), whose `length()` mypy cannot see.
                rows.length() > 0,  # type: ignore[union-attr]
                rx.el.ul(
                    rx.foreach(rows, _row),
                    id="conversation-list",
                    aria_label="Your conversations, newest first",
                    margin="0",
                    padding="0",
                    width="100%",
                    border=f"1px solid {rx.color('gray', 5)}",
                    border_radius="8px",
                    background_color=rx.color("gray", 1),
                ),
                rx.vstack(
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
                    id="conversations-empty",
                    align="center",
                    text_align="center",
                    spacing="2",
                    padding="2.5em 1em",
                    width="100%",
                ),
            ),
        ),
        spacing="3",
        width="100%",
    )

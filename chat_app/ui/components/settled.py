"""What the chat page tells its person of their requests in other conversations: each one
someone else settled (or that expired) while the page was open, with a link to it.

The conversation shown tells of its own decisions on its cards; these are the rest, which
the person would otherwise learn of only by email or by looking.
"""

from __future__ import annotations

from dataclasses import dataclass

import reflex as rx

from ._types import Handler, Prop


@dataclass
class SettledRow:
    """One request of the person's, settled in another conversation."""

    decision_id: str
    #: "Your request transfer_funds in “pay acme”: Rejected by Ada."
    text: str
    #: The conversation's own address, and its title (what Open and Dismiss name).
    href: str
    title: str


def settled_list(*, rows: Prop[list[SettledRow]], on_dismiss: Handler) -> rx.Component:
    """The rows, each with Open (its conversation) and Dismiss. A polite live region, there
    while empty too (a region added with its first words is not always read out): a screen
    reader says each row as it comes, without interrupting."""
    shown = rows.length() > 0  # type: ignore[union-attr]
    return rx.vstack(
        rx.foreach(
            rows,
            lambda row: rx.callout.root(
                rx.callout.icon(rx.icon("bell")),
                rx.hstack(
                    rx.callout.text(row.text, flex="1"),
                    rx.hstack(
                        rx.link(
                            "Open",
                            href=row.href,
                            size="1",
                            weight="medium",
                            aria_label="Open " + row.title,
                        ),
                        rx.button(
                            "Dismiss",
                            on_click=on_dismiss(row.decision_id),
                            size="1",
                            variant="ghost",
                            aria_label="Dismiss the news of " + row.title,
                        ),
                        align="center",
                        spacing="3",
                    ),
                    align="center",
                    wrap="wrap",
                    spacing="2",
                    width="100%",
                ),
                size="1",
                width="100%",
                class_name="settled-request",
                data_decision=row.decision_id,
            ),
        ),
        id="settled-requests",
        role="status",
        width="100%",
        spacing="2",
        padding_x="1.25em",
        padding_top=rx.cond(shown, "0.75em", "0"),
    )

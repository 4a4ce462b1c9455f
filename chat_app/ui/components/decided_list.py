"""The Inbox's "Decided by you" list: each decision the person settled or approved towards a
quorum, newest first, with how it ended, who asked, and when they acted.

Functions of their arguments: a row shows a `PastRow` (a Var of the page's state).
"""

from __future__ import annotations

from dataclasses import dataclass

import reflex as rx

from ._types import Prop
from .listing import decision_name, listing, listing_row, moment, open_link


@dataclass
class PastRow:
    """One decision the person took part in, as the list shows it."""

    decision_id: str
    thread_id: str
    #: Where it opens: its conversation's address, `/c/<thread id>`.
    href: str
    #: `tool` or `question`.
    kind: str
    #: The tool's name, or the question.
    name: str
    #: The arguments in one line: "recipient=Ada, amount=5000" ("" for none).
    summary: str
    #: Who asked: their name (or email, "you"), and their email.
    requester: str
    requester_email: str
    #: How it ended and by whom: "Approved by you", "Rejected by Olive", "Expired".
    outcome: str
    #: The badge's colour scheme: green approved or answered, red rejected, gray otherwise.
    tone: str
    #: What the person did, when someone else settled it: "You approved" ("" otherwise).
    yours: str
    #: What an approval with changes changed: "amount: 5000 → 4000" ("" for none).
    changes: str
    #: A rejection's reason ("" for none).
    reason: str
    #: When they acted, relative ("5 min ago"), and as ISO 8601 and in words (UTC).
    acted: str
    acted_iso: str
    acted_title: str


def _row(row: PastRow) -> rx.Component:
    return listing_row(
        [
            rx.hstack(
                rx.icon(
                    rx.cond(row.kind == "tool", "wrench", "message_circle_question"),
                    size=16,
                    color=rx.color("gray", 11),
                    aria_hidden="true",
                ),
                decision_name(row.kind, row.name),
                rx.cond(
                    row.summary != "",
                    rx.text(
                        row.summary, size="2", class_name="decided-summary",
                        overflow_wrap="anywhere",
                    ),  # fmt: skip
                ),
                align="center",
                spacing="2",
                wrap="wrap",
            ),
            rx.text(
                "Asked by ",
                rx.text(row.requester, as_="span", class_name="decided-requester",
                        title=row.requester_email),  # fmt: skip
                rx.cond(
                    row.yours != "",
                    rx.text(" · ", row.yours, as_="span", class_name="decided-yours"),
                ),
                size="2",
                color_scheme="gray",
            ),
            rx.cond(
                row.changes != "",
                rx.text("Changed: ", row.changes, size="1", class_name="decided-changes",
                        overflow_wrap="anywhere"),  # fmt: skip
            ),
            rx.cond(
                row.reason != "",
                rx.text("Reason: ", row.reason, size="1", class_name="decided-reason",
                        overflow_wrap="anywhere"),  # fmt: skip
            ),
        ],
        [
            rx.badge(
                row.outcome,
                color_scheme=row.tone,
                variant="soft",
                class_name="decided-outcome",
                white_space="normal",
            ),
            moment(row.acted, iso=row.acted_iso, title=row.acted_title, class_name="decided-when"),
            open_link(row.href, "Open " + row.name + " from " + row.requester, "decided-open"),
        ],
        basis="18em",
        class_name="decided-item",
        data_decision_id=row.decision_id,
        data_thread_id=row.thread_id,
    )


def decided_list(
    *, rows: Prop[list[PastRow]], loaded: Prop[bool], problem: Prop[str]
) -> rx.Component:
    """What the person decided, newest first; what stops it from being shown (`problem`);
    an empty state."""
    return listing(
        rows,
        _row,
        loaded=loaded,
        problem=problem,
        problem_icon="triangle_alert",
        name="decided",
        list_id="decided-list",
        label="Your decisions, newest first",
        empty=[
            rx.icon("history", size=28, color=rx.color("gray", 9), aria_hidden="true"),
            rx.text("You have not decided anything yet.", weight="medium"),
            rx.text(
                "What you approve, reject or answer is listed here, newest first, with how "
                "it ended.",
                size="2",
                color_scheme="gray",
            ),
        ],
    )

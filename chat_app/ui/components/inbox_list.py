"""The Inbox page's parts: its filters and the pending decisions, each with what it asks,
who asked, since when, until when, under which rule, how far its quorum is, and whether the
desk reminded or escalated it.

Functions of their arguments: an item shows an `InboxRow` (a Var of the page's state) and
the filters call the handlers they are given.
"""

from __future__ import annotations

from dataclasses import dataclass

import reflex as rx

from ._types import Handler, Prop
from .listing import decision_name, listing, open_link


@dataclass
class InboxRow:
    """One pending decision as the inbox shows it."""

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
    #: Who asked: their name (or email), and their email.
    requester: str
    requester_email: str
    #: The policy rule that routes it here ("" when the requester decides).
    rule: str
    #: Who may decide it: "Waiting for finance".
    waiting_for: str
    #: Quorum progress, "1 of 2: Sam approved" ("" when one approval decides).
    progress: str
    #: The viewer approved it already and waits for another approver.
    you_approved: bool
    #: The viewer may decide it (an admin's "all pending" lists others' too).
    yours: bool
    #: How long it has waited ("5 min"), and since when (ISO 8601, and in words, UTC).
    waiting_since: str
    created_iso: str
    created_title: str
    #: "in 23 h", "already passed" or "never"; when (in words, UTC; "" for none).
    expires: str
    expires_title: str
    expired: bool
    #: "escalated to admin after 2 h" once the desk escalated it ("" before).
    escalation: str = ""
    #: "10:42 UTC" once the desk reminded its approvers ("" before), and when
    #: in full.
    reminded: str = ""
    reminded_iso: str = ""
    reminded_title: str = ""


#: The Inbox's two lists: what waits for the person, and what they decided.
INBOX_TABS = (("Waiting", "/inbox", "inbox-tab-waiting"),
              ("Decided by you", "/inbox/decided", "inbox-tab-decided"))  # fmt: skip


def inbox_tabs(current: str) -> rx.Component:
    """Links to the Inbox's two lists, the one at route `current` marked as the page."""

    def tab(label: str, href: str, tab_id: str) -> rx.Component:
        here = href == current
        # The tab shown in full contrast over the accent's underline, the other in gray.
        tone: dict[str, object] = (
            {"color": rx.color("gray", 12)} if here else {"color_scheme": "gray"}
        )
        return rx.link(
            label,
            href=href,
            id=tab_id,
            size="2",
            weight="medium" if here else "regular",
            aria_current="page" if here else "false",
            **tone,
            padding="0.35em 0.1em",
            border_bottom=f"2px solid {rx.color('accent', 9) if here else 'transparent'}",
            underline="none",
        )

    return rx.el.nav(
        *(tab(*entry) for entry in INBOX_TABS),
        display="flex",
        gap="1.25em",
        width="100%",
        border_bottom=f"1px solid {rx.color('gray', 5)}",
        aria_label="Inbox lists",
        id="inbox-tabs",
    )


def inbox_filters(
    *,
    tools: Prop[list[str]],
    tool: Prop[str],
    on_tool: Handler,
    requesters: Prop[list[list[str]]],
    requester: Prop[str],
    on_requester: Handler,
    is_admin: Prop[bool],
    everyone: Prop[bool],
    on_everyone: Handler,
) -> rx.Component:
    """Filter by tool and by requester (each "" for all), and, for an admin, every pending
    decision instead of those they may make. `requesters` are [email, label] pairs."""
    select_style = {
        "fontSize": "0.875rem",
        "padding": "0.3em 0.5em",
        "borderRadius": "6px",
        "minWidth": "10em",
        "maxWidth": "100%",
    }
    label_style = {"font_size": "0.75rem", "color": rx.color("gray", 11)}
    return rx.flex(
        rx.vstack(
            rx.el.label("Tool or question", html_for="inbox-filter-tool", **label_style),
            rx.el.select(
                rx.el.option("All tools", value=""),
                rx.foreach(tools, lambda name: rx.el.option(name, value=name)),
                value=tool,
                on_change=on_tool,
                id="inbox-filter-tool",
                class_name="inbox-filter-tool",
                style=select_style,
            ),
            spacing="1",
        ),
        rx.vstack(
            rx.el.label("Asked by", html_for="inbox-filter-requester", **label_style),
            rx.el.select(
                rx.el.option("Anyone", value=""),
                rx.foreach(requesters, lambda person: rx.el.option(person[1], value=person[0])),
                value=requester,
                on_change=on_requester,
                id="inbox-filter-requester",
                class_name="inbox-filter-requester",
                style=select_style,
            ),
            spacing="1",
        ),
        rx.cond(
            is_admin,
            rx.el.label(
                rx.switch(
                    checked=everyone,
                    on_change=on_everyone,
                    id="inbox-all",
                    class_name="inbox-filter-all",
                    size="2",
                ),
                rx.text("All pending (admin)", size="2"),
                display="flex",
                align_items="center",
                gap="0.5em",
                cursor="pointer",
                padding_bottom="0.3em",
                title="Every pending decision, also those only others may make",
            ),
        ),
        gap="1em",
        align="end",
        wrap="wrap",
        width="100%",
        id="inbox-filters",
        role="search",
        aria_label="Filter the inbox",
    )


def _field(label: str, *value: rx.Component | rx.Var[str] | str) -> rx.Component:
    return rx.fragment(
        rx.el.dt(label, font_weight="500", color=rx.color("gray", 11)),
        rx.el.dd(*value, margin="0", overflow_wrap="anywhere"),
    )


def _item(row: InboxRow) -> rx.Component:
    return rx.el.li(
        rx.vstack(
            rx.flex(
                rx.hstack(
                    rx.icon(
                        rx.cond(row.kind == "tool", "wrench", "message_circle_question"),
                        size=16,
                        color=rx.color("gray", 11),
                        aria_hidden="true",
                    ),
                    decision_name(row.kind, row.name, class_name="inbox-name"),
                    rx.cond(
                        row.rule != "",
                        rx.badge(row.rule, variant="outline", class_name="inbox-rule"),
                    ),
                    rx.cond(
                        row.escalation != "",
                        rx.badge(
                            rx.icon("arrow_up_right", size=12, aria_hidden="true"),
                            row.escalation,
                            color_scheme="amber",
                            class_name="inbox-escalation",
                        ),
                    ),
                    align="center",
                    spacing="2",
                    wrap="wrap",
                ),
                # Named with what it asks: rows of one tool and person differ in that alone.
                open_link(row.href, "Open " + row.name + rx.cond(
                    row.summary != "", " (" + row.summary + ")", ""
                ) + " from " + row.requester, "inbox-open"),  # fmt: skip
                justify="between",
                align="center",
                gap="0.5em",
                wrap="wrap",
                width="100%",
            ),
            rx.el.dl(
                rx.cond(
                    row.summary != "",
                    _field(
                        "Arguments", rx.text(row.summary, class_name="inbox-summary", as_="span")
                    ),
                ),
                _field(
                    "Asked by",
                    rx.text(
                        row.requester,
                        class_name="inbox-requester",
                        title=row.requester_email,
                        as_="span",
                    ),
                ),
                _field(
                    "Waiting since",
                    rx.el.time(
                        row.waiting_since,
                        date_time=row.created_iso,
                        title=row.created_title,
                        class_name="inbox-waiting-since",
                    ),
                ),
                _field(
                    "Expires",
                    rx.text(
                        row.expires,
                        class_name="inbox-expires",
                        title=row.expires_title,
                        color=rx.cond(row.expired, rx.color("red", 11), "inherit"),
                        as_="span",
                    ),
                ),
                _field(
                    "Decides",
                    rx.text(row.waiting_for, class_name="inbox-waiting-for", as_="span"),
                ),
                rx.cond(
                    row.progress != "",
                    _field(
                        "Approvals",
                        rx.text(row.progress, class_name="quorum-progress", as_="span"),
                    ),
                ),
                rx.cond(
                    row.reminded != "",
                    _field(
                        "Reminded",
                        rx.el.time(
                            row.reminded,
                            date_time=row.reminded_iso,
                            title=row.reminded_title,
                            class_name="inbox-reminded",
                        ),
                    ),
                ),
                display="grid",
                grid_template_columns="max-content 1fr",
                column_gap="1em",
                row_gap="0.2em",
                font_size="0.875rem",
                margin="0",
                width="100%",
            ),
            rx.cond(
                row.you_approved,
                rx.callout(
                    "You approved this; it waits for another approver.",
                    icon="check",
                    size="1",
                    color_scheme="green",
                    class_name="inbox-you-approved",
                ),
            ),
            rx.cond(
                ~row.yours,
                rx.callout(
                    # Who decides is the row above: this says why the row is shown at all.
                    "Not yours to decide: shown among all pending.",
                    icon="eye",
                    size="1",
                    color_scheme="gray",
                    class_name="inbox-not-yours",
                ),
            ),
            spacing="2",
            width="100%",
        ),
        class_name="inbox-item",
        # Keyed by its decision: a row that goes takes its focus with it, not onto the next.
        key=row.decision_id,
        data_decision_id=row.decision_id,
        data_thread_id=row.thread_id,
        data_tool=row.name,
        padding="0.85em 1em",
        border_bottom=f"1px solid {rx.color('gray', 4)}",
        list_style="none",
    )


def inbox_list(
    *,
    rows: Prop[list[InboxRow]],
    loaded: Prop[bool],
    problem: Prop[str],
    filtered: Prop[bool],
    on_clear: Handler,
) -> rx.Component:
    """The pending decisions, newest first; what stops them from being shown (`problem`);
    an empty state (with `on_clear` when `filtered` hid everything)."""
    return listing(
        rows,
        _item,
        loaded=loaded,
        problem=problem,
        problem_icon="triangle_alert",
        name="inbox",
        list_id="inbox-list",
        label="Pending decisions, newest first",
        empty=[
            rx.icon("inbox", size=28, color=rx.color("gray", 9), aria_hidden="true"),
            rx.cond(
                filtered,
                rx.fragment(
                    rx.text("Nothing pending matches these filters.", weight="medium"),
                    rx.button(
                        "Clear the filters",
                        on_click=on_clear,
                        size="2",
                        variant="soft",
                        id="inbox-clear",
                    ),
                ),
                rx.fragment(
                    rx.text("Nothing is waiting for you.", weight="medium"),
                    rx.text(
                        "Decisions you may make appear here as soon as an agent "
                        "asks for them.",
                        size="2",
                        color_scheme="gray",
                    ),
                ),
            ),
        ],
    )

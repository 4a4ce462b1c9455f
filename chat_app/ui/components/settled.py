"""What the chat page tells its person of their requests in other conversations: each one
someone else settled (or that expired) while the page was open, with a link to it.

The conversation shown tells of its own decisions on its cards; these are the rest, which
the person would otherwise learn of only by email or by looking.
"""

from __future__ import annotations

from dataclasses import dataclass

import reflex as rx

from ._types import Handler, Prop
from .following import FOCUS_LOG_NOW_SCRIPT, FOCUS_LOG_SCRIPT
from .transcript import TRANSCRIPT_ID


@dataclass
class SettledRow:
    """One request of the person's, settled in another conversation."""

    decision_id: str
    #: How it ended: "Rejected by Ada: not this quarter."
    outcome: str
    #: Which request it was: "Your transfer request in “pay acme”."
    what: str
    #: The conversation's own address.
    href: str


_FOCUS_LOG = FOCUS_LOG_SCRIPT.substitute(id=TRANSCRIPT_ID)
_FOCUS_HERE = FOCUS_LOG_NOW_SCRIPT.substitute(id=TRANSCRIPT_ID)

#: A target a finger can hit (WCAG 2.5.8's minimum), on one line.
_TARGET = {"display": "inline-flex", "align_items": "center", "min_height": "24px"}

#: On a phone each row's words take at most two lines, cut short ("…") after: three rows of
#: three or four lines took a third of the screen above the chat. How it ended comes first;
#: the whole sentence stays in the page (a screen reader reads it), and a row tapped shows
#: it whole (`WHOLE_ON_TAP_SCRIPT`): a reason is read where it is told.
_SHORT_ON_A_PHONE = {
    "@media (max-width: 520px)": {
        "& .settled-text": {
            "display": "-webkit-box",
            "-webkit-line-clamp": "2",
            "-webkit-box-orient": "vertical",
            "overflow": "hidden",
            "min_width": "0",
            "cursor": "pointer",
        },
        # Tapped, or with the keyboard on its Open or Dismiss (a desktop zoomed to a phone's
        # width has no tap).
        "& .settled-text.whole, & .settled-request:focus-within .settled-text": {
            "display": "block",
            "-webkit-line-clamp": "unset",
            "overflow": "visible",
        },
        "& .settled-line": {"flex_wrap": "nowrap"},
    },
}

#: A row's words tapped (or clicked) show whole, and short again (`_SHORT_ON_A_PHONE`).
#: Delegated, once per page.
WHOLE_ON_TAP_SCRIPT = """
document.addEventListener('click', (event) => {
  const text = event.target.closest && event.target.closest('.settled-text');
  const selecting = !(window.getSelection() || { isCollapsed: true }).isCollapsed;
  if (text && !selecting) text.classList.toggle('whole');
});
"""


def settled_list(
    *, rows: Prop[list[SettledRow]], more: Prop[int], more_href: str, on_dismiss: Handler
) -> rx.Component:
    """The rows, each with Open (its conversation) and Dismiss, then how many more came than
    the list keeps (`more`), with a link to where they all are (`more_href`). A polite live
    region, there while empty too (a region added with its first words is not always read
    out), and not atomic: a screen reader says what was added, not the whole list again."""
    shown = rows.length() > 0  # type: ignore[union-attr]
    return rx.vstack(
        rx.foreach(
            rows,
            lambda row: rx.callout.root(
                rx.callout.icon(rx.icon("bell")),
                rx.hstack(
                    rx.callout.text(
                        rx.text.strong(row.outcome),
                        " ",
                        row.what,
                        flex="1",
                        min_width="0",
                        # A reason's long word (a link) breaks rather than leave the notice.
                        overflow_wrap="anywhere",
                        class_name="settled-text",
                    ),
                    rx.hstack(
                        rx.link(
                            "Open",
                            href=row.href,
                            size="1",
                            weight="medium",
                            aria_label="Open: " + row.what,
                            # The row goes once its conversation shows: the keyboard goes on
                            # to that conversation, not back to the page's start.
                            on_click=rx.call_script(_FOCUS_LOG),
                            **_TARGET,
                        ),
                        rx.button(
                            "Dismiss",
                            # The row goes: the keyboard goes on to the conversation shown.
                            on_click=[on_dismiss(row.decision_id), rx.call_script(_FOCUS_HERE)],
                            size="1",
                            variant="ghost",
                            aria_label="Dismiss: " + row.what,
                        ),
                        align="center",
                        spacing="3",
                        flex_shrink="0",
                    ),
                    align="center",
                    wrap="wrap",
                    spacing="2",
                    width="100%",
                    min_width="0",
                    class_name="settled-line",
                ),
                size="1",
                width="100%",
                class_name="settled-request",
                # Keyed: a row shown whole (a class the page's script sets) stays that row's.
                key=row.decision_id,
                data_decision=row.decision_id,
            ),
        ),
        rx.cond(
            more > 0,
            rx.text(
                more,
                rx.cond(more == 1, " more was settled: ", " more were settled: "),
                rx.link("see Conversations", href=more_href, **_TARGET),
                size="1",
                color_scheme="gray",
                id="settled-more",
            ),
        ),
        id="settled-requests",
        role="status",
        aria_label="Your requests, settled elsewhere",
        aria_atomic="false",
        aria_relevant="additions",
        width="100%",
        spacing="2",
        padding_x="1.25em",
        padding_top=rx.cond(shown, "0.75em", "0"),
        style=_SHORT_ON_A_PHONE,
    )

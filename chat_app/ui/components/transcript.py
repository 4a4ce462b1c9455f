"""The conversation: messages, tool-call cards with their decisions, the streamed reply.

Functions of their arguments; the page binds them to its state. The memoized message row
closes over the page's `DecisionEvents` (`message_rows`) rather than taking them as props: a
memo's props stay serializable Vars, and the handlers are compiled into the row itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import reflex as rx
from reflex.experimental.client_state import ClientStateVar

from chat_app.ui.views import ArchiveBlock, DecisionView, MessageView, ToolCardView

from ._types import Handler, Prop
from .decisions import DecisionEvents, approval_card, loose_decision
from .following import following_log

#: The shape of a message bubble, finished or being streamed.
_BUBBLE: dict[str, Any] = {
    # Markdown paragraphs bring their own margins; the bubble has padding.
    "style": {"& p": {"margin": "0.25em 0"}},
    "padding_x": "0.9em",
    "padding_y": "0.5em",
    "border_radius": "12px",
    "max_width": "min(85%, 640px)",
}

#: Renders one message of a transcript list, keyed by its id (see `message_rows`).
MessageRow: TypeAlias = Callable[[rx.Var[MessageView]], rx.Component]
#: Renders one block of the archive, keyed by its first message (see `archive_blocks`).
BlockRow: TypeAlias = Callable[[rx.Var[ArchiveBlock]], rx.Component]

#: The gap between messages, in a transcript list and inside a block of the archive.
_MESSAGE_GAP = "3"
#: Settled messages (the archive's blocks, the recent part) sit in boxes the browser skips
#: while they are off screen (style, layout, paint), and paints on their own while on screen
#: (an update to the turn does not paint them again). A box is taken to measure the guess
#: until it has been on screen once (for the scroll bar); then its real height is kept.
_SETTLED_STYLE = {"content-visibility": "auto", "contain-intrinsic-size": "auto 4000px"}


def _heading(level: int, size: str) -> Callable[[object], rx.Component]:
    return lambda text: rx.heading(text, as_=f"h{level}", size=size, margin_y="0.5em")


#: A reply's headings sit one level under the page's own `<h1>`: a model's `#` is an `<h2>`,
#: so the page keeps one `<h1>` and the outline a screen reader offers stays the page's.
REPLY_HEADINGS = {
    f"h{level}": _heading(min(level + 1, 6), size)
    for level, size in ((1, "5"), (2, "4"), (3, "3"), (4, "2"), (5, "2"), (6, "1"))
}


def _reply(text: Prop[str]) -> rx.Component:
    """A model's words as Markdown, any HTML in them shown as the text it is: the words carry
    what people typed (a reason, a note), and one person's markup must not become another's
    page (a covering `<div>`, a link styled as the app's)."""
    return rx.markdown(text, use_raw=False, component_map=REPLY_HEADINGS)


@rx.memo
def tool_fold(label: rx.Var[str], text: rx.Var[str], rest: rx.RestProp) -> rx.Component:
    """`text` (JSON) folded under `label`, unfolded by a click, in the page alone.

    Not a `<details>`: the highlighted JSON is put on the page only while it is open (folded,
    the plain text stays, hidden, in one element). Highlighted JSON was most of a long
    transcript's elements (every tool card has its arguments and result), and Chrome's work
    per frame grows with the elements a page holds, shown or not, and with its `<details>`
    (each has a shadow root).
    """
    is_open = ClientStateVar.create("fold_open", default=False, global_ref=False)
    return rx.box(
        rx.el.button(
            label,
            type="button",
            on_click=is_open.set_value(~is_open.value),
            aria_expanded=rx.cond(is_open.value, "true", "false"),
            class_name="fold-summary",
            style=_FOLD_SUMMARY,
        ),
        rx.cond(
            is_open.value,
            rx.code_block(text, language="json", font_size="0.75rem"),
            # Folded, the text stays on the page as <details> kept it, in one element.
            rx.el.pre(text, hidden=True),
        ),
        rest,
        width="100%",
    )


#: A fold's summary: a line of small text after a triangle (drawn by CSS: no element of its
#: own), turned down while open, as a <details> marker.
_FOLD_SUMMARY: dict[str, Any] = {
    "display": "inline-flex",
    "align_items": "center",
    "min_height": "24px",  # a target a finger can hit (WCAG 2.5.8's minimum)
    "gap": "0.35em",
    "padding": "0",
    "border": "none",
    "background": "none",
    "color": "inherit",
    "font": "inherit",
    "font_size": "0.8rem",
    "cursor": "pointer",
    # Drawn, not read: an empty alternative keeps it out of the button's name.
    "&::before": {"content": "'▸' / ''", "transition": "transform 0.1s"},
    "&[aria-expanded='true']::before": {"transform": "rotate(90deg)"},
}


def _changes(card: ToolCardView) -> rx.Component:
    """What an approval with changes changed: the arguments below are those the model
    proposed; these run instead (or ran: a card held for its batch shows them too)."""
    return rx.vstack(
        rx.text("Changed by the approval", size="1", weight="medium"),
        rx.el.ul(
            rx.foreach(
                card.changes,
                lambda line: rx.el.li(
                    # A long address or subject breaks where it must: on a phone the new
                    # value, the one that ran, ran out of the card.
                    rx.text(line, size="1", font_family="var(--code-font-family)",
                            overflow_wrap="anywhere"),  # fmt: skip
                    class_name="tool-change",
                ),
            ),
            list_style_type="disc",
            margin="0",
            padding_left="1.1em",
            max_width="100%",
        ),
        spacing="1",
        class_name="tool-changes",
        padding="0.4em 0.6em",
        border_left=f"2px solid {rx.color('amber', 8)}",
        background_color=rx.color("amber", 2),
        width="100%",
        box_sizing="border-box",
        min_width="0",
    )


def tool_card(card: ToolCardView, events: DecisionEvents) -> rx.Component:
    # Nothing will come of it: it expired, or the conversation went on without its result.
    settled = (card.status == "expired") | (card.status == "abandoned")
    return rx.box(
        rx.vstack(
            rx.hstack(
                rx.icon("wrench", size=14),
                rx.code(card.name),
                rx.badge(
                    card.status_label, color_scheme=card.status_color, class_name="tool-status"
                ),
                align="center",
                spacing="2",
            ),
            rx.cond(
                card.decided_by != "",
                rx.hstack(
                    rx.icon("scale", size=14),
                    rx.text(card.decided_by, size="1", class_name="tool-decided-by"),
                    align="center",
                    spacing="1",
                ),
            ),
            rx.cond(card.changes.length() > 0, _changes(card)),
            # The decision card lists the arguments itself; the raw JSON stays folded. After
            # an edit the tool ran with others (the changes above say which): these were
            # the proposal.
            tool_fold(
                label=rx.cond(card.changes.length() > 0, "Arguments proposed", "Arguments"),
                text=card.arguments,
                class_name="tool-arguments",
            ),
            rx.cond(
                card.reason != "",
                rx.text(
                    rx.cond(card.status == "rejected", "Reason: ", ""),
                    card.reason,
                    size="1",
                    # An expiry, or a call the conversation went on without, is no failure:
                    # it reads muted.
                    color=rx.cond(settled, rx.color("gray", 11), rx.color("red", 11)),
                    overflow_wrap="anywhere",  # a long link in a reason stays in the card
                    class_name="tool-reason",
                ),
            ),
            rx.cond(
                card.result != "",
                tool_fold(label="Result", text=card.result, class_name="tool-result"),
            ),
            rx.cond(card.has_decision, approval_card(card.decision, events)),
            spacing="2",
            width="100%",
        ),
        class_name="tool-card",
        data_tool=card.name,
        data_status=card.status,
        # Named, so that its folds ("Arguments", "Result") are read as this call's.
        role="group",
        aria_label="Tool call: " + card.name,
        opacity=rx.cond(settled, "0.75", "1"),
        padding="0.6em 0.75em",
        border_radius="8px",
        border=f"1px solid {rx.color('gray', 6)}",
        background_color=rx.color("gray", 1),
        width="100%",
    )


def answered_question(message: rx.Var[MessageView]) -> rx.Component:
    """A question answered earlier, where the conversation stood when it was answered: what
    was asked, the answer field by field, and who answered (or how it ended)."""
    return rx.box(
        rx.hstack(
            rx.icon("circle-help", size=16, color=rx.color("gray", 11), flex_shrink="0"),
            rx.text(message.text, size="2", weight="medium"),
            spacing="2",
            align="center",
        ),
        rx.foreach(
            message.answer,
            lambda line: rx.text(
                line, size="2", class_name="answer-line", padding_left="24px",
                white_space="pre-wrap",  # a note's lines as typed
            ),  # fmt: skip
        ),
        rx.text(
            message.note,
            size="1",
            color=rx.color("gray", 11),
            class_name="answer-note",
            padding_left="24px",
        ),
        class_name="answered-question",
        data_role="question",
        padding="0.5em 0.75em",
        border_radius="8px",
        border=f"1px solid {rx.color('gray', 6)}",
        max_width="min(85%, 640px)",
        overflow_wrap="anywhere",
    )


def message_rows(events: DecisionEvents) -> MessageRow:
    """The row of one message, memoized, its decisions calling `events`.

    Build it once, when the page's module is imported: Reflex registers a memo by its name,
    so a second call would replace the first one's handlers.
    """

    @rx.memo
    def message_row(message: rx.Var[MessageView], rest: rx.RestProp) -> rx.Component:
        """One message with its tool cards, memoized: React renders it again only when its
        own data changes. The page keeps unchanged rows' objects across updates, so a token,
        a click or a new message re-renders the rows that changed, not the whole history.
        """
        is_user = message.role == "user"
        return rx.vstack(
            rx.cond(
                message.role == "question",
                answered_question(message),
                rx.cond(
                    message.text != "",
                    rx.box(
                        rx.cond(
                            is_user,
                            rx.text(message.text, white_space="pre-wrap", size="3"),
                            _reply(message.text),
                        ),
                        class_name="chat-message",
                        data_role=message.role,
                        background_color=rx.cond(
                            is_user, rx.color("accent", 4), rx.color("gray", 3)
                        ),
                        overflow_wrap="anywhere",
                        **_BUBBLE,
                    ),
                ),
            ),
            rx.foreach(message.tools, lambda card: tool_card(card, events)),
            rest,
            align=rx.cond(is_user, "end", "start"),
            spacing="2",
            width="100%",
        )

    def row(message: rx.Var[MessageView]) -> rx.Component:
        return message_row(message=message, key=message.id)

    return row


def archive_blocks(row: MessageRow) -> BlockRow:
    """A block of the archive, memoized, its messages shown by `row`.

    The block is rendered again only when it changes (never, once cut), so an update to the
    page maps over the blocks, not over every message of the history. Off screen, the
    browser skips its style, layout and paint (`content-visibility: auto`), so adding a row
    at the end, or a frame of the streamed reply, does not lay out or paint the history
    again. Build it once, like `message_rows`.
    """

    @rx.memo
    def archive_block(block: rx.Var[ArchiveBlock], rest: rx.RestProp) -> rx.Component:
        return rx.vstack(
            rx.foreach(block.messages, row),
            rest,
            class_name="archive-block",
            spacing=_MESSAGE_GAP,
            width="100%",
            style=_SETTLED_STYLE,
        )

    def render(block: rx.Var[ArchiveBlock]) -> rx.Component:
        return archive_block(block=block, key=block.id)

    return render


def streaming_row(
    *, message_id: Prop[str], text: Prop[str], tools: Prop[list[str]]
) -> rx.Component:
    """The reply being streamed ("" `message_id` when none), and the tools it is calling."""
    return rx.cond(
        message_id != "",
        rx.vstack(
            rx.box(
                _reply(text),
                class_name="chat-message streaming",
                data_role="assistant",
                aria_live="polite",
                background_color=rx.color("gray", 3),
                **_BUBBLE,
            ),
            rx.foreach(
                tools,
                lambda name: rx.hstack(
                    rx.spinner(size="1"),
                    rx.text("Calling ", rx.code(name), size="1", color_scheme="gray"),
                    align="center",
                ),
            ),
            align="start",
            width="100%",
        ),
    )


def status_row(
    *,
    working: Prop[bool],
    resuming: Prop[bool],
    run_error: Prop[str],
    can_resend: Prop[bool],
    on_retry_send: Handler,
) -> rx.Component:
    """The run's status: at work with no reply showing yet (a model thinking, a tool
    running), resuming, or why it failed, with Retry when the failed message can be sent
    again (`can_resend`; a failed decision's Retry is in the batch bar)."""
    return rx.vstack(
        # "Working…" is shown after a moment (`forms.css`): a reply that starts at once never
        # flashes it.
        rx.cond(working, _going_on("Working…", "working")),
        rx.cond(resuming, _going_on("Resuming the run…", "resuming")),
        rx.cond(
            run_error != "",
            rx.callout.root(
                rx.callout.icon(rx.icon("circle_alert")),
                rx.callout.text(run_error, id="run-error-text"),
                rx.cond(
                    can_resend,
                    rx.button(
                        "Retry",
                        on_click=on_retry_send,
                        size="1",
                        variant="surface",
                        color_scheme="red",
                        id="retry-send",
                        width="fit-content",
                    ),
                ),
                color_scheme="red",
                size="1",
                id="run-error",
                role="alert",
            ),
        ),
        width="100%",
    )


def _going_on(words: str, element_id: str) -> rx.Component:
    """A status line with a spinner: something is going on, with nothing else to show."""
    return rx.hstack(
        rx.spinner(size="1"),
        rx.text(words, size="2", color_scheme="gray"),
        id=element_id,
        role="status",
        align="center",
    )


#: The conversation's log: focusable, so that keys scroll it.
TRANSCRIPT_ID = "transcript"


def notice_list(*, notices: Prop[list[str]], on_dismiss: Handler) -> rx.Component:
    """What the person should know about the agent the page talks to (e.g. its tool manifest
    could not be read), each with Dismiss."""
    return rx.cond(
        notices.length() > 0,  # type: ignore[union-attr]
        rx.vstack(
            rx.foreach(
                notices,
                lambda notice: rx.callout.root(
                    rx.callout.icon(rx.icon("info")),
                    rx.callout.text(notice),
                    rx.button(
                        "Dismiss",
                        on_click=on_dismiss(notice),
                        size="1",
                        variant="ghost",
                        color_scheme="amber",
                        width="fit-content",
                    ),
                    color_scheme="amber",
                    size="1",
                    class_name="agent-notice",
                    role="status",
                ),
            ),
            id="agent-notices",
            width="100%",
            spacing="2",
            padding_x="1.25em",
            padding_top="1em",
        ),
    )


def empty_transcript(*, suggestions: Sequence[str], on_suggestion: Handler) -> rx.Component:
    """What a new conversation shows: a greeting and phrases to try (each sends itself)."""
    return rx.center(
        rx.vstack(
            rx.heading("What can the ops desk do for you?", size="4", weight="medium", as_="h2"),
            rx.text(
                "The agent pauses for your sign-off before anything that matters. Try one:",
                size="2",
                color_scheme="gray",
            ),
            rx.flex(
                rx.foreach(
                    suggestions,
                    lambda text: rx.button(
                        text,
                        on_click=on_suggestion(text),
                        variant="surface",
                        radius="full",
                        size="2",
                        class_name="suggestion",
                    ),
                ),
                wrap="wrap",
                spacing="2",
                justify="center",
            ),
            align="center",
            spacing="3",
            max_width="560px",
            padding="1em",
        ),
        height="100%",
        width="100%",
        id="transcript-empty",
    )


def transcript(
    *,
    has_messages: Prop[bool],
    archive: Prop[list[ArchiveBlock]],
    block: BlockRow,
    recent: Prop[list[MessageView]],
    turn: Prop[list[MessageView]],
    row: MessageRow,
    streaming: rx.Component,
    loose_decisions: Prop[list[DecisionView]],
    events: DecisionEvents,
    batch: rx.Component,
    status: rx.Component,
    empty: rx.Component,
    thread: Prop[str],
    addresses: str,
    loaded: Prop[bool],
    sent_from: str,
    notices: rx.Component | None = None,
    header: rx.Component | None = None,
) -> rx.Component:
    """The scrolling log of the conversation `thread` (its address: `addresses` then the
    thread's id), which keeps the newest message in view while the reader is at the end
    (`following_log`, which reads `loaded` and `sent_from` as well): `notices` about the
    agent first, then the messages: the `archive` block by block, the `recent` part and the
    `turn` (each list sent on its own); the reply being streamed, the decisions not at a
    tool call, the batch bar and the run's status; `empty` before the first message (with
    the status, so a failure before any message shows too). `header`, above the log, speaks
    of the conversation shown: it is hidden with the log's lines while another one opens."""
    return following_log(
        notices if notices is not None else rx.fragment(),
        rx.cond(
            has_messages,
            rx.vstack(
                rx.foreach(archive, block),
                rx.cond(
                    recent.length() > 0,  # type: ignore[union-attr]
                    rx.vstack(
                        rx.foreach(recent, row),
                        class_name="transcript-recent",
                        spacing=_MESSAGE_GAP,
                        width="100%",
                        style=_SETTLED_STYLE,
                    ),
                ),
                rx.foreach(turn, row),
                streaming,
                rx.foreach(loose_decisions, lambda decision: loose_decision(decision, events)),
                batch,
                status,
                spacing=_MESSAGE_GAP,
                width="100%",
                padding="1.25em",
            ),
            rx.vstack(
                empty,
                rx.box(status, padding_x="1.25em", width="100%"),
                height="100%",
                width="100%",
            ),
        ),
        log_id=TRANSCRIPT_ID,
        thread=thread,
        addresses=addresses,
        loaded=loaded,
        sent_from=sent_from,
        label="Conversation",
        header=header,
    )

"""The conversation: messages, tool-call cards with their decisions, the streamed reply."""

from __future__ import annotations

from typing import Any

import reflex as rx

from chat_app.ui.state import SUGGESTIONS, ChatState
from chat_app.ui.views import MessageView, ToolCardView

from .decisions import approval_card, batch_bar, loose_decision

#: The shape of a message bubble, finished or being streamed.
_BUBBLE: dict[str, Any] = {
    # Markdown paragraphs bring their own margins; the bubble has padding.
    "style": {"& p": {"margin": "0.25em 0"}},
    "padding_x": "0.9em",
    "padding_y": "0.5em",
    "border_radius": "12px",
    "max_width": "min(85%, 640px)",
}


def tool_card(card: ToolCardView) -> rx.Component:
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
            # The decision card lists the arguments itself; the raw JSON stays folded.
            rx.el.details(
                rx.el.summary("Arguments", font_size="0.8rem", cursor="pointer"),
                rx.code_block(card.arguments, language="json", font_size="0.75rem"),
            ),
            rx.cond(
                card.reason != "",
                rx.text(
                    rx.cond(card.status == "rejected", "Reason: ", ""),
                    card.reason,
                    size="1",
                    color=rx.color("red", 11),
                    class_name="tool-reason",
                ),
            ),
            rx.cond(
                card.result != "",
                rx.el.details(
                    rx.el.summary("Result", font_size="0.8rem", cursor="pointer"),
                    rx.code_block(card.result, language="json", font_size="0.75rem"),
                    class_name="tool-result",
                ),
            ),
            rx.cond(card.has_decision, approval_card(card.decision)),
            spacing="2",
            width="100%",
        ),
        class_name="tool-card",
        data_tool=card.name,
        data_status=card.status,
        padding="0.6em 0.75em",
        border_radius="8px",
        border=f"1px solid {rx.color('gray', 6)}",
        background_color=rx.color("gray", 1),
        width="100%",
    )


@rx.memo
def message_row(message: rx.Var[MessageView], rest: rx.RestProp) -> rx.Component:
    """One message with its tool cards, memoized: React renders it again only when its own
    data changes. The page keeps unchanged rows' objects across updates, so a token, a click
    or a new message re-renders the rows that changed, not the whole history.
    """
    is_user = message.role == "user"
    return rx.box(
        rx.vstack(
            rx.cond(
                message.text != "",
                rx.box(
                    rx.cond(
                        is_user,
                        rx.text(message.text, white_space="pre-wrap", size="3"),
                        rx.markdown(message.text),
                    ),
                    class_name="chat-message",
                    data_role=message.role,
                    background_color=rx.cond(is_user, rx.color("accent", 4), rx.color("gray", 3)),
                    overflow_wrap="anywhere",
                    **_BUBBLE,
                ),
            ),
            rx.foreach(message.tools, tool_card),
            align=rx.cond(is_user, "end", "start"),
            spacing="2",
            width="100%",
        ),
        rest,
        width="100%",
    )


def _row(message: rx.Var[MessageView]) -> rx.Component:
    return message_row(message=message, key=message.id)


def streaming_row() -> rx.Component:
    return rx.cond(
        ChatState.streaming_id != "",
        rx.vstack(
            rx.box(
                rx.markdown(ChatState.streaming_text),
                class_name="chat-message streaming",
                data_role="assistant",
                aria_live="polite",
                background_color=rx.color("gray", 3),
                **_BUBBLE,
            ),
            rx.foreach(
                ChatState.streaming_tools,
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


def status_row() -> rx.Component:
    return rx.vstack(
        rx.cond(
            ChatState.resuming,
            rx.hstack(
                rx.spinner(size="1"),
                rx.text("Resuming the run…", size="2", color_scheme="gray"),
                id="resuming",
                role="status",
                align="center",
            ),
        ),
        rx.cond(
            ChatState.run_error != "",
            rx.callout(
                ChatState.run_error,
                icon="circle_alert",
                color_scheme="red",
                size="1",
                id="run-error",
            ),
        ),
        width="100%",
    )


def empty_transcript() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.heading("What can the ops desk do for you?", size="4", weight="medium"),
            rx.text(
                "The agent pauses for your sign-off before anything that matters. Try one:",
                size="2",
                color_scheme="gray",
            ),
            rx.flex(
                rx.foreach(
                    SUGGESTIONS,
                    lambda text: rx.button(
                        text,
                        on_click=ChatState.use_suggestion(text),
                        variant="surface",
                        radius="full",
                        size="2",
                        class_name="suggestion",
                    ),
                ),
                wrap="wrap",
                gap="2",
                justify="center",
            ),
            align="center",
            spacing="3",
            max_width="560px",
            padding="1em",
        ),
        height="100%",
        id="transcript-empty",
    )


def transcript() -> rx.Component:
    return rx.box(
        rx.cond(
            ChatState.has_messages,
            rx.vstack(
                rx.foreach(ChatState.archive, _row),
                rx.foreach(ChatState.recent, _row),
                rx.foreach(ChatState.turn, _row),
                streaming_row(),
                rx.foreach(ChatState.loose_decisions, loose_decision),
                batch_bar(),
                status_row(),
                spacing="3",
                width="100%",
                padding="1.25em",
            ),
            empty_transcript(),
        ),
        flex="1",
        width="100%",
        overflow_y="auto",
        id="transcript",
        role="log",
        aria_label="Conversation",
    )

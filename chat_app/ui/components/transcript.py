"""The scrolling list of chat messages."""

import reflex as rx

from chat_app.ui.state import ChatMessage, ChatState


def message_bubble(message: ChatMessage) -> rx.Component:
    """One message; user messages sit on the right."""
    is_user = message.role == "user"
    return rx.box(
        rx.box(
            rx.text(message.content, size="3", white_space="pre-wrap", overflow_wrap="anywhere"),
            padding_x="0.9em",
            padding_y="0.55em",
            border_radius="12px",
            max_width="75%",
            background_color=rx.cond(is_user, rx.color("accent", 4), rx.color("gray", 3)),
            class_name="chat-message",
            data_role=message.role,
        ),
        display="flex",
        justify_content=rx.cond(is_user, "flex-end", "flex-start"),
        width="100%",
    )


def empty_transcript() -> rx.Component:
    """Placeholder shown before the first message."""
    return rx.center(
        rx.vstack(
            rx.text("No messages yet", size="3", weight="medium", color_scheme="gray"),
            rx.text(
                "Ask the agent something. Tool calls that need your sign-off show up here.",
                size="2",
                color_scheme="gray",
            ),
            align="center",
            spacing="1",
        ),
        height="100%",
        id="transcript-empty",
    )


def transcript() -> rx.Component:
    """The message list, or a placeholder when it is empty."""
    return rx.box(
        rx.cond(
            ChatState.has_messages,
            rx.vstack(
                rx.foreach(ChatState.messages, message_bubble),
                spacing="2",
                width="100%",
                padding="1.25em",
            ),
            empty_transcript(),
        ),
        flex="1",
        width="100%",
        overflow_y="auto",
        id="transcript",
    )

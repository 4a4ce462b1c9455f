"""Text input plus Send button."""

import reflex as rx

from chat_app.ui.state import ChatState


def composer() -> rx.Component:
    """Message composer; Enter or the Send button submits."""
    return rx.form(
        rx.hstack(
            rx.input(
                value=ChatState.draft,
                on_change=ChatState.set_draft,
                placeholder="Type a message…",
                size="3",
                flex="1",
                auto_complete="off",
                id="composer-input",
            ),
            rx.button("Send", type="submit", size="3", id="composer-send"),
            spacing="2",
            width="100%",
        ),
        on_submit=ChatState.send,
        reset_on_submit=False,
        width="100%",
        padding="1em",
        border_top=f"1px solid {rx.color('gray', 5)}",
        background_color=rx.color("gray", 1),
    )

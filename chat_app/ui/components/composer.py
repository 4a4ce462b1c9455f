"""The composer: Enter sends; while decisions are pending a message is held, not lost."""

import reflex as rx

from chat_app.ui.state import HELD_NOTICE, ChatState


def composer() -> rx.Component:
    return rx.vstack(
        rx.cond(
            ChatState.held,
            rx.callout(HELD_NOTICE, icon="info", size="1", id="held-notice", role="status"),
        ),
        rx.form(
            rx.hstack(
                rx.input(
                    value=ChatState.draft,
                    on_change=ChatState.set_draft,
                    placeholder=rx.cond(
                        ChatState.open_count > 0,
                        "Decisions are pending above…",
                        "Ask the ops desk…",
                    ),
                    size="3",
                    flex="1",
                    auto_complete="off",
                    id="composer-input",
                    name="message",
                    aria_label="Message",
                ),
                rx.cond(
                    ChatState.running & ~ChatState.resuming,
                    rx.button(
                        "Stop",
                        type="button",
                        on_click=ChatState.stop,
                        size="3",
                        color_scheme="red",
                        variant="soft",
                        id="composer-stop",
                    ),
                    rx.button(
                        "Send",
                        type="submit",
                        size="3",
                        id="composer-send",
                        disabled=ChatState.running,
                    ),
                ),
                spacing="2",
                width="100%",
            ),
            on_submit=ChatState.send,
            reset_on_submit=False,
            width="100%",
        ),
        width="100%",
        spacing="2",
        padding="1em",
        border_top=f"1px solid {rx.color('gray', 5)}",
        background_color=rx.color("gray", 1),
    )

"""The Conversations page: the signed-in person's conversations, newest first, each with its
own address; New conversation."""

import reflex as rx

from chat_app.ui.components.conversation_list import conversation_list
from chat_app.ui.components.page import page_frame
from chat_app.ui.conversations_state import ConversationsState
from chat_app.ui.pages.index import signed_in_header
from chat_app.ui.state import ChatState

#: New conversation: the tab's chat leaves the conversation it shows (a plain link to `/`
#: would show that one again), then the chat opens.
NEW_CONVERSATION = [ChatState.new_conversation, rx.redirect("/")]


def conversations() -> rx.Component:
    return page_frame(
        signed_in_header(),
        rx.vstack(
            rx.flex(
                rx.heading("Conversations", size="5", as_="h1"),
                rx.button(
                    rx.icon("plus", size=14),
                    "New conversation",
                    on_click=NEW_CONVERSATION,
                    size="2",
                    id="new-conversation",
                ),
                justify="between",
                align="center",
                gap="0.75em",
                wrap="wrap",
                width="100%",
            ),
            conversation_list(
                rows=ConversationsState.rows,
                loaded=ConversationsState.loaded,
                problem=ConversationsState.problem,
                on_new=NEW_CONVERSATION,
            ),
            padding="1.25em",
            spacing="3",
            width="100%",
            id="conversations-page",
        ),
    )

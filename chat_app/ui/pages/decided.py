"""The Inbox's "Decided by you" list: what the signed-in person decided, newest first, each
opening its conversation."""

import reflex as rx

from chat_app.ui.components.decided_list import decided_list
from chat_app.ui.components.inbox_list import inbox_tabs
from chat_app.ui.components.page import page_frame
from chat_app.ui.decided_state import ROUTE, DecidedState
from chat_app.ui.pages.index import signed_in_header


def decided() -> rx.Component:
    return page_frame(
        signed_in_header(),
        rx.vstack(
            rx.heading("Inbox", size="5", as_="h1"),
            inbox_tabs(ROUTE),
            decided_list(
                rows=DecidedState.rows,
                loaded=DecidedState.loaded,
                problem=DecidedState.problem,
            ),
            padding="1.25em",
            spacing="3",
            width="100%",
            id="decided-page",
        ),
    )

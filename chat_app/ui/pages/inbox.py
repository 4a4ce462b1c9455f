"""The Inbox page: every pending decision the signed-in person may make, across conversations
and requesters, filtered by tool and requester; each opens its conversation and card."""

import reflex as rx

from chat_app.ui.components.inbox_list import inbox_filters, inbox_list, inbox_tabs
from chat_app.ui.components.page import page_frame
from chat_app.ui.inbox_state import ROUTE, InboxState
from chat_app.ui.pages.index import signed_in_header


def inbox() -> rx.Component:
    return page_frame(
        signed_in_header(),
        rx.vstack(
            rx.flex(
                rx.heading("Inbox", size="5", as_="h1"),
                rx.cond(
                    InboxState.loaded & (InboxState.problem == ""),
                    rx.text(
                        InboxState.count_label,
                        size="2",
                        color_scheme="gray",
                        id="inbox-total",
                        role="status",
                    ),
                ),
                align="baseline",
                gap="0.75em",
                wrap="wrap",
                width="100%",
            ),
            inbox_tabs(ROUTE),
            inbox_filters(
                tools=InboxState.tools,
                tool=InboxState.tool,
                on_tool=InboxState.set_tool,
                requesters=InboxState.requesters,
                requester=InboxState.requester,
                on_requester=InboxState.set_requester,
                is_admin=InboxState.is_admin,
                everyone=InboxState.everyone,
                on_everyone=InboxState.set_everyone,
            ),
            inbox_list(
                rows=InboxState.rows,
                loaded=InboxState.loaded,
                problem=InboxState.problem,
                filtered=InboxState.filtered,
                on_clear=InboxState.clear_filters,
            ),
            rx.cond(
                InboxState.more_label != "",
                rx.button(
                    InboxState.more_label,
                    on_click=InboxState.show_more,
                    variant="soft",
                    size="2",
                    id="inbox-more",
                ),
            ),
            padding="1.25em",
            spacing="3",
            width="100%",
            id="inbox-page",
        ),
    )

"""The bar over a conversation: whose it is, what the desk says about it, New conversation."""

from __future__ import annotations

import reflex as rx

from ._types import Handler, Prop


def conversation_bar(
    *,
    owner_name: Prop[str],
    read_only: Prop[bool],
    notice: Prop[str],
    has_messages: Prop[bool],
    yours: Prop[int],
    on_new: Handler,
) -> rx.Component:
    """`notice` (why the conversation cannot be shown, or a message cannot be sent) first;
    then, on someone else's conversation, whose it is and whether any of its decisions
    (`yours`: how many) waits for this person; New conversation once there is one."""
    return rx.vstack(
        rx.cond(
            notice != "",
            rx.callout.root(
                rx.callout.icon(rx.icon("info")),
                rx.callout.text(notice),
                size="1",
                color_scheme="amber",
                id="desk-notice",
                role="alert",
                width="100%",
            ),
        ),
        rx.cond(
            has_messages | read_only,
            rx.hstack(
                rx.cond(
                    read_only & (owner_name != ""),
                    rx.text(
                        owner_name,
                        rx.cond(
                            yours > 0,
                            "'s conversation — you decide what is yours to decide here",
                            "'s conversation — nothing here waits for you",
                        ),
                        size="2",
                        color_scheme="gray",
                        id="read-only-note",
                    ),
                    rx.box(),
                ),
                rx.button(
                    rx.icon("plus", size=14),
                    "New conversation",
                    on_click=on_new,
                    size="1",
                    variant="soft",
                    id="new-conversation",
                ),
                justify="between",
                align="center",
                width="100%",
                # The log scrolls under this line: without it the soft button and the user's
                # bubble beneath it (both accent, both on the right) read as one shape.
                padding_bottom="0.5em",
                border_bottom=f"1px solid {rx.color('gray', 5)}",
            ),
        ),
        spacing="2",
        width="100%",
        padding_x="1.25em",
        padding_top="0.75em",
    )

"""What a page says while its connection to the server is lost.

Reflex's own overlay shows its framework's words ("Cannot connect to server: websocket
error. Check if server is reachable at ws://…") in a toast that covers the bottom of a
phone's screen. This one says what the person needs: that the page is reconnecting, and
that what they do meanwhile is not lost (Reflex queues the page's events while the socket
is down and sends them once it is back)."""

from __future__ import annotations

import reflex as rx
from reflex_components_core.core.banner import has_too_many_connection_errors

__all__ = ["CONNECTION_LOST", "connection_notice"]

CONNECTION_LOST = (
    "Connection to the server lost; reconnecting… What you do meanwhile is sent once it is "
    "back."
)


def connection_notice() -> rx.Component:
    """A line across the top of the page while the connection is lost: from the second
    failed attempt (a single one is often a blip that the next attempt mends)."""
    return rx.cond(
        has_too_many_connection_errors,
        rx.box(
            rx.text(CONNECTION_LOST, size="2"),
            id="connection-lost",
            role="status",
            position="fixed",
            top="0",
            left="0",
            right="0",
            z_index="1000",
            padding="0.4em 1em",
            text_align="center",
            background_color=rx.color("amber", 3),
            color=rx.color("amber", 11),
            border_bottom=f"1px solid {rx.color('amber', 6)}",
        ),
    )

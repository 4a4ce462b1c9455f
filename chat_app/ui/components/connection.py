"""What a page says while its connection to the server is lost.

Reflex's own overlay shows its framework's words ("Cannot connect to server: websocket
error. Check if server is reachable at ws://…") in a toast that covers the bottom of a
phone's screen. This one says what the person needs: that the page is reconnecting, and
that what they do meanwhile is not lost (Reflex queues the page's events while the socket
is down and sends them once it is back), unless the page goes first."""

from __future__ import annotations

import reflex as rx
from reflex_components_core.core.banner import (
    has_hydration_payload_error,
    has_too_many_connection_errors,
)

__all__ = ["CONNECTION_LOST", "TOO_LARGE", "connection_notice"]

CONNECTION_LOST = (
    "Connection to the server lost; reconnecting… What you do meanwhile is sent once it is "
    "back, unless this page is closed or reloaded first."
)
#: Reflex's own case, which it stops retrying on: the page's state did not fit the socket.
TOO_LARGE = "This page could not load from the server (its state is too large). Reload it."


def connection_notice() -> rx.Component:
    """A line across the top of the page while the connection is lost: from the second
    failed attempt (a single one is often a blip that the next attempt mends). The live
    region stays in the page, empty, so that its words are announced when they come. Each
    page's frame (`page.page_frame`) puts it above the header."""
    lost = has_too_many_connection_errors | has_hydration_payload_error
    return rx.box(
        rx.cond(
            has_hydration_payload_error,
            rx.text(TOO_LARGE, size="2"),
            rx.cond(has_too_many_connection_errors, rx.text(CONNECTION_LOST, size="2")),
        ),
        id="connection-lost",
        role="status",
        position="sticky",
        top="0",
        width="100%",
        z_index="1000",
        text_align="center",
        padding=rx.cond(lost, "0.4em 1em", "0"),
        background_color=rx.cond(lost, rx.color("amber", 3), "transparent"),
        color=rx.color("amber", 11),
        border_bottom=rx.cond(lost, f"1px solid {rx.color('amber', 6)}", "none"),
        pointer_events=rx.cond(lost, "auto", "none"),
    )

"""The chat page: header, transcript with inline decisions, composer."""

import reflex as rx

from chat_app.ui.components.composer import composer
from chat_app.ui.components.header import header
from chat_app.ui.components.transcript import transcript


def index() -> rx.Component:
    """Full-height chat shell; works from phone width up."""
    return rx.box(
        rx.vstack(
            header(),
            transcript(),
            composer(),
            spacing="0",
            height="100dvh",
            max_width="860px",
            margin_x="auto",
            border_x=f"1px solid {rx.color('gray', 4)}",
            background_color=rx.color("gray", 1),
        ),
        background_color=rx.color("gray", 2),
        min_height="100dvh",
        id="app-root",
        # Browser tests wait for data-hydrated="true" before interacting.
        custom_attrs={"data-hydrated": rx.cond(rx.State.is_hydrated, "true", "false")},
    )

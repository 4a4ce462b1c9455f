"""The frame every page shares: a centred column on a grey ground, marked for the tests."""

from __future__ import annotations

import reflex as rx


def page_frame(*children: rx.Component, max_width: str = "860px", **column: object) -> rx.Component:
    """`children` in a full-height centred column (`column` styles it further, e.g. a fixed
    height); `#app-root` says when it is hydrated."""
    return rx.box(
        rx.vstack(
            *children,
            spacing="0",
            max_width=max_width,
            margin_x="auto",
            min_height="100dvh",
            background_color=rx.color("gray", 1),
            **column,
        ),
        background_color=rx.color("gray", 2),
        min_height="100dvh",
        id="app-root",
        # Browser tests wait for data-hydrated="true" before interacting.
        custom_attrs={"data-hydrated": rx.cond(rx.State.is_hydrated, "true", "false")},
    )

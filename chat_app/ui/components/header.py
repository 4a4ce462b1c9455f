"""Top bar with the product name."""

import reflex as rx


def header() -> rx.Component:
    """The app's header bar."""
    return rx.hstack(
        rx.hstack(
            rx.image(src="/logo.svg", width="28px", height="28px", alt=""),
            rx.heading("Ops desk", size="5", weight="bold", white_space="nowrap"),
            align="center",
            spacing="3",
        ),
        rx.hstack(
            rx.text(
                "chat_app — human sign-off for AI agents",
                size="2",
                color_scheme="gray",
                # Hidden on phones, where it would squeeze the title.
                display=["none", "none", "block"],
            ),
            rx.link("Chat", href="/", size="2", id="nav-chat"),
            rx.link("Audit", href="/audit", size="2", id="nav-audit"),
            rx.color_mode.button(size="2", variant="ghost", aria_label="Toggle dark mode"),
            align="center",
            spacing="3",
        ),
        justify="between",
        align="center",
        width="100%",
        padding_x="1.25em",
        padding_y="0.75em",
        border_bottom=f"1px solid {rx.color('gray', 5)}",
        background_color=rx.color("gray", 1),
        id="header",
    )

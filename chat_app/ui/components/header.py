"""Top bar: the product name, the pages, and who is signed in (with the demo switcher)."""

from __future__ import annotations

import reflex as rx

from ._types import Prop
from .posting import post_and_follow

_SWITCH = post_and_follow("/api/signin/demo", {"email": "demo-person"}, {"next": "/"})


def _demo_switcher(choices: list[list[str]], viewer_email: Prop[str]) -> rx.Component:
    """Pick a demo person: the server sets their cookie and sends the page back."""
    return rx.hstack(
        rx.el.label(
            "Demo sign-in:",
            html_for="demo-person",
            font_size="0.75rem",
            color=rx.color("gray", 11),
            white_space="nowrap",
        ),  # fmt: skip
        rx.el.select(
            *[rx.el.option(label, value=email) for email, label in choices],
            # Controlled: it shows who the server says is signed in, once the page loads.
            value=viewer_email,
            id="demo-person",
            # A choice signs in at once.
            on_change=_SWITCH,
            style={"fontSize": "0.85rem", "padding": "0.15em 0.3em", "borderRadius": "6px"},
        ),
        align="center",
        spacing="2",
        id="demo-switch",
    )


def _sign_out() -> rx.Component:
    return rx.button(
        "Sign out",
        size="1",
        variant="soft",
        id="sign-out",
        on_click=post_and_follow("/api/signout", {}, {}),
    )


def viewer_menu(
    *,
    auth_mode: Prop[str],
    viewer_name: Prop[str],
    viewer_email: Prop[str],
    demo_choices: list[list[str]],
) -> rx.Component:
    """Who is signed in and how to change it: the demo switcher, or sign-out."""
    return rx.match(
        auth_mode,
        ("demo", _demo_switcher(demo_choices, viewer_email)),
        (
            "password",
            # Nobody signed in yet (the sign-in page): nothing to show, nothing to sign out of.
            rx.cond(
                viewer_email != "",
                rx.hstack(
                    rx.text(viewer_name, size="2", id="viewer-name"),
                    _sign_out(),
                    align="center",
                    spacing="2",
                ),
            ),
        ),
        ("proxy", rx.text(viewer_name, size="2", id="viewer-name")),
        rx.fragment(),
    )


def auth_banner(*, auth_mode: Prop[str], auth_error: Prop[str]) -> rx.Component:
    """What the page must say plainly about sign-in: demo accounts, none at all, or why
    nobody is signed in."""
    return rx.cond(
        auth_error != "",
        rx.callout(auth_error, icon="lock", color_scheme="red", id="auth-error", role="alert"),
        rx.match(
            auth_mode,
            (
                "demo",
                rx.callout(
                    "Demo sign-in: these are demo accounts, and anyone can switch between "
                    "them. Set CHAT_APP_AUTH to password or proxy for real sign-in.",
                    icon="info",
                    size="1",
                    color_scheme="amber",
                    id="auth-banner",
                ),
            ),
            (
                "none",
                rx.callout(
                    "No sign-in: anyone who can open this page can approve.",
                    icon="triangle_alert",
                    size="1",
                    color_scheme="red",
                    id="auth-banner",
                ),
            ),
            rx.fragment(),
        ),
    )


def header(viewer: rx.Component | None = None) -> rx.Component:
    """The app's header bar; `viewer` shows who is signed in."""
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
                # Only on wide screens: beside the sign-in menu it would squeeze the title.
                display=["none", "none", "none", "none", "none", "block"],
            ),
            rx.link("Chat", href="/", size="2", id="nav-chat"),
            rx.link("Audit", href="/audit", size="2", id="nav-audit"),
            viewer if viewer is not None else rx.fragment(),
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

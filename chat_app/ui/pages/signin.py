"""The sign-in page: a plain form the server answers (it sets an HttpOnly cookie), so the
password never passes through the page's state."""

import reflex as rx

from chat_app.ui.components.header import mark_signed_in_script
from chat_app.ui.components.page import page_frame
from chat_app.ui.components.posting import post_and_follow
from chat_app.ui.identity_state import DEMO_CHOICES, SIGN_IN_ROUTE
from chat_app.ui.pages.index import signed_in_header
from chat_app.ui.signin_state import SignInState


def _demo_people() -> rx.Component:
    """The demo's people, each a button that signs in as them and goes where the page was
    asked for (the chat by default)."""
    return rx.vstack(
        rx.heading("Demo sign-in", size="5", as_="h1"),
        rx.text(
            "These are demo accounts: anyone may be anyone. Pick who you are.",
            size="2", color_scheme="gray",
        ),  # fmt: skip
        *[
            rx.button(
                label,
                on_click=post_and_follow(
                    "/api/signin/demo", {}, {"email": email}, query={"next": "next"}
                ),
                variant="soft",
                width="100%",
                class_name="demo-person-choice",
                data_email=email,
            )
            for email, label in DEMO_CHOICES
        ],
        spacing="2",
        width="100%",
        max_width="360px",
        id="demo-people",
    )


def _form() -> rx.Component:
    submit = post_and_follow(
        "/api/signin",
        {"email": "signin-email", "password": "signin-password"},
        {},
        query={"next": "next"},
        then=mark_signed_in_script(SIGN_IN_ROUTE),
    )
    return rx.form(
        rx.vstack(
            rx.heading("Sign in", size="5", as_="h1"),
            rx.cond(
                SignInState.error != "",
                rx.callout(
                    SignInState.error,
                    icon="lock",
                    color_scheme="red",
                    id="signin-error",
                    role="alert",
                ),  # fmt: skip
            ),
            rx.el.label("Email", html_for="signin-email", font_size="0.9rem"),
            rx.input(
                id="signin-email",
                type="email",
                required=True,
                # The email typed before a refused sign-in (the server sends it back).
                default_value=SignInState.email,
                key=SignInState.email,
                auto_complete="username",
                width="100%",
            ),  # fmt: skip
            rx.el.label("Password", html_for="signin-password", font_size="0.9rem"),
            rx.input(
                id="signin-password",
                type="password",
                required=True,
                auto_complete="current-password",
                width="100%",
            ),  # fmt: skip
            rx.button("Sign in", type="submit", id="signin-submit", width="100%"),
            spacing="2",
            width="100%",
        ),
        on_submit=submit,
        id="signin-form",
        style={"width": "100%", "maxWidth": "360px"},
    )


def signin() -> rx.Component:
    return page_frame(
        # Only this page's own message: "Sign in first" would repeat what the page is for.
        signed_in_header(banner=False, pages=False, on_storage=SignInState.look_again_here),
        rx.center(
            rx.cond(
                SignInState.auth_mode == "password",
                rx.cond(
                    SignInState.viewer_email != "",
                    rx.vstack(
                        rx.heading("Sign in", size="5", as_="h1"),
                        rx.text(
                            "Signed in as ",
                            rx.text.strong(SignInState.viewer_name),
                            id="signed-in-as",
                        ),  # fmt: skip
                        rx.link(
                            rx.cond(SignInState.back == "/", "Back to the chat", "Go back"),
                            href=SignInState.back,
                            id="signed-in-back",
                        ),
                        align="center",
                    ),
                    _form(),
                ),
                rx.cond(
                    SignInState.auth_mode == "demo",
                    _demo_people(),
                    rx.vstack(
                        rx.heading("Sign in", size="5", as_="h1"),
                        rx.text(
                            "This app does not sign in with a password (CHAT_APP_AUTH is ",
                            SignInState.auth_mode,
                            ").",
                            id="signin-not-password",
                        ),
                        align="center",
                    ),
                ),
            ),
            padding="2em",
            width="100%",
        ),
    )

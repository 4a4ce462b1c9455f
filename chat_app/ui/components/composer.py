"""The composer: Enter sends; while decisions are pending (the person's own, or someone
else's), or while the agent still answers, a message is held, not lost, and the person is
told why."""

from __future__ import annotations

import reflex as rx

from ._types import Handler, Prop

#: The message box's id (the transcript follows its end again when it is sent).
INPUT_ID = "composer-input"


def composer(
    *,
    draft: Prop[str],
    held: Prop[str],
    open_count: Prop[int],
    running: Prop[bool],
    resuming: Prop[bool],
    read_only: Prop[bool],
    missing: Prop[bool],
    owner_name: Prop[str],
    on_draft: Handler,
    on_send: Handler,
    on_stop: Handler,
) -> rx.Component:
    """The message box with Send, or Stop while a reply streams (not while resuming).

    `held` says why a message sent was kept rather than sent (decisions are pending, or the
    agent still answers), "" when it was not; the placeholder points at the decisions while
    `open_count` is above 0. In someone else's conversation (`read_only`, theirs:
    `owner_name`), or at an address that names none (`missing`), the placeholder says so
    before anything is typed, and Send is off; what is typed stays a draft.
    """
    elsewhere = rx.cond(
        owner_name != "",
        # Short: a phone shows some thirty characters of it (the bar above says the rest).
        "Only " + owner_name + " writes here",
        rx.cond(missing, "No conversation here", "Only its owner writes here"),
    )
    return rx.vstack(
        # The live region is always on the page, empty until there is something to say:
        # screen readers announce text put into a region, often not a region put in whole.
        rx.box(
            rx.cond(
                held != "",
                rx.callout(held, icon="info", size="1", id="held-notice", margin_bottom="0.5em"),
            ),
            role="status",
            aria_label="Message status",
            id="composer-status",
            width="100%",
        ),
        rx.form(
            rx.hstack(
                rx.input(
                    value=draft,
                    on_change=on_draft,
                    placeholder=rx.cond(
                        read_only,
                        elsewhere,
                        rx.cond(
                            open_count > 0, "Decisions are pending above…", "Ask the ops desk…"
                        ),
                    ),
                    size="3",
                    flex="1",
                    auto_complete="off",
                    id=INPUT_ID,
                    name="message",
                    aria_label="Message",
                ),
                rx.cond(
                    running & ~resuming,
                    rx.button(
                        "Stop",
                        type="button",
                        on_click=on_stop,
                        size="3",
                        color_scheme="red",
                        variant="soft",
                        id="composer-stop",
                    ),
                    rx.button(
                        "Send",
                        type="submit",
                        size="3",
                        id="composer-send",
                        disabled=read_only,
                        # Off because the conversation is someone else's, not for a run.
                        data_read_only=read_only,
                        # While the agent answers (a continuation, which has no Stop) Send
                        # looks and reads as off, but still submits: a disabled submit
                        # button would make Enter do nothing, and the person is told why.
                        aria_disabled=rx.cond(running | read_only, "true", "false"),
                        # Radix's own mark of a disabled button, which this attribute
                        # replaces: set for both reasons.
                        custom_attrs={
                            "data-disabled": rx.cond(running | read_only, "true", None)
                        },
                    ),
                ),
                spacing="2",
                width="100%",
            ),
            on_submit=on_send,
            reset_on_submit=False,
            width="100%",
        ),
        width="100%",
        spacing="0",
        padding="1em",
        border_top=f"1px solid {rx.color('gray', 5)}",
        background_color=rx.color("gray", 1),
    )

"""Decision cards: approvals inline at their tool call, generic questions, unbound pauses, and
the batch bar."""

from __future__ import annotations

from typing import Any

import reflex as rx

from chat_app.ui.state import ChatState
from chat_app.ui.views import DecisionView

from .schema_form import schema_form


def _error(decision: DecisionView) -> rx.Component:
    return rx.cond(
        decision.error != "",
        rx.callout(
            decision.error,
            icon="triangle_alert",
            color_scheme="red",
            size="1",
            role="alert",
            class_name="decision-error",
        ),
    )


def _arguments(decision: DecisionView) -> rx.Component:
    return rx.el.dl(
        rx.foreach(
            decision.arguments,
            lambda row: rx.fragment(
                rx.el.dt(row[0], font_weight="500", color=rx.color("gray", 11)),
                rx.el.dd(row[1], margin="0", white_space="pre-wrap", overflow_wrap="anywhere"),
            ),
        ),
        display="grid",
        grid_template_columns="max-content 1fr",
        column_gap="1em",
        row_gap="0.25em",
        font_size="0.875rem",
        margin="0",
    )


def _panel(
    decision: DecisionView, form: str, fields: object, submit: str, color: str
) -> tuple[str, rx.Component]:
    """One `rx.match` case: the form that opens under Approve…, Reject… or Edit arguments."""
    button = rx.button(submit, type="submit", color_scheme=color, class_name="submit")
    return form, schema_form(decision.id, form, fields, button, key=decision.id + "-" + form)


def _answer_button(
    decision: DecisionView, form: str, fields: Any, answer: Any, **style: Any
) -> rx.Component:
    """Approve / Reject: answers at once, or opens its form ("…") when the schema asks."""
    label = form.capitalize()
    return rx.cond(
        fields.length() > 0,
        rx.button(
            label + "…",
            on_click=ChatState.toggle_panel(decision.id, form),
            class_name=form,
            **style,
        ),
        rx.button(label, on_click=answer(decision.id), class_name=form, **style),
    )


def approval_controls(decision: DecisionView) -> rx.Component:
    """Approve, Reject (with a reason form when the schema asks), Edit arguments, Cancel."""
    approve_button = _answer_button(
        decision,
        "approve",
        decision.approve_fields,
        ChatState.approve,
        color_scheme="green",
        auto_focus=decision.focus,
    )
    reject_button = _answer_button(
        decision,
        "reject",
        decision.reject_fields,
        ChatState.reject,
        color_scheme="red",
        variant="soft",
    )
    return rx.vstack(
        rx.hstack(
            approve_button,
            reject_button,
            rx.cond(
                decision.can_edit,
                rx.button(
                    "Edit arguments",
                    on_click=ChatState.toggle_panel(decision.id, "edit"),
                    variant="outline",
                    class_name="edit",
                ),
            ),
            rx.button(
                "Cancel",
                on_click=ChatState.cancel_decision(decision.id),
                variant="ghost",
                color_scheme="gray",
                class_name="cancel",
            ),
            spacing="2",
            wrap="wrap",
        ),
        rx.match(
            decision.panel,
            _panel(decision, "approve", decision.approve_fields, "Approve", "green"),
            _panel(decision, "reject", decision.reject_fields, "Reject", "red"),
            _panel(decision, "edit", decision.edit_fields, "Approve with changes", "green"),
            rx.fragment(),
        ),
        _error(decision),
        spacing="2",
        width="100%",
    )


def expired_row(decision: DecisionView) -> rx.Component:
    """An interrupt past its expiry: nothing can be answered, nothing ran."""
    return rx.hstack(
        rx.badge("Expired", color_scheme="gray", class_name="expired-badge"),
        rx.text("This decision expired; nothing ran.", size="2", color_scheme="gray"),
        rx.button("Start over", on_click=ChatState.start_over, size="1", class_name="start-over"),
        align="center",
        spacing="2",
        wrap="wrap",
        class_name="expired",
    )


def staged_row(decision: DecisionView) -> rx.Component:
    """An answer given while other decisions of the batch are still open."""
    return rx.hstack(
        # The icon says which answer it is: a green check on "Rejected" read as approval.
        rx.match(
            decision.staged_tone,
            ("rejected", rx.icon("circle_x", size=16, color=rx.color("red", 10))),
            ("cancelled", rx.icon("circle_minus", size=16, color=rx.color("gray", 10))),
            rx.icon("circle_check", size=16, color=rx.color("green", 10)),
        ),
        rx.text(decision.staged, size="2", weight="medium", class_name="staged-label"),
        rx.text("— sent with the other decisions.", size="2", color_scheme="gray"),
        rx.button(
            "Change",
            on_click=ChatState.change_answer(decision.id),
            variant="ghost",
            size="1",
            class_name="change",
        ),
        align="center",
        spacing="2",
        class_name="staged",
    )


def _decision_card(
    decision: DecisionView,
    *,
    kind: str,
    icon: str,
    title: rx.Var[str] | str,
    color: str,
    details: list[rx.Component],
    controls: rx.Component,
    cannot: str,
) -> rx.Component:
    """The frame every answerable decision shares: heading, details, then what can be done
    (nothing once expired, the staged answer, the controls, or a note that it is not ours)."""
    return rx.box(
        rx.vstack(
            rx.hstack(
                rx.icon(icon, size=16),
                rx.text(title, weight="bold", size="2"),
                align="center",
                spacing="2",
            ),
            *details,
            rx.cond(
                decision.expired,
                expired_row(decision),
                rx.cond(
                    decision.staged != "",
                    staged_row(decision),
                    rx.cond(
                        decision.can_resolve,
                        controls,
                        rx.text(cannot, size="1", color_scheme="gray"),
                    ),
                ),
            ),
            spacing="2",
            width="100%",
        ),
        class_name=f"decision {kind}-card",
        role="group",
        aria_label=title,
        data_decision=decision.id,
        padding="0.75em",
        border_radius="8px",
        border=f"1px solid {rx.color(color, 7)}",
        background_color=rx.color(color, 2),
        width="100%",
    )


def approval_card(decision: DecisionView) -> rx.Component:
    return _decision_card(
        decision,
        kind="approval",
        icon="shield_check",
        title=decision.title,
        color="amber",
        details=[_arguments(decision)],
        controls=approval_controls(decision),
        cannot="This decision cannot be answered here.",
    )


def generic_card(decision: DecisionView) -> rx.Component:
    payload = [
        rx.cond(
            decision.payload_title != "",
            rx.text(decision.payload_title, weight="medium", size="2"),
        ),
        rx.cond(
            decision.payload_items.length() > 0,
            rx.el.ul(
                rx.foreach(decision.payload_items, lambda item: rx.el.li(item)),
                margin="0",
                padding_left="1.25em",
                font_size="0.875rem",
            ),
        ),
        rx.cond(
            decision.payload_json != "",
            rx.code_block(decision.payload_json, language="json", font_size="0.75rem"),
        ),
    ]
    form = rx.vstack(
        schema_form(
            decision.id,
            "response",
            decision.response_fields,
            rx.button(
                "Submit",
                type="submit",
                class_name="submit",
                auto_focus=decision.focus,
            ),
            rx.button(
                "Cancel",
                type="button",
                on_click=ChatState.cancel_decision(decision.id),
                variant="ghost",
                color_scheme="gray",
                class_name="cancel",
            ),
            key=decision.id + "-response",
        ),
        _error(decision),
        width="100%",
    )
    return _decision_card(
        decision,
        kind="generic",
        icon="message_circle_question",
        title=decision.message,
        color="indigo",
        details=payload,
        controls=form,
        cannot="This question cannot be answered here.",
    )


def unbound_card(decision: DecisionView) -> rx.Component:
    return rx.hstack(
        rx.icon("hourglass", size=16),
        rx.text("Paused elsewhere: ", rx.text.span(decision.message), size="2"),
        class_name="decision unbound-card",
        role="status",
        data_decision=decision.id,
        padding="0.6em 0.75em",
        border_radius="8px",
        border=f"1px dashed {rx.color('gray', 7)}",
        color=rx.color("gray", 11),
        align="center",
        spacing="2",
        width="100%",
    )


def loose_decision(decision: DecisionView) -> rx.Component:
    return rx.match(
        decision.kind,
        ("generic", generic_card(decision)),
        ("unbound", unbound_card(decision)),
        approval_card(decision),
    )


def batch_bar() -> rx.Component:
    """Shown when several decisions are pending: bulk actions, batch errors, retry."""
    return rx.cond(
        ((ChatState.batch_size > 1) & (ChatState.open_count > 0))
        | (ChatState.batch_errors.length() > 0),
        rx.vstack(
            rx.hstack(
                rx.text(ChatState.batch_title, weight="bold", size="2", id="batch-title"),
                rx.spacer(),
                rx.cond(
                    ChatState.bulk_ok & (ChatState.open_count > 1),
                    rx.hstack(
                        rx.button(
                            "Approve all",
                            on_click=ChatState.approve_all,
                            color_scheme="green",
                            size="1",
                            id="approve-all",
                        ),
                        rx.button(
                            "Reject all",
                            on_click=ChatState.reject_all,
                            color_scheme="red",
                            variant="soft",
                            size="1",
                            id="reject-all",
                        ),
                        spacing="2",
                    ),
                ),  # fmt: skip
                rx.cond(
                    ChatState.open_count > 1,
                    rx.button(
                        "Cancel all",
                        on_click=ChatState.cancel_all,
                        variant="ghost",
                        color_scheme="gray",
                        size="1",
                        id="cancel-all",
                    ),
                ),
                align="center",
                width="100%",
                wrap="wrap",
            ),
            rx.foreach(
                ChatState.batch_errors,
                lambda message: rx.text(message, size="1", color=rx.color("red", 11), role="alert"),
            ),
            rx.cond(
                ChatState.can_retry,
                rx.button("Retry", on_click=ChatState.retry, size="1", id="retry"),
            ),
            class_name="batch-bar",
            role="region",
            aria_label="Pending decisions",
            padding="0.6em 0.9em",
            border_radius="8px",
            background_color=rx.color("gray", 3),
            width="100%",
            spacing="1",
        ),
    )

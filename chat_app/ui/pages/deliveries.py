"""The Deliveries page (admins): every notice queued, newest first, how it went, and which
channels are configured."""

import reflex as rx

from chat_app.ui.components.page import page_frame, refusal
from chat_app.ui.components.records_table import record_cell, records_table
from chat_app.ui.deliveries_state import DeliveriesState, DeliveryRow
from chat_app.ui.pages.index import signed_in_header

AT = "When (UTC)"
EVENT = "Event"
ABOUT = "About"
CHANNEL = "Channel"
TO = "To"
STATUS = "Status"
ATTEMPTS = "Attempts"
WHY = "Last error or reason"
CONVERSATION = "Conversation"
#: The table's columns, in order.
COLUMNS = (AT, EVENT, ABOUT, CHANNEL, TO, STATUS, ATTEMPTS, WHY, CONVERSATION)


def _row(row: DeliveryRow) -> rx.Component:
    return rx.table.row(
        record_cell(
            AT, rx.el.time(row.at, date_time=row.at_iso), white_space="nowrap", class_name="at"
        ),
        record_cell(EVENT, row.event, class_name="event"),
        record_cell(ABOUT, row.what, class_name="what", overflow_wrap="break-word"),
        record_cell(CHANNEL, rx.badge(row.channel, variant="outline"), class_name="channel"),
        record_cell(TO, row.to_whom, class_name="to", overflow_wrap="break-word"),
        record_cell(
            STATUS,
            rx.badge(row.status_label, color_scheme=row.status_color),
            class_name="status",
            white_space="nowrap",
        ),
        record_cell(ATTEMPTS, row.attempts, class_name="attempts"),
        record_cell(
            WHY,
            rx.cond(
                row.reason != "",
                rx.el.span(row.reason, class_name="reason", color=rx.color("gray", 11)),
                rx.el.span(row.error, class_name="error", color=rx.color("red", 11)),
            ),
            overflow_wrap="break-word",
        ),
        record_cell(
            CONVERSATION,
            rx.cond(
                row.href != "",
                rx.link("Open", href=row.href, class_name="open", aria_label="Open " + row.what),
            ),
        ),
        class_name="delivery-row",
        data_channel=row.channel,
        data_recipient=row.recipient,
        data_status=row.status,
        data_delivery_id=row.id,
    )


def _list() -> rx.Component:
    return rx.cond(
        # A Var on the class, whose `length()` mypy cannot see (it reads the annotation).
        DeliveriesState.rows.length() > 0,  # type: ignore[attr-defined]
        rx.box(
            records_table(COLUMNS, rx.table.body(rx.foreach(DeliveriesState.rows, _row))),
            width="100%",
            overflow_x="auto",
            id="delivery-list",
        ),
        rx.cond(
            DeliveriesState.loaded & (DeliveriesState.problem == ""),
            rx.text(
                "Nothing has been sent yet: notices are queued here when a decision needs "
                "someone, is reminded or escalated.",
                size="2",
                color_scheme="gray",
                id="deliveries-empty",
            ),
        ),
    )


def deliveries() -> rx.Component:
    return page_frame(
        signed_in_header(),
        rx.cond(
            DeliveriesState.refused != "",
            refusal(DeliveriesState.refused, id="deliveries-refused", title="Deliveries"),
            rx.vstack(
                rx.hstack(
                    rx.heading("Deliveries", size="5", as_="h1"),
                    rx.spacer(),
                    rx.cond(
                        DeliveriesState.read_at != "",
                        rx.text(
                            "Read " + DeliveriesState.read_at,
                            size="1",
                            color_scheme="gray",
                            id="deliveries-read-at",
                        ),
                    ),
                    rx.button(
                        "Refresh",
                        on_click=DeliveriesState.refresh,
                        size="2",
                        variant="soft",
                        id="deliveries-refresh",
                    ),
                    width="100%",
                    align="center",
                ),
                rx.cond(
                    DeliveriesState.loaded,
                    rx.callout(
                        DeliveriesState.channels,
                        icon=rx.cond(DeliveriesState.configured, "send", "bell_off"),
                        color_scheme=rx.cond(DeliveriesState.configured, "blue", "amber"),
                        id="deliveries-channels",
                        role="status",
                    ),
                ),
                rx.cond(
                    DeliveriesState.problem != "",
                    rx.callout(
                        DeliveriesState.problem,
                        icon="triangle_alert",
                        color_scheme="red",
                        id="deliveries-problem",
                        role="alert",
                    ),
                ),
                _list(),
                padding="1.25em",
                spacing="3",
                width="100%",
                id="deliveries-page",
            ),
        ),
        max_width="1200px",
    )

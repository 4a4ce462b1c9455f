"""The Deliveries page (admins): every notice queued, newest first, how it went, and which
channels are configured."""

import reflex as rx

from chat_app.ui.components.page import page_frame, refusal
from chat_app.ui.deliveries_state import DeliveriesState, DeliveryRow
from chat_app.ui.pages.index import signed_in_header

COLUMNS = (
    "When (UTC)",
    "Event",
    "About",
    "Channel",
    "To",
    "Status",
    "Attempts",
    "Last error or reason",
    "Conversation",
)


def _row(row: DeliveryRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(
            rx.el.time(row.at, date_time=row.at_iso), white_space="nowrap", class_name="at"
        ),
        rx.table.cell(row.event, class_name="event"),
        rx.table.cell(row.what, class_name="what", overflow_wrap="break-word"),
        rx.table.cell(rx.badge(row.channel, variant="outline"), class_name="channel"),
        rx.table.cell(row.to_whom, class_name="to", overflow_wrap="break-word"),
        rx.table.cell(
            rx.badge(row.status_label, color_scheme=row.status_color),
            class_name="status",
            white_space="nowrap",
        ),
        rx.table.cell(row.attempts, class_name="attempts"),
        rx.table.cell(
            rx.cond(
                row.reason != "",
                rx.el.span(row.reason, class_name="reason", color=rx.color("gray", 11)),
                rx.el.span(row.error, class_name="error", color=rx.color("red", 11)),
            ),
            overflow_wrap="break-word",
        ),
        rx.table.cell(
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
            rx.table.root(
                rx.table.header(
                    rx.table.row(*[rx.table.column_header_cell(name) for name in COLUMNS])
                ),
                rx.table.body(rx.foreach(DeliveriesState.rows, _row)),
                size="1",
                width="100%",
                # On a phone the table scrolls sideways rather than squeeze its columns to a
                # letter a line.
                min_width="56em",
            ),
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

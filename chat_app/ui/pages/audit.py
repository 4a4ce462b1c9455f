"""The Audit page: every pause, decision and execution, and whether the chain holds."""

import reflex as rx

from chat_app.ui.audit_state import AuditRow, AuditState
from chat_app.ui.components.page import page_frame, refusal
from chat_app.ui.components.records_table import record_cell, records_table
from chat_app.ui.pages.index import signed_in_header

SEQ = "#"
AT = "When (UTC)"
WHAT = "What"
WHO = "Who"
VERIFIED = "Verified by"
RULE = "Rule"
DETAILS = "Details"
HASH = "Hash"
#: The table's columns, in order.
COLUMNS = (SEQ, AT, WHAT, WHO, VERIFIED, RULE, DETAILS, HASH)


def _row(row: AuditRow) -> rx.Component:
    return rx.table.row(
        record_cell(SEQ, row.seq),
        record_cell(AT, row.at, white_space="nowrap"),
        record_cell(WHAT, rx.badge(row.kind)),
        record_cell(WHO, row.actor),
        record_cell(VERIFIED, row.verified),
        record_cell(RULE, row.rule),
        record_cell(
            DETAILS,
            rx.el.details(
                rx.el.summary(row.summary, cursor="pointer"),
                rx.code_block(row.detail, language="json", font_size="0.75rem"),
            ),
        ),
        record_cell(HASH, rx.code(row.hash), title="SHA-256 of this record and the previous one"),
        class_name="audit-row",
        data_kind=row.kind,
    )


def audit() -> rx.Component:
    return page_frame(
        signed_in_header(),
        # Refused: the refusal alone, not an empty trail with its buttons and badge; and
        # neither until the page has loaded (an empty badge would say the chain holds).
        rx.cond(
            AuditState.loaded,
            rx.cond(
                AuditState.refused != "",
                refusal(AuditState.refused, id="audit-refused", title="Audit trail"),
                _trail(),
            ),
        ),
        max_width="1100px",
    )


def _trail() -> rx.Component:
    return rx.vstack(
        rx.hstack(
            rx.heading("Audit trail", size="5", as_="h1"),
            rx.spacer(),
            # A remote agent's trail is exported from that agent's server, not this app.
            rx.cond(
                AuditState.exportable,
                rx.link(
                    rx.button(
                        "Export JSON lines", variant="outline", size="2", white_space="nowrap"
                    ),
                    href="/api/audit.jsonl",
                    is_external=True,
                    id="audit-export",
                ),
            ),
            rx.button(
                "Refresh", on_click=AuditState.load, size="2", variant="soft", id="audit-refresh"
            ),
            width="100%",
            align="center",
            wrap="wrap",
        ),
        rx.cond(
            AuditState.available,
            rx.callout(
                AuditState.chain_message,
                icon=rx.cond(AuditState.chain_ok, "shield_check", "shield_alert"),
                color_scheme=rx.cond(AuditState.chain_ok, "green", "red"),
                id="audit-chain",
                role="status",
            ),
            rx.cond(
                AuditState.unreadable != "",
                rx.callout(
                    AuditState.unreadable,
                    icon="circle_alert",
                    color_scheme="red",
                    id="audit-unreadable",
                    role="alert",
                ),
                rx.callout(
                    "No audit trail to show: this app keeps no ledger (CHAT_APP_SECURE=0), or "
                    "the remote agent's could not be read.",
                    icon="info",
                ),
            ),
        ),
        # No trail read, no table: its headers alone would read as a trail with no records.
        rx.cond(
            AuditState.available,
            rx.box(
                records_table(
                    COLUMNS, rx.table.body(rx.foreach(AuditState.rows, _row)), id="audit-table"
                ),
                width="100%",
                overflow_x="auto",
            ),
        ),
        padding="1.25em",
        spacing="3",
        width="100%",
        id="audit-trail",
    )

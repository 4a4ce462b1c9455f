"""A table of records (the Audit trail, the Deliveries) that reads on a phone.

On a wide screen it is a table. Below `assets/forms.css`'s 40em, each row is a block of its
cells, one a line, each named by its column (`data-label`): a table of eight or nine columns
scrolled sideways showed a phone one column of each record and rows a screen tall.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import reflex as rx

#: The class `assets/forms.css` stacks below 40em.
STACKED_CLASS = "records-table"


def records_table(columns: Sequence[str], body: rx.Component, **props: Any) -> rx.Component:
    """A table with `columns`' headers over `body` (its rows, made of `record_cell`s)."""
    return rx.table.root(
        rx.table.header(rx.table.row(*[rx.table.column_header_cell(name) for name in columns])),
        body,
        size="1",
        width="100%",
        class_name=STACKED_CLASS,
        **props,
    )


def record_cell(column: str, *children: Any, **props: Any) -> rx.Component:
    """A cell that says its `column` where the row is stacked."""
    return rx.table.cell(*children, custom_attrs={"data-label": column}, **props)

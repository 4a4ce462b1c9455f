"""A page's list of rows (the Conversations and Inbox pages): why it cannot be shown, the
rows, or what to say when there are none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import reflex as rx

from ._types import Prop


def listing(
    rows: Prop[list[Any]],
    row: Callable[[Any], rx.Component],
    *,
    loaded: Prop[bool],
    problem: Prop[str],
    problem_icon: str,
    name: str,
    list_id: str,
    label: str,
    empty: list[rx.Component],
) -> rx.Component:
    """`problem` (as `#<name>-problem`) when there is one; once `loaded`, the `rows` as a
    list (`#<list_id>`, read as `label`), or `empty` (`#<name>-empty`) when there are none.
    """
    return rx.vstack(
        rx.cond(
            problem != "",
            rx.callout(
                problem, icon=problem_icon, color_scheme="red", id=f"{name}-problem",
                role="alert",
            ),  # fmt: skip
        ),
        rx.cond(
            loaded & (problem == ""),
            rx.cond(
                # `rows` is a Var here (see `Prop`), whose `length()` mypy cannot see.
                rows.length() > 0,  # type: ignore[union-attr]
                rx.el.ul(
                    rx.foreach(rows, row),
                    id=list_id,
                    aria_label=label,
                    margin="0",
                    padding="0",
                    width="100%",
                    border=f"1px solid {rx.color('gray', 5)}",
                    border_radius="8px",
                    background_color=rx.color("gray", 1),
                ),
                rx.vstack(
                    *empty,
                    id=f"{name}-empty",
                    align="center",
                    text_align="center",
                    spacing="2",
                    padding="2.5em 1em",
                    width="100%",
                ),
            ),
        ),
        spacing="3",
        width="100%",
    )

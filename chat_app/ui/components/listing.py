"""A page's list of rows (the Conversations and Inbox pages): why it cannot be shown, the
rows, or what to say when there are none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import reflex as rx

from ._types import Prop

#: A list's row can go while the keyboard is on it (a decision someone else settled, a
#: request withdrawn: the Inbox updates live): the focus would fall to the page's body, and
#: the next Tab start again from the top. It goes to the list itself instead, which is read
#: out by its name, or, once it is empty, to the page's main content; not when the row went
#: with its page (its link followed). Delegated, once per page.
KEEP_PLACE_SCRIPT = """
(() => {
  let held = null, list = '', page = '';
  document.addEventListener('focusin', (event) => {
    const row = event.target.closest && event.target.closest('ul.listing > li');
    held = row ? event.target : null;
    list = row ? row.parentElement.id : '';
    page = location.href;
  }, true);
  document.addEventListener('pointerdown', () => { held = null; }, true);  // put elsewhere
  new MutationObserver(() => {
    if (!held || held.isConnected) return;
    // A row's link followed: the next page places the focus itself.
    if (location.href !== page) { held = null; return; }
    const lost = !document.activeElement || document.activeElement === document.body;
    const place = document.getElementById(list) || document.getElementById('main');
    held = null;
    if (!lost || !place) return;
    if (!place.hasAttribute('tabindex')) {  // focusable by script, until it is left
      place.tabIndex = -1;
      place.addEventListener('blur', () => place.removeAttribute('tabindex'), { once: true });
    }
    place.focus({ preventScroll: true });
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
"""


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
                    class_name="listing",
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


def listing_row(
    main: list[rx.Component], aside: list[rx.Component], *, basis: str, **attrs: Any
) -> rx.Component:
    """One row of a `listing`: `main` stacked on the left (at least `basis` wide before the
    row wraps), `aside` (a badge, a time) on the right; `attrs` mark the `<li>`."""
    return rx.el.li(
        rx.flex(
            rx.vstack(*main, spacing="1", flex=f"1 1 {basis}", min_width="0"),
            rx.flex(*aside, align="center", gap="0.75em", wrap="wrap"),
            align="center",
            justify="between",
            gap="0.5em 1em",
            wrap="wrap",
            width="100%",
        ),
        padding="0.75em 1em",
        border_bottom=f"1px solid {rx.color('gray', 4)}",
        list_style="none",
        **attrs,
    )


def moment(text: Any, *, iso: Any, title: Any, class_name: str) -> rx.Component:
    """When something happened, relative ("2 min ago"), with its ISO 8601 time and, on
    hover, in words."""
    return rx.el.time(
        text,
        date_time=iso,
        title=title,
        class_name=class_name,
        font_size="0.8rem",
        color=rx.color("gray", 11),
        white_space="nowrap",
    )


def open_link(href: Any, label: Any, class_name: str) -> rx.Component:
    """A row's "Open →": where the decision is, its conversation; `label` for screen readers."""
    return rx.link(
        "Open",
        rx.icon("arrow_right", size=14),
        href=href,
        class_name=class_name,
        aria_label=label,
        display="inline-flex",
        align_items="center",
        gap="0.25em",
        font_weight="500",
    )


def decision_name(kind: Any, name: Any, **props: Any) -> rx.Component:
    """A decision's name in a list: a tool's in code (it is an identifier), a question's as
    the sentence it is."""
    return rx.cond(
        kind == "tool",
        rx.code(name, size="3", weight="medium", **props),
        rx.text(name, as_="span", size="3", weight="medium", **props),
    )

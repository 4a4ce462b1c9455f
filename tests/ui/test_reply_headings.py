"""A model's Markdown headings sit under the page's own `<h1>` (the chat's): one level down,
so a reply's `#` does not add a second `<h1>` to the page's outline."""

from __future__ import annotations

import reflex as rx

from chat_app.ui.components.transcript import REPLY_HEADINGS, _reply


def test_each_markdown_heading_is_one_level_under_the_page_s() -> None:
    levels = {tag: str(REPLY_HEADINGS[tag]("Title").as_) for tag in REPLY_HEADINGS}  # type: ignore[attr-defined]
    assert levels == {
        "h1": '"h2"', "h2": '"h3"', "h3": '"h4"', "h4": '"h5"', "h5": '"h6"', "h6": '"h6"'
    }  # fmt: skip


def test_a_reply_renders_its_headings_with_that_map() -> None:
    ours = str(_reply("# Plan"))
    assert ours == str(rx.markdown("# Plan", use_raw=False, component_map=REPLY_HEADINGS))
    assert ours != str(rx.markdown("# Plan", use_raw=False))  # Reflex's own: `#` is an h1

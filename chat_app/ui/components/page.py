"""The frame every page shares: a centred column on a grey ground, marked for the tests."""

from __future__ import annotations

import reflex as rx

from .connection import connection_notice

#: Takes the `:root:where(:has(.radix-themes[data-is-root-theme='true']…))` selectors out of
#: Radix Themes' style sheet, once it is loaded (the rest of each rule stays).
#:
#: Radix gives `:root` its `color-scheme` from the root theme's appearance with those two
#: selectors. Chrome must then match `:root` again whenever an element is added or removed
#: anywhere in the page, and the selector of the appearance the page does not have (dark, or
#: light) finds no match: it walks every element of the page, each time. On a chat of 2,000
#: messages (~24,000 elements) that was 5 ms per frame and most of the style work of an
#: Approve click (`benchmarks/FINDINGS.md`). The page loses nothing: Reflex's color-mode
#: script sets `color-scheme` on `<html>` itself (an inline style, which wins anyway), and
#: `.radix-themes.light` / `.dark` keep theirs.
ROOT_HAS_SCRIPT = """
(() => {
  const doomed = (selector) =>
    /^:root:where\\(:has\\(\\.radix-themes\\[data-is-root-theme/.test(selector);
  const split = (list) => {  // a selector list at its top-level commas
    const parts = [];
    let depth = 0, start = 0;
    for (let i = 0; i < list.length; i++) {
      const c = list[i];
      if (c === '(' || c === '[') depth++;
      else if (c === ')' || c === ']') depth--;
      else if (c === ',' && depth === 0) { parts.push(list.slice(start, i).trim()); start = i + 1; }
    }
    parts.push(list.slice(start).trim());
    return parts;
  };
  const clean = (rules, owner) => {
    for (let i = rules.length - 1; i >= 0; i--) {
      const rule = rules[i];
      if (rule.cssRules && !rule.selectorText) { clean(rule.cssRules, rule); continue; }
      if (!rule.selectorText || !rule.selectorText.includes(':has(')) continue;
      const parts = split(rule.selectorText);
      const kept = parts.filter((part) => !doomed(part));
      if (kept.length === parts.length) continue;
      if (kept.length) rule.selectorText = kept.join(', ');
      else owner.deleteRule(i);
    }
  };
  const sweep = (sheet) => {
    try { clean(sheet.cssRules, sheet); } catch (error) { /* not readable: not Radix's */ }
  };
  const sweepAll = () => { for (const sheet of document.styleSheets) sweep(sheet); };
  const watch = (node) => {
    if (node.nodeName === 'LINK' && /stylesheet/i.test(node.rel)) {
      if (node.sheet) sweep(node.sheet);
      node.addEventListener('load', () => node.sheet && sweep(node.sheet));
    } else if (node.nodeName === 'STYLE' && node.sheet) {
      sweep(node.sheet);
    }
  };
  const start = () => {
    sweepAll();
    document.querySelectorAll('link[rel~="stylesheet"]').forEach(watch);
    new MutationObserver((records) => {
      for (const record of records) record.addedNodes.forEach(watch);
    }).observe(document.head, {childList: true});
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
  window.addEventListener('load', sweepAll);
})();
"""


#: "Skip to content" moves the focus itself: the router takes the address's `#main`, and
#: the browser then neither scrolls nor focuses. Caught before anything else hears the
#: click (the capture phase), so the address stays as it is.
SKIP_LINK_SCRIPT = """
document.addEventListener('click', (event) => {
  const link = event.target.closest && event.target.closest('a.skip-link');
  const main = link && document.getElementById('main');
  if (!main) return;
  event.preventDefault();
  event.stopPropagation();
  main.focus();
  main.scrollIntoView({block: 'start'});
}, true);
"""


def page_frame(
    top: rx.Component, *children: rx.Component, max_width: str = "860px", **column: object
) -> rx.Component:
    """`top` (the header) over `children`, the page's `<main>`, in a full-height centred
    column (`column` styles it further, e.g. a fixed height); `#app-root` says when it is
    hydrated. While the connection is lost, its notice heads the column: in a fixed-height
    page it takes its room from the content (the chat's composer stays on screen), in
    another it sticks to the top as the page scrolls, and neither covers the header."""
    main = rx.el.main(
        *children,
        id="main",
        tab_index=-1,  # the skip link's target takes the focus, so Tab goes on from there
        # Lays its children out as the column would without it (a fixed-height page's
        # transcript still takes the height left).
        display="flex",
        flex_direction="column",
        align_items="flex-start",
        flex="1",
        min_height="0",
        width="100%",
    )
    return rx.box(
        # Past the header's links, straight to the page's own content.
        rx.el.a("Skip to content", href="#main", class_name="skip-link"),
        rx.vstack(
            connection_notice(),
            top,
            main,
            spacing="0",
            max_width=max_width,
            margin_x="auto",
            min_height="100dvh",
            background_color=rx.color("gray", 1),
            **column,
        ),
        background_color=rx.color("gray", 2),
        min_height="100dvh",
        id="app-root",
        # Browser tests wait for data-hydrated="true" before interacting.
        custom_attrs={"data-hydrated": rx.cond(rx.State.is_hydrated, "true", "false")},
    )


def refusal(text: rx.Var[str] | str, *, id: str, title: str) -> rx.Component:
    """Why the page `title` shows nothing: under its heading, in the page's margins."""
    return rx.vstack(
        rx.heading(title, size="5", as_="h1"),
        rx.callout(text, icon="lock", color_scheme="red", id=id, role="alert"),
        padding="1.25em",
        spacing="3",
        width="100%",
    )


#: Kept from sight but read by assistive technology (a heading the layout shows otherwise).
SCREEN_READER_ONLY = {
    "position": "absolute",
    "width": "1px",
    "height": "1px",
    "overflow": "hidden",
    "clip": "rect(0 0 0 0)",
    "white_space": "nowrap",
}

"""Top bar: the product name, the pages (with the Inbox's count), and who is signed in (with
the demo switcher)."""

from __future__ import annotations

import json

import reflex as rx
from reflex.event import EventType

from chat_app.desk import INBOX_COUNT_CAP

from ._types import Prop
from .posting import post_and_follow

#: Switching person stays on the page (the server checks the path is this site's own).
_SWITCH = post_and_follow("/api/signin/demo", {"email": "demo-person"}, {}, here_as="next")


#: A closed select changes with each arrow key, and a change here signs in as that person
#: and loads the page again: the keyboard could pass nobody without signing in as each, and
#: lost its place each time. Arrowed through (or a name's first letters typed), a choice
#: signs in on Enter, or when the focus leaves the select; a click, or a choice from its
#: opened list, at once. Once the page is back, the select has the keyboard again if it had
#: it. Delegated, once per page.
DEMO_SWITCH_SCRIPT = """
(() => {
  const ID = 'demo-person', BACK = 'chat_app_demo_switched';
  const MOVES = ['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'Home', 'End',
                 'PageUp', 'PageDown'];
  // On a Mac the arrows open the list, whose choice is taken as a click's.
  const MAC = /Mac|iPhone|iPad/.test(navigator.platform || '');
  let moved = false, going = false, chosen = null;
  const remember = (value) => { try { sessionStorage.setItem(BACK, value); } catch (e) {} };
  const go = (select) => {
    moved = false;
    going = true;
    try {
      // The select is React's, which may have drawn it again with the person signed in.
      if (chosen !== null) select.value = chosen;
      remember('1');
      select.dispatchEvent(new Event('change', { bubbles: true }));
    } finally {
      going = false;
      chosen = null;
    }
  };
  document.addEventListener('pointerdown', (event) => {
    if (event.target.id === ID) moved = false;  // a click chooses at once
  }, true);
  document.addEventListener('keydown', (event) => {
    if (event.target.id !== ID) return;
    const opens = event.altKey || event.key === 'F4' || event.key === ' ' ||
      (MAC && MOVES.includes(event.key));
    if (opens) moved = false;
    else if (MOVES.includes(event.key) || event.key.length === 1) moved = true;  // or typed
    else if (event.key === 'Enter' && moved) go(event.target);
  }, true);
  document.addEventListener('change', (event) => {
    if (event.target.id !== ID || going) return;
    if (moved) {  // chosen, not yet gone to
      chosen = event.target.value;
      event.stopImmediatePropagation();
    } else {
      remember(document.activeElement === event.target ? '1' : '');
    }
  }, true);
  document.addEventListener('focusout', (event) => {
    if (event.target.id === ID && moved) go(event.target);
  }, true);
  let back = '';
  try { back = sessionStorage.getItem(BACK) || ''; sessionStorage.removeItem(BACK); } catch (e) {}
  if (!back) return;
  let looks = 50;
  const look = setInterval(() => {
    const select = document.getElementById(ID);
    if (select) select.focus();
    if (select || --looks < 0) clearInterval(look);
  }, 100);
})();
"""


def _demo_switcher(choices: list[list[str]], viewer_email: Prop[str]) -> rx.Component:
    """Pick a demo person: the server sets their cookie and sends the page back."""
    return rx.hstack(
        rx.el.label(
            "Demo sign-in:",
            html_for="demo-person",
            font_size="0.75rem",
            color=rx.color("gray", 11),
            white_space="nowrap",
            # Not on a phone: the select fits beside the dark-mode button without it, and
            # names its choices as demo accounts anyway.
            display=["none", "inline"],
        ),  # fmt: skip
        rx.el.select(
            *[rx.el.option(label, value=email) for email, label in choices],
            # Controlled: it shows who the server says is signed in, once the page loads.
            value=viewer_email,
            id="demo-person",
            aria_label="Demo sign-in",
            # A choice signs in at once (arrowed through: on Enter, `DEMO_SWITCH_SCRIPT`).
            on_change=_SWITCH,
            # 28 px tall: a target at least 24 px square (WCAG 2.2, 2.5.8) with room to spare.
            style={"fontSize": "0.85rem", "padding": "0.15em 0.3em", "borderRadius": "6px",
                   "minHeight": "1.75rem"},  # fmt: skip
        ),
        align="center",
        spacing="2",
        id="demo-switch",
    )


#: The localStorage key a sign-out writes: the browser tells the app's other tabs at once
#: (a `storage` event), and a page that listens looks again at who is signed in there.
SIGNED_OUT_KEY = "chat_app_signed_out"
MARK_SIGNED_OUT_SCRIPT = f"localStorage.setItem({json.dumps(SIGNED_OUT_KEY)}, String(Date.now()))"
#: The key a sign-in with a password writes once the server let the person in (it sent
#: them on, not back to the sign-in page; a refusal as JSON sends them nowhere): a sign-in
#: page open in another tab looks again.
SIGNED_IN_KEY = "chat_app_signed_in"


def mark_signed_in_script(sign_in_route: str) -> str:
    """`post_script`'s `then` for the sign-in form (`r`: the server's answer, followed)."""
    back = f"new URL(r.url).pathname.replace(/\\/$/, '') === {json.dumps(sign_in_route)}"
    mark = f"localStorage.setItem({json.dumps(SIGNED_IN_KEY)}, String(Date.now()))"
    return f"if (r.redirected && !({back})) {mark}"


def _sign_out(before: EventType[()] | None) -> rx.Component:
    # The other tabs are told once the server has ended the sessions and the cookie is gone:
    # told sooner, they would load again still signed in.
    leave = post_and_follow("/api/signout", {}, {}, then=MARK_SIGNED_OUT_SCRIPT)
    return rx.button(
        "Sign out",
        size="1",
        variant="soft",
        id="sign-out",
        on_click=leave if before is None else [before, leave],
    )


def viewer_menu(
    *,
    auth_mode: Prop[str],
    viewer_name: Prop[str],
    viewer_email: Prop[str],
    demo_choices: list[list[str]],
    on_sign_out: EventType[()] | None = None,
) -> rx.Component:
    """Who is signed in and how to change it: the demo switcher, or sign-out (`on_sign_out`
    first: what the tab must forget before the next person comes)."""
    return rx.match(
        auth_mode,
        ("demo", _demo_switcher(demo_choices, viewer_email)),
        (
            "password",
            # Nobody signed in yet (the sign-in page): nothing to show, nothing to sign out of.
            rx.cond(
                viewer_email != "",
                rx.hstack(
                    rx.text(viewer_name, size="2", id="viewer-name"),
                    _sign_out(on_sign_out),
                    align="center",
                    spacing="2",
                ),
            ),
        ),
        (
            "proxy",
            rx.text(
                viewer_name, size="2", id="viewer-name",
                title="Signed in through your organisation's sign-in: sign out there.",
            ),  # fmt: skip
        ),
        rx.fragment(),
    )


def go_sign_in_script(sign_in_route: str, error: str = "", seal: str = "") -> str:
    """JavaScript: to `sign_in_route`, to come back after to the address the tab shows (a
    chat's address changes without a page load, so the server's idea of it may be older),
    with `error` said there ("": nothing) under its `seal` (`SessionSigner.seal_note`)."""
    said = (
        f" + '&error=' + encodeURIComponent({json.dumps(error)})"
        f" + '&seal=' + encodeURIComponent({json.dumps(seal)})"
    ) if error else ""  # fmt: skip
    return (
        f"window.location.assign({json.dumps(sign_in_route)} + '?next=' + "
        f"encodeURIComponent(location.pathname + location.search).replace(/%2F/g, '/'){said})"
    )


def auth_banner(
    *,
    auth_mode: Prop[str],
    auth_error: Prop[str],
    sign_in_route: str = "",
    here: Prop[str] = "/",
) -> rx.Component:
    """What the page must say plainly about sign-in: demo accounts, none at all, or why
    nobody is signed in, with password sign-in a link to `sign_in_route` (if given) that
    comes back to the address the tab shows when it is followed (a chat's address changes
    without a page load); opened in a new tab, to `here`, the page's address as loaded."""
    come_back = go_sign_in_script(sign_in_route)
    link = rx.fragment(
        " ",
        rx.link(
            "Sign in",
            href=sign_in_route + "?next=" + here,
            id="auth-sign-in",
            on_click=rx.call_script(come_back).prevent_default,
        ),
    )
    return rx.cond(
        auth_error != "",
        rx.callout.root(
            rx.callout.icon(rx.icon("lock")),
            rx.callout.text(
                auth_error,
                rx.cond(auth_mode == "password", link) if sign_in_route else rx.fragment(),
            ),
            color_scheme="red",
            id="auth-error",
            role="alert",
        ),
        rx.match(
            auth_mode,
            (
                "demo",
                rx.callout.root(
                    rx.callout.icon(rx.icon("info")),
                    rx.callout.text(
                        rx.text.span(
                            "Demo sign-in: these are demo accounts, and anyone can switch "
                            "between them. Set CHAT_APP_AUTH to password or proxy for real "
                            "sign-in.",
                            display=["none", "inline"],
                        ),
                        # A phone's screen is short: the gist, in one line or two.
                        rx.text.span(
                            "Demo accounts: anyone can switch person.",
                            display=["inline", "none"],
                        ),
                    ),
                    size="1",
                    color_scheme="amber",
                    id="auth-banner",
                ),
            ),
            (
                "none",
                rx.callout(
                    "No sign-in: anyone who can open this page can approve.",
                    icon="triangle_alert",
                    size="1",
                    color_scheme="red",
                    id="auth-banner",
                ),
            ),
            rx.fragment(),
        ),
    )


def _nav_link(
    label: str, href: str, link_id: str, active: rx.Var[bool], *extra: rx.Component,
    name: rx.Var[str] | str | None = None,
) -> rx.Component:  # fmt: skip
    """`name`: what a screen reader reads, when the label and `extra` do not say it."""
    return rx.link(
        label,
        *extra,
        href=href,
        **({} if name is None else {"aria_label": name}),
        size="2",
        id=link_id,
        # The page shown is underlined, not made bold: a bolder link is wider, and the
        # header would wrap on one page and not the next.
        weight="medium",
        text_decoration=rx.cond(active, "underline", "none"),
        text_decoration_thickness="2px",
        text_underline_offset="0.4em",
        aria_current=rx.cond(active, "page", "false"),
        display="inline-flex",
        align_items="center",
        min_height="24px",  # a target a finger can hit (WCAG 2.5.8's minimum)
        gap="0.3em",
        white_space="nowrap",
    )


def _count_text(count: rx.Var[int]) -> rx.Var[str]:
    """The Inbox's count as its badge shows it: "3", or "99+" past the cap."""
    return rx.cond(count > INBOX_COUNT_CAP, f"{INBOX_COUNT_CAP}+", count.to_string())


def _inbox_badge(count: rx.Var[int]) -> rx.Component:
    return rx.cond(
        count > 0,
        rx.badge(
            _count_text(count),
            id="inbox-count",
            color_scheme="red",
            variant="solid",
            radius="full",
            size="1",
            aria_label=count.to_string() + " pending",
            title="Pending decisions you may make",
        ),
    )


def nav_links(
    *, inbox_count: Prop[int], current: Prop[str], is_admin: Prop[bool] = False,
    may_audit: Prop[bool] = False,
) -> rx.Component:  # fmt: skip
    """The pages: Chat, Conversations, Inbox (with how many decisions wait for the viewer),
    for an admin or an auditor Audit, and for an admin Deliveries; the one at `current` (a
    route) is marked. The pages themselves refuse whoever they are not for."""
    count = inbox_count if isinstance(inbox_count, rx.Var) else rx.Var.create(inbox_count)
    path = current if isinstance(current, rx.Var) else rx.Var.create(current)
    return rx.el.nav(
        _nav_link("Chat", "/", "nav-chat", (path == "/") | path.startswith("/c/")),
        _nav_link("Conversations", "/conversations", "nav-conversations", path == "/conversations"),
        # Read as "Inbox, 3 pending", not "Inbox 3".
        _nav_link("Inbox", "/inbox", "nav-inbox", (path == "/inbox") | path.startswith("/inbox/"),
                  _inbox_badge(count),
                  name=rx.cond(count > 0, "Inbox, " + _count_text(count) + " pending",
                               "Inbox")),  # fmt: skip
        rx.cond(may_audit, _nav_link("Audit", "/audit", "nav-audit", path == "/audit")),
        rx.cond(
            is_admin,
            _nav_link("Deliveries", "/deliveries", "nav-deliveries", path == "/deliveries"),
        ),
        display="flex",
        align_items="center",
        column_gap="0.9em",
        row_gap="0.25em",
        flex_wrap="wrap",
        aria_label="Pages",
    )


def header(
    viewer: rx.Component | None = None,
    *,
    inbox_count: Prop[int] = 0,
    current: Prop[str] = "",
    is_admin: Prop[bool] = False,
    may_audit: Prop[bool] = False,
    pages: Prop[bool] = True,
) -> rx.Component:
    """The app's header bar; `viewer` shows who is signed in, `inbox_count` how many pending
    decisions they may make (the Inbox link's badge, hidden at 0), `current` the route shown,
    `is_admin` whether they are an admin (the admins' pages are linked), `may_audit` whether
    they may read the audit trail (it is linked), `pages` whether the pages are linked at
    all."""
    bar = rx.flex(
        rx.hstack(
            rx.image(src="/logo.svg", width="28px", height="28px", alt=""),
            # The product's name, not the page's heading: each page has its own `<h1>`.
            rx.text("Ops desk", size="5", weight="bold", white_space="nowrap", as_="div"),
            align="center",
            spacing="3",
        ),
        rx.flex(
            rx.text(
                "chat_app — human sign-off for AI agents",
                size="2",
                color_scheme="gray",
                # Only on wide screens: beside the sign-in menu it would squeeze the title.
                display=["none", "none", "none", "none", "none", "block"],
            ),
            rx.cond(
                pages,
                nav_links(
                    inbox_count=inbox_count, current=current, is_admin=is_admin,
                    may_audit=may_audit,
                ),
            ),  # fmt: skip
            viewer if viewer is not None else rx.fragment(),
            rx.color_mode.button(size="2", variant="ghost", aria_label="Toggle dark mode"),
            align="center",
            justify="end",
            gap="0.5em 1em",
            wrap="wrap",
        ),
        justify="between",
        align="center",
        gap="0.5em 1em",
        wrap="wrap",
        width="100%",
        padding_x="1.25em",
        padding_y="0.75em",
        border_bottom=f"1px solid {rx.color('gray', 5)}",
        background_color=rx.color("gray", 1),
        id="header",
    )
    return rx.el.header(bar, width="100%")

"""Who is signed in, for every page: the base state the chat and audit states share.

The identity is read from the tab's socket (its cookies, a sign-in proxy's headers), as the
HTTP routes read it, and again at every event that acts; the page never says who it is.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any
from urllib.parse import quote

import reflex as rx

from chat_app.desk import ADMIN_ROLE, DeskError
from chat_app.trust import DEMO_PEOPLE, Identity
from chat_app.trust.authn import SIGN_IN_FIRST
from chat_app.trust.identity import AUDIT_ROLES

from . import session as sessions
from .components.header import SIGNED_OUT_KEY, go_sign_in_script
from .guard import guarded


def _demo_label(person: Identity) -> str:
    roles = ", ".join(sorted(person.roles)) or "requester"
    return f"{person.name} ({roles}) — demo account"


#: The demo people as the header's menu lists them: [email, label].
DEMO_CHOICES: list[list[str]] = [[p.email, _demo_label(p)] for p in DEMO_PEOPLE]


def signed_out_notice(reason: str, mode: str) -> str:
    """What the page says when nobody is signed in: behind a sign-in proxy, what the person
    can do about it first, then the proxy's failure as it was (for whoever runs it)."""
    if mode != "proxy":
        return reason
    return (
        "You are not signed in: open this app through your organisation's sign-in page, or "
        f"ask whoever runs it. ({reason})"
    )


#: The sign-in page.
SIGN_IN_ROUTE = "/signin"
#: Whom a tab was last found with when sign-in is off: no email, but someone all the same.
ANONYMOUS_VISITOR = "(anonymous visitor)"


def replace_address(new: str, *, on: tuple[str, ...], under: str = "") -> Any:
    """The tab's address becomes `new`, in place (no new history entry), if the tab is still
    on the page that asked: a path in `on`, or one under `under`. A reply that comes after
    the person went to another page leaves that page's address alone (a reload there would
    show the page it named). The router's own state of the entry is kept."""
    pages, prefix = json.dumps(list(on)), json.dumps(under)
    return rx.call_script(
        "((here) => { if (" + pages + ".includes(here) || (" + prefix + " && "
        "here.startsWith(" + prefix + "))) window.history.replaceState(window.history.state, "
        "'', " + json.dumps(new) + "); })(window.location.pathname.replace(/(.)[/]+$/, '$1'))"
    )


class IdentityState(rx.State):
    """Who is at this tab's keyboard, as the header shows it."""

    viewer_name: str = ""
    viewer_email: str = ""
    #: `demo`, `password`, `proxy` or `none`.
    auth_mode: str = "none"
    #: Why nobody is signed in ("" when someone is).
    auth_error: str = ""
    #: Pending decisions the viewer may make (the header's Inbox count).
    inbox_count: int = 0
    #: The viewer has the role admin (the header links the admins' pages).
    viewer_admin: bool = False
    #: The viewer may read the audit trail (the header links it).
    viewer_auditor: bool = False
    #: Nobody could tell who is at the tab at the last look (the accounts database did not
    #: answer): not a sign-out, so nothing of theirs is forgotten for it.
    _identity_unknown: bool = False
    #: Who was last found signed in at this tab (`ANONYMOUS_VISITOR` without sign-in); unlike
    #: `viewer_email`, kept once they leave, so that a page load can tell whether what the
    #: pages hold is someone else's (an app started again with sign-in on, say).
    _last_person: str = ""

    @property
    def _tells_people_apart(self) -> bool:
        """Whether this sign-in tells people apart (password, proxy): the demo's point is to
        switch person in one tab, and without sign-in everyone is the same."""
        return self.auth_mode in ("password", "proxy")

    def _viewer(self) -> Identity | None:
        """The verified identity, with the policy's roles; `None` (and `auth_error` says
        why) when nobody is signed in."""
        headers = getattr(self.router.headers, "raw_headers", {}) or {}
        found = sessions.identify(headers, self.router.session.client_ip or None)
        authenticator = sessions.authenticator()
        self.auth_mode = authenticator.mode if authenticator is not None else "none"
        self._identity_unknown = not isinstance(found, Identity) and found.code == "unavailable"
        if not isinstance(found, Identity):
            self.auth_error = signed_out_notice(found.message, self.auth_mode)
            self.viewer_name = self.viewer_email = ""
            self._set_roles(frozenset())
            return None
        self.auth_error = ""
        self.viewer_name = found.name or found.email or "Anonymous"
        self.viewer_email = found.email
        self._last_person = found.email or ANONYMOUS_VISITOR
        self._set_roles(found.roles)
        return found

    @rx.event
    @guarded
    def look_again(self, key: str, _old: str | None, _new: str | None, _url: str) -> Any:
        """Another tab of this browser changed localStorage: when it signed out
        (`SIGNED_OUT_KEY`) and this page showed someone who is signed in no longer, the page
        goes to the sign-in page at once (`_leave_signed_out`), rather than at its live
        loop's next look or never. This page's socket still carries the ended session, so
        the page can say why. The chat page listens with its own handler, which forgets
        what it showed first (`ChatState.storage_changed`)."""
        return self._leave_signed_out() if self._signed_out_elsewhere(key) else None

    async def forget_who_left(self) -> None:
        """At a page load, before the page is sent the tab's state: when the person the
        tab's pages were filled for is signed in no longer, or someone else is (with a
        sign-in that tells people apart), every page of the tab forgets what it held of them
        (`_forget_shown`). Otherwise the load would send it all again, shown or not, to
        whoever is at the tab now: a reload in the moment before a tab notices a sign-out
        elsewhere, the sign-in page after a sign-out, a tab left open while someone else
        signed in. Not while nobody can tell who is here (the accounts database does not
        answer). Run by `chat_app.ui.page_load`."""
        last = self._last_person
        if not last:
            return  # nobody was ever found here: the pages hold nobody's
        viewer = self._viewer()
        if self._identity_unknown or not self._tells_people_apart:
            return
        if viewer is not None and (viewer.email or ANONYMOUS_VISITOR) == last:
            return
        # `_last_person` stays until someone else signs in: a run of theirs on another
        # worker may still write into the tab, and the next load forgets that too.
        self.inbox_count = 0
        for page in IdentityState.get_substates():
            state = await self.get_state(page)
            if isinstance(state, IdentityState):
                state._forget_shown()

    def _nobody_here(self, what: str) -> str:
        """What a page says of itself with nobody signed in at it: `what` it would show, the
        banner saying why (`auth_error`); while nobody can tell who is here (the accounts
        database does not answer), that, which no sign-in mends."""
        return self.auth_error if self._identity_unknown and self.auth_error else what

    def _forget_shown(self) -> None:
        """What this page's state holds of the person who is no longer at the tab goes.
        A page's state is what it shows, read again at its next load: back to its
        defaults. The chat's keeps what they had typed, for them (`ChatState`)."""
        self.reset()  # type: ignore[no-untyped-call]

    def _signed_out_elsewhere(self, key: str) -> bool:
        """Whether the `localStorage` change `key` is a sign-out in another tab that ended
        the session of the person this page showed."""
        if key != SIGNED_OUT_KEY or not self.viewer_email:
            return False
        return self._viewer() is None

    def _leave_signed_out(self) -> Any:
        """Where a page goes once it has found its person signed out (`auth_error` says
        why): with password sign-in, straight to the sign-in page, saying why and leading
        back to the address the tab shows (loaded again, the page might say nothing: the
        browser drops an expired session's cookie, and the page would find nobody rather
        than an expired session). Nowhere otherwise (`None`): the page, emptied where it
        is, says why itself. Not while nobody can tell who is here (the accounts database
        does not answer)."""
        if self.auth_mode != "password" or self._identity_unknown:
            return None
        return rx.call_script(go_sign_in_script(SIGN_IN_ROUTE, *self._sealed(self.auth_error)))

    def _sign_in_first(self, route: str) -> Any:
        """Password sign-in with nobody signed in: to the sign-in page, back to `route` after.
        Why is said there when there is more to say than that a sign-in is needed (a session
        expired, or ended in another tab); a first visit is shown the form alone."""
        if not self.auth_error or self.auth_mode != "password":
            return None
        address = f"{SIGN_IN_ROUTE}?next={quote(route)}"
        error, seal = self._sealed(self.auth_error)
        if seal and error != SIGN_IN_FIRST:
            address += f"&error={quote(error)}&seal={quote(seal)}"
        return rx.redirect(address)

    @staticmethod
    def _sealed(error: str) -> tuple[str, str]:
        """`error` and its seal, for the sign-in page's address (which shows no message
        without one); no message when there is no signer to seal it."""
        authenticator = sessions.authenticator()
        if authenticator is None or not error:
            return "", ""
        return error, authenticator.signer.seal_note(error)

    def _set_roles(self, roles: Collection[str]) -> None:
        # Assigned only when they change: every assignment is sent, and pages' live loops
        # read the viewer again every few seconds.
        admin, auditor = ADMIN_ROLE in roles, bool(AUDIT_ROLES & set(roles))
        if self.viewer_admin != admin:
            self.viewer_admin = admin
        if self.viewer_auditor != auditor:
            self.viewer_auditor = auditor

    async def _count_inbox(self, viewer: Identity) -> None:
        desk = sessions.desk()
        if desk is None:
            return
        try:
            _, total = await desk.inbox(viewer, limit=1)
        except DeskError:  # the header keeps its last count; the pages say what failed
            return
        self.inbox_count = total

    def _show_failure(self, message: str) -> bool:
        """Show what went wrong where this page's person looks; `False`: nowhere (a toast
        says it instead). See `chat_app.ui.guard`."""
        return False

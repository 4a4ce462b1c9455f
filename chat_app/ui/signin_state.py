"""The sign-in page's state: the message a refused sign-in came back with, and its email."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import reflex as rx
from reflex.event import EventSpec

from chat_app.trust.authn import safe_next

from . import session as sessions
from .components.header import SIGNED_IN_KEY
from .guard import guarded
from .identity_state import SIGN_IN_ROUTE, IdentityState, replace_address


class SignInState(IdentityState):
    #: Why the last sign-in was refused, or why signing in is needed ("" for none).
    error: str = ""
    #: The email typed before a refused sign-in, so only the password is typed again.
    email: str = ""
    #: Where the page leads back to (its `next`, when it is this site's), for someone signed
    #: in already.
    back: str = "/"

    @rx.event
    @guarded
    def load(self) -> EventSpec | None:
        params = self.router.url.query_parameters
        # Only the app's own words: the address is anyone's to write (`seal_note`).
        error, seal = str(params.get("error", "")), str(params.get("seal", ""))
        authenticator = sessions.authenticator()
        sealed = authenticator is not None and authenticator.signer.note_sealed(error, seal)
        self.error = error[:200] if sealed else ""
        self.email = str(params.get("email", ""))[:254]
        self.back = safe_next(str(params.get("next", "")))
        self._viewer()
        if not {"error", "seal", "email"} & set(params):
            return None
        # Read once: a reload or a bookmark would show an old refusal again (a lockout's
        # "try again in 1 second" long after), and the email would stay in the history.
        # Where to go next stays: the form reads it from the address.
        wanted = str(params.get("next", ""))
        address = SIGN_IN_ROUTE + (f"?{urlencode({'next': wanted}, safe='/')}" if wanted else "")
        return replace_address(address, on=(SIGN_IN_ROUTE,))

    @rx.event
    @guarded
    def look_again_here(self, key: str, _old: str | None, _new: str | None, _url: str) -> Any:
        """Another tab of this browser signed in (`SIGNED_IN_KEY`): the page loads again, to
        say who is signed in now and lead on to where it was going rather than ask for a
        password again (its socket still carries the cookie it was opened with, which a load
        reads anew); any other change, as every page looks (`IdentityState.look_again`)."""
        if key == SIGNED_IN_KEY:
            return rx.call_script("window.location.reload()")
        return self._leave_signed_out() if self._signed_out_elsewhere(key) else None

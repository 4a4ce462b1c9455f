"""The sign-in page's state: the message a refused sign-in came back with, and where to go."""

from __future__ import annotations

import reflex as rx

from .guard import guarded
from .identity_state import IdentityState


class SignInState(IdentityState):
    #: Why the last sign-in was refused, or why signing in is needed ("" for none).
    error: str = ""
    #: Where to go once signed in (a path on this site; the server checks it again).
    next_path: str = "/"
    #: The email typed before a refused sign-in, so only the password is typed again.
    email: str = ""

    @rx.event
    @guarded
    def load(self) -> None:
        params = self.router.url.query_parameters
        self.error = str(params.get("error", ""))[:200]
        self.email = str(params.get("email", ""))[:254]
        wanted = str(params.get("next", "/"))
        # Only a hidden field of the form: the sign-in route decides where it may lead.
        self.next_path = wanted[:2000]
        self._viewer()

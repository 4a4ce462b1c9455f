"""The sign-in page's state: the message a refused sign-in came back with, and its email."""

from __future__ import annotations

import reflex as rx

from .guard import guarded
from .identity_state import IdentityState


class SignInState(IdentityState):
    #: Why the last sign-in was refused, or why signing in is needed ("" for none).
    error: str = ""
    #: The email typed before a refused sign-in, so only the password is typed again.
    email: str = ""

    @rx.event
    @guarded
    def load(self) -> None:
        params = self.router.url.query_parameters
        self.error = str(params.get("error", ""))[:200]
        self.email = str(params.get("email", ""))[:254]
        self._viewer()

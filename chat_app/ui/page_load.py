"""What a page load is sent: nothing of a person who is no longer at the tab.

A page load (and a socket's reconnect) starts with Reflex's hydrate event, which sends the
tab's whole state, every page's, before any page's `on_load` can run. What the tab's pages
held of someone who signed out, or whose session ended, would reach whoever is at the tab
now, shown or not (a page's state is in the browser's memory and in the socket's frames).
This middleware has the tab forget it first (`IdentityState.forget_who_left`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from reflex.middleware.middleware import Middleware
from reflex.state import BaseState, State, StateUpdate
from reflex_base.constants import CompileVars
from reflex_base.event import Event
from reflex_base.utils.format import format_event_handler

from .identity_state import IdentityState

if TYPE_CHECKING:
    from reflex.app import App

_log = logging.getLogger(__name__)


def _page_load_events() -> frozenset[str]:
    return frozenset(
        format_event_handler(State.event_handlers[name])
        for name in (CompileVars.HYDRATE, CompileVars.HYDRATE_AND_LOAD)
        if name in State.event_handlers
    )


@dataclasses.dataclass
class ForgetWhoLeft(Middleware):
    """Before a page load's state goes out, the tab forgets whoever left it."""

    names: frozenset[str] = dataclasses.field(default_factory=_page_load_events)

    async def preprocess(self, app: App, state: BaseState, event: Event) -> StateUpdate | None:
        if event.name not in self.names:
            return None
        try:
            identity = await state.get_state(IdentityState)
            assert isinstance(identity, IdentityState)
            await identity.forget_who_left()
        except Exception:
            # As when nobody can tell who is here: nothing forgotten, and the page still
            # loads (an exception here would stop every load of the tab before its page
            # could say what failed).
            _log.exception("Could not tell whether the tab's person left it")
        return None

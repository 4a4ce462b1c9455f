"""What a page load forgets of a person who left the tab (`IdentityState.forget_who_left`,
run by `chat_app.ui.page_load` before Reflex sends the tab's state), on a tab's state tree
itself: the browser test shows the frames; these show each case of who is there now."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from reflex.state import State

from chat_app.trust import Identity
from chat_app.ui import session
from chat_app.ui.identity_state import ANONYMOUS_VISITOR, IdentityState
from chat_app.ui.inbox_state import InboxState
from chat_app.ui.state import ChatState
from tests.ui.app_server import run_on_own_loop as done

ADA = Identity(email="ada@example.com", method="password", name="Ada")
BOB = Identity(email="bob@example.com", method="password", name="Bob")
VISITOR = Identity(email="", method="none")


def found(person: Identity | None, mode: str = "password", *, unknown: bool = False
          ) -> Callable[[IdentityState], Identity | None]:  # fmt: skip
    """`_viewer` as it reads the tab's socket, finding `person` (None: nobody)."""

    def viewer(self: IdentityState) -> Identity | None:
        self.auth_mode, self._identity_unknown = mode, unknown
        self.viewer_email = person.email if person else ""
        if person is not None:
            self._last_person = person.email or ANONYMOUS_VISITOR
        return person

    return viewer


class Tab:
    """A tab's state tree, last used by Ada: her Inbox lists Bob's transfer, her chat shows
    a conversation with text in the box."""

    def __init__(self) -> None:
        self.root = State(_reflex_internal_init=True)  # type: ignore[call-arg]

    async def fill(self, *, found_ada: bool = True) -> None:
        """Her pages' contents; with `found_ada`, the tab last found her signed in."""
        self.identity = await self.root.get_state(IdentityState)
        self.inbox = await self.root.get_state(InboxState)
        self.chat = await self.root.get_state(ChatState)
        assert isinstance(self.identity, IdentityState)
        assert isinstance(self.inbox, InboxState)
        assert isinstance(self.chat, ChatState)
        if found_ada:
            self.identity._last_person = ADA.email
        self.identity.inbox_count = 1
        self.inbox.total, self.inbox.tools, self.inbox.loaded = 1, ["transfer"], True
        self.chat._person, self.chat.thread_shown = ADA.email, "thread-1"
        self.chat.draft = "and then 10 to Sam"

    def forgotten(self) -> bool:
        inbox = (self.inbox.total, self.inbox.tools, self.inbox.loaded) == (0, [], False)
        chat = (self.chat.thread_shown, self.chat.draft) == ("", "")
        assert inbox == chat, "every page forgets, or none"
        return inbox


@pytest.fixture
def tab() -> Iterator[Tab]:
    # The chat's page, emptied, is drawn from a session of the app's (no agent is reached).
    session.configure(lambda _: None, lambda: {"tools": []})  # type: ignore[arg-type,return-value]
    made = Tab()
    done(made.fill())
    yield made
    session.forget(made.chat.router.session.client_token)


@pytest.mark.parametrize(
    ("now", "kept"),
    [(None, "and then 10 to Sam"), (BOB, "")],
    ids=["Ada gone: her text kept for her", "Bob signed in: he gets none of it"],
)
def test_every_page_forgets_her(
    tab: Tab, monkeypatch: pytest.MonkeyPatch, now: Identity | None, kept: str
) -> None:
    monkeypatch.setattr(IdentityState, "_viewer", found(now))
    done(tab.identity.forget_who_left())
    assert tab.forgotten()
    assert tab.identity.inbox_count == 0
    tab.chat._give_back_kept(now or ADA)
    assert tab.chat.draft == kept


@pytest.mark.parametrize(
    ("viewer", "why"),
    [
        (found(ADA), "the same person, a reload or a reconnect"),
        (found(None, unknown=True), "nobody can tell: the accounts database does not answer"),
        (found(BOB, mode="demo"), "a demo switch: playing several people is the point"),
        (found(None, mode="none"), "no sign-in"),
    ],
)
def test_nothing_is_forgotten(
    tab: Tab, monkeypatch: pytest.MonkeyPatch, viewer: Callable[..., object], why: str
) -> None:
    monkeypatch.setattr(IdentityState, "_viewer", viewer)
    done(tab.identity.forget_who_left())
    assert not tab.forgotten(), why
    assert tab.identity.inbox_count == 1


def test_gone_again_at_the_next_load_it_is_forgotten_again(
    tab: Tab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whom the tab last found stays until someone else signs in: what a run of theirs on
    another worker wrote into the tab after the first load goes at the next."""
    monkeypatch.setattr(IdentityState, "_viewer", found(None))
    done(tab.identity.forget_who_left())
    done(tab.fill(found_ada=False))  # written since, by no page load of hers
    done(tab.identity.forget_who_left())
    assert tab.forgotten()


@pytest.mark.parametrize("now", [None, BOB], ids=["signed out", "Bob signed in"])
def test_what_a_visitor_left_without_sign_in_goes_once_sign_in_is_on(
    tab: Tab, monkeypatch: pytest.MonkeyPatch, now: Identity | None
) -> None:
    """The tab was filled while sign-in was off; the app came back with password sign-in.
    Nobody can tell the visitor from whoever is at the tab now: their pages go, and what
    they typed is nobody's to get back."""
    monkeypatch.setattr(IdentityState, "_viewer", found(VISITOR, mode="none"))
    tab.identity._viewer()
    tab.chat._person = ""
    done(tab.identity.forget_who_left())  # sign-in still off: the same visitor
    assert not tab.forgotten()
    monkeypatch.setattr(IdentityState, "_viewer", found(now))
    done(tab.identity.forget_who_left())
    assert tab.forgotten()
    tab.chat._give_back_kept(now or BOB)
    assert tab.chat.draft == ""

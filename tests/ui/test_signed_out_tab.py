"""What a chat tab does when it finds its person signed out (`ChatState._hide_signed_out`),
on the state itself: the browser tests show the page; these show the cases a browser test
cannot bring about on demand, such as an accounts database that does not answer."""

from __future__ import annotations

from chat_app.trust import Identity
from chat_app.ui.state import ChatState
from chat_app.ui.views import FormMemory

ADA = Identity(email="ada@example.com", method="password", name="Ada")
BOB = Identity(email="bob@example.com", method="password", name="Bob")


def ada_tab(draft: str = "and then 10 to Sam") -> ChatState:
    """A tab Ada used, showing her conversation with text in the box."""
    tab = ChatState(_reflex_internal_init=True)  # type: ignore[call-arg]
    tab._person = ADA.email
    tab.thread_shown = "thread-1"
    tab.draft = draft
    return tab


def test_a_tab_whose_person_signed_out_forgets_the_page_and_keeps_the_box_for_them() -> None:
    tab = ada_tab()
    assert tab._hide_signed_out(None) is True
    assert (tab.thread_shown, tab.draft) == ("", "")
    assert tab._hide_signed_out(None) is False  # nothing of hers left to hide

    tab._give_back_kept(ADA)
    assert tab.draft == "and then 10 to Sam"
    tab.draft = ""
    tab._give_back_kept(ADA)  # given once
    assert tab.draft == ""


def test_a_decisions_form_draft_comes_back_with_the_box() -> None:
    tab = ada_tab(draft="")
    typed = FormMemory(panel="reject", drafts={"reject": {"reason": "Not before Friday"}})
    tab._memory = {"call_1": typed}
    assert tab._hide_signed_out(None)
    assert tab._memory == {}
    tab._give_back_kept(ADA)
    assert tab._memory == {"call_1": typed}


def test_emptied_again_before_they_come_back_the_kept_text_stays() -> None:
    """The page was loaded again meanwhile (the address names the conversation, the state
    saved as JSON) and emptied again: what was kept the first time is not lost."""
    tab = ada_tab()
    tab._memory = {"call_1": FormMemory(panel="reject", drafts={"reject": {"reason": "No"}})}
    assert tab._hide_signed_out(None)
    tab._client_json = '{"messages": []}'  # an emptied page's state, as saved
    assert tab._hide_signed_out(None) is False
    tab.thread_shown = "thread-1"  # shown again at its address
    assert tab._hide_signed_out(None) is True
    tab._give_back_kept(ADA)
    assert tab.draft == "and then 10 to Sam"
    assert tab._memory["call_1"].drafts == {"reject": {"reason": "No"}}


def test_someone_else_signing_in_is_not_given_the_box() -> None:
    tab = ada_tab()
    tab._memory = {"call_1": FormMemory(panel="reject", drafts={"reject": {"reason": "No"}})}
    assert tab._hide_signed_out(None)
    tab._give_back_kept(BOB)
    assert (tab.draft, tab._memory) == ("", {})
    tab._give_back_kept(ADA)  # dropped for good, not kept for her either
    assert (tab.draft, tab._memory) == ("", {})


def test_what_the_person_typed_since_is_not_overwritten() -> None:
    tab = ada_tab()
    assert tab._hide_signed_out(None)
    tab.draft = "typed after signing in again"
    tab._give_back_kept(ADA)
    assert tab.draft == "typed after signing in again"


def test_nothing_is_hidden_while_nobody_can_tell_who_is_here() -> None:
    """The accounts database did not answer (503): not a sign-out."""
    tab = ada_tab()
    tab._identity_unknown = True
    assert tab._hide_signed_out(None) is False
    assert (tab.thread_shown, tab.draft) == ("thread-1", "and then 10 to Sam")


def test_a_signed_in_person_or_a_tab_nobody_used_hides_nothing() -> None:
    assert ada_tab()._hide_signed_out(ADA) is False
    fresh = ChatState(_reflex_internal_init=True)  # type: ignore[call-arg]
    assert fresh._hide_signed_out(None) is False

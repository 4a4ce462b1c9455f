"""What the chat's status row says while a run is going (`ChatState.working`,
`ChatState.resuming_quiet`, from `awaiting_words`: the client's request is out and no
reply's words show yet), on the state itself. The browser test shows "Working…" for a slow
agent; a reply's first words come too soon for a browser test to catch the moment between,
and a run's end too."""

from __future__ import annotations

from chat_app.ui.state import ChatState


def tab(*, running: bool, resuming: bool, awaiting: bool) -> ChatState:
    state = ChatState(_reflex_internal_init=True)  # type: ignore[call-arg]
    state.running, state.resuming, state.awaiting_words = running, resuming, awaiting
    return state


def test_a_run_with_nothing_to_show_is_working_and_a_reply_ends_it() -> None:
    assert tab(running=True, resuming=False, awaiting=True).working
    assert not tab(running=True, resuming=False, awaiting=False).working  # words, or its end
    assert not tab(running=False, resuming=False, awaiting=True).working


def test_resuming_is_said_until_the_continuations_reply_shows() -> None:
    waiting = tab(running=True, resuming=True, awaiting=True)
    assert waiting.resuming_quiet and not waiting.working  # said once, as resuming
    assert not tab(running=True, resuming=True, awaiting=False).resuming_quiet

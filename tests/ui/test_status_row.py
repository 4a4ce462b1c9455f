"""What the chat's status row says while a run is going (`ChatState.working`,
`ChatState.resuming_quiet`), on the state itself: the browser test shows "Working…" for a
slow agent; a reply's first words come too soon after a continuation starts for a browser
test to catch the moment between."""

from __future__ import annotations

from chat_app.ui.state import ChatState


def tab(*, running: bool, resuming: bool, streaming: str) -> ChatState:
    state = ChatState(_reflex_internal_init=True)  # type: ignore[call-arg]
    state.running, state.resuming, state.streaming_id = running, resuming, streaming
    return state


def test_a_run_with_nothing_to_show_is_working_and_a_reply_ends_it() -> None:
    assert tab(running=True, resuming=False, streaming="").working
    assert not tab(running=True, resuming=False, streaming="msg-1").working
    assert not tab(running=False, resuming=False, streaming="").working


def test_resuming_is_said_until_the_continuations_reply_shows() -> None:
    waiting = tab(running=True, resuming=True, streaming="")
    assert waiting.resuming_quiet and not waiting.working  # said once, as resuming
    assert not tab(running=True, resuming=True, streaming="msg-2").resuming_quiet

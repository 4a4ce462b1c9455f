"""When a page stores the answer in flight on the desk: after its continuation's first words."""

from __future__ import annotations

from chat_app.ui.state import RECORD_WAIT_SECONDS, InFlightRecord


def test_nothing_is_due_before_an_answer_leaves() -> None:
    record = InFlightRecord()
    record.words_out()  # a first request's reply: no answer is in flight
    assert not record.take(100.0, first_words=False)


def test_it_waits_for_the_first_words_and_a_flush_after_them() -> None:
    record = InFlightRecord()
    record.resuming_changed(0.0)
    assert not record.take(0.05, first_words=False)  # the continuation has said nothing yet
    record.words_out()
    assert not record.take(0.1, first_words=True)  # not beside them
    assert record.take(0.15, first_words=False)
    assert not record.take(0.2, first_words=False)  # once


def test_words_out_before_the_answer_left_do_not_count() -> None:
    """The paused run's own reply, say (`_follow` does not count a reply the page shows
    already as first words at all)."""
    record = InFlightRecord()
    record.words_out()
    record.resuming_changed(0.0)
    assert not record.take(0.05, first_words=False)
    record.words_out()  # the continuation's own, a flush later
    assert record.take(0.1, first_words=False)


def test_without_words_it_is_stored_after_the_wait() -> None:
    record = InFlightRecord()
    record.resuming_changed(10.0)
    assert not record.take(10.0 + RECORD_WAIT_SECONDS / 2, first_words=False)
    assert record.take(10.0 + RECORD_WAIT_SECONDS, first_words=False)


def test_a_second_change_before_the_write_keeps_the_first_deadline() -> None:
    record = InFlightRecord()
    record.resuming_changed(0.0)
    record.resuming_changed(0.4)
    assert record.take(RECORD_WAIT_SECONDS, first_words=False)

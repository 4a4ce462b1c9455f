"""What happens after a batch is sent: failures, correlation, retry (`docs/protocol.md` §4.8)."""

from __future__ import annotations

import pytest

from chat_app.client import InterruptManager, Submission, UsageError
from chat_app.interrupts import BatchInterruptError, ItemInterruptError
from tests.client.builders import RUN, THREAD, approval, hydrated, plain_tool


def submitted(*ids: str) -> tuple[InterruptManager, Submission]:
    tool = plain_tool()
    manager = hydrated(*(approval(tool, i) for i in ids), tools=[tool])
    submission = manager.resolve_all(True)
    assert submission is not None
    return manager, submission


def item_error(
    interrupt_id: str, code: str = "invalid-payload", **fields: object
) -> ItemInterruptError:
    values: dict[str, object] = {
        "thread_id": THREAD, "interrupted_run_id": RUN, "interrupt_id": interrupt_id,
        "code": code, "message": f"{interrupt_id} is wrong",
    }  # fmt: skip
    values.update(fields)
    return ItemInterruptError(**values)  # type: ignore[arg-type]


def batch_error(
    ids: tuple[str, ...], code: str = "item-validation-failed", **fields: object
) -> BatchInterruptError:
    values: dict[str, object] = {
        "thread_id": THREAD, "interrupted_run_id": RUN, "interrupt_ids": ids, "code": code,
        "message": "One or more interrupt resolutions are invalid.",
    }  # fmt: skip
    values.update(fields)
    return BatchInterruptError(**values)  # type: ignore[arg-type]


def test_a_transport_failure_is_a_retryable_root_error_and_puts_items_in_error() -> None:
    manager, submission = submitted("a", "b")
    manager.submission_failed(submission, message="Interrupt continuation could not be started.")
    manager.submission_settled(submission)
    (error,) = manager.errors
    assert (error.code, error.source, error.retryable) == ("transport", "transport", True)
    assert [i.status for i in manager.interrupts] == ["error", "error"]
    assert manager.can_retry and not manager.resuming


def test_retry_resends_the_identical_submission_object() -> None:
    manager, submission = submitted("a")
    manager.submission_failed(submission, message="down")
    manager.submission_settled(submission)
    assert manager.retry() is submission
    assert manager.resuming


def test_retry_without_a_retryable_submission_adds_a_non_retryable_transport_error() -> None:
    manager = hydrated(approval(plain_tool()), tools=[plain_tool()])
    assert manager.retry() is None
    (error,) = manager.errors
    assert (error.code, error.message, error.retryable) == (
        "transport",
        "There is no retryable interrupt submission.",
        False,
    )


def test_retry_while_a_submission_is_in_flight_is_a_usage_error() -> None:
    manager, _ = submitted("a")
    with pytest.raises(UsageError, match="Interrupt submission is already active."):
        manager.retry()


def test_any_mutation_invalidates_a_pending_retry() -> None:
    manager, submission = submitted("a", "b")
    manager.submission_failed(submission, message="down")
    manager.submission_settled(submission)
    manager.clear_item("approval_a")
    assert not manager.can_retry


def test_correlated_server_item_errors_land_on_their_items_and_batch_errors_at_the_root() -> None:
    manager, submission = submitted("a", "b")
    errors: list[ItemInterruptError | BatchInterruptError] = [
        item_error("approval_a"),
        batch_error(("approval_a", "approval_b")),
    ]
    manager.submission_failed(submission, message="x", errors=errors)
    manager.submission_settled(submission)
    a, b = manager.interrupts
    assert (a.status, a.errors, b.status, b.errors) == ("error", (errors[0],), "error", ())
    assert manager.errors == (errors[1],)
    assert not manager.can_retry


def test_errors_for_another_batch_are_dropped_and_reported_as_one_protocol_error() -> None:
    manager, submission = submitted("a", "b")
    errors: list[ItemInterruptError | BatchInterruptError] = [
        item_error("approval_a"),
        item_error("approval_zzz"),
        batch_error(("approval_a",)),
    ]
    manager.submission_failed(submission, message="x", errors=errors)
    manager.submission_settled(submission)
    codes = [e.code for e in manager.errors]
    assert codes == ["protocol"]
    assert (
        manager.errors[0].message == "Interrupt submission errors did not match the active batch."
    )
    assert manager.interrupts[0].errors == (errors[0],)


def test_errors_from_another_run_do_not_correlate() -> None:
    manager, submission = submitted("a")
    manager.submission_failed(
        submission, message="x", errors=[item_error("approval_a", interrupted_run_id="run-9")]
    )
    manager.submission_settled(submission)
    assert [e.code for e in manager.errors] == ["protocol"]
    assert [(i.status, i.errors) for i in manager.interrupts] == [("error", ())]


def test_retry_is_enabled_only_for_retryable_errors_that_are_not_stale_expired_or_conflict() -> (
    None
):
    manager, submission = submitted("a")
    manager.submission_failed(
        submission, message="x", errors=[item_error("approval_a", retryable=True)]
    )
    assert manager.can_retry
    manager, submission = submitted("a")
    manager.submission_failed(
        submission, message="x", errors=[item_error("approval_a", code="stale", retryable=True)]
    )
    assert not manager.can_retry


def test_a_new_server_batch_error_replaces_the_previous_one_with_the_same_correlation() -> None:
    manager, submission = submitted("a")
    first = batch_error(("approval_a",), message="first")
    manager.submission_failed(submission, message="x", errors=[first])
    manager.submission_settled(submission)
    second_submission = manager.resolve("approval_a", approved=False)
    assert second_submission is not None
    second = batch_error(("approval_a",), message="second")
    manager.submission_failed(second_submission, message="x", errors=[second])
    assert manager.errors == (second,)


def test_a_superseded_submission_cannot_change_the_new_batch() -> None:
    manager, submission = submitted("a")
    manager.hydrate(thread_id=THREAD, interrupted_run_id="run-2", generation=0, descriptors=[])
    manager.submission_failed(submission, message="late")
    manager.submission_settled(submission)
    assert manager.errors == ()

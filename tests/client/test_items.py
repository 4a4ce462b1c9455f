"""Protocol rules the client answers for, so that a UI only shows them: when an interrupt can
no longer be answered, and when a run's error is a refused continuation."""

from __future__ import annotations

from typing import Any

import pytest

from chat_app.client import ClientState, GenericInterrupt, ToolApprovalInterrupt
from chat_app.interrupts import ItemInterruptError, parse_js_date

EXPIRY = "2026-11-29T12:00:00.000Z"


def _read_date(text: str) -> float:
    at = parse_js_date(text)
    assert at is not None
    return at


AT = _read_date(EXPIRY)


def approval(**fields: Any) -> ToolApprovalInterrupt:
    return ToolApprovalInterrupt(
        id="approval_c1", reason="tool_approval", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="delete", tool_call_id="c1", **fields,
    )  # fmt: skip


def test_an_interrupt_expires_at_its_expiry_not_before() -> None:
    assert not approval(expires_at=EXPIRY).expired(AT - 1)
    assert approval(expires_at=EXPIRY).expired(AT)
    assert approval(expires_at=EXPIRY).expired(AT + 1)


def test_the_expiry_is_read_as_javascript_reads_a_date() -> None:
    # V8's legacy fallback reads this; Python's ISO parser would not.
    assert approval(expires_at="Sun, 29 Nov 2026 12:00:00 GMT").expired(AT)
    assert not approval(expires_at="Sun, 29 Nov 2026 12:00:00 GMT").expired(AT - 1)
    # Not a date at all (NaN in JavaScript), or no expiry: it never expires here.
    assert not approval(expires_at="soon").expired(AT * 2)
    assert not approval().expired(AT * 2)


def test_an_interrupt_the_server_refused_as_expired_is_expired_whatever_the_clock() -> None:
    def refused(code: Any) -> GenericInterrupt:
        error = ItemInterruptError(
            thread_id="t", interrupted_run_id="r", interrupt_id="ask", code=code,
            message="…", source="server",
        )  # fmt: skip
        return GenericInterrupt(id="ask", reason="question", thread_id="t",
                                interrupted_run_id="r", binding={}, errors=(error,))  # fmt: skip

    assert refused("expired").expired(0)
    assert not refused("conflict").expired(0)


@pytest.mark.parametrize(
    ("code", "refused"),
    [
        ("expired", True),  # an item's code
        ("invalid-payload", True),
        ("conflict", True),  # a batch's code (answered before)
        ("incomplete-batch", True),
        ("model-rate-limit", False),  # the model failed: a run error
        ("", False),
        (None, False),
    ],
)
def test_a_run_error_is_a_refusal_when_its_code_is_an_interrupt_error_code(
    code: str | None, refused: bool
) -> None:
    assert ClientState(thread_id="t", error="…", error_code=code).refused is refused

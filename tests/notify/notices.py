"""What the notify tests share: a clock they move by hand, and a notice to send."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from chat_app.notify import Notice, Recipient

ADA = Recipient(email="ada@example.com", name="Ada Lovelace")
SAM = Recipient(email="sam@example.com", name="Sam")
START = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


class Clock:
    """The time an `Outbox` reads: still until moved."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def make_notice(**changes: Any) -> Notice:
    """A large transfer waiting for finance; `changes` replace its fields."""
    notice = Notice(
        event="decision-needed",
        decision_id="d0123456789abcdef0123456789abcd",
        thread_id="t-transfer",
        kind="tool",
        name="transfer",
        summary="recipient=Ada, amount=5000",
        args={"recipient": "Ada", "amount": 5000},
        requester_email="rita@example.com",
        requester_name="Rita",
        rule="large-transfers",
        link="http://chat.example.com/c/t-transfer",
        expires_at=START + timedelta(hours=4),
        waiting_since=START - timedelta(minutes=5),
        note="",
        recipients=(ADA, SAM),
    )
    return replace(notice, **changes)

"""What every engine test shares: the demo's words streamed without pauses, and a ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from chat_app.trust import SQLiteLedger


@pytest.fixture(autouse=True)
def _no_token_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


@pytest.fixture
def ledger(tmp_path: Path) -> SQLiteLedger:
    return SQLiteLedger(tmp_path / "ledger.db")

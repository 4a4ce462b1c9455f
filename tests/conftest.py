"""Settings that would make the suite depend on the developer's shell are cleared here."""

import pytest


@pytest.fixture(autouse=True)
def _no_outside_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    # The demo must run its scripted model, in process, whatever the shell exports.
    monkeypatch.delenv("CHAT_APP_MODEL", raising=False)
    monkeypatch.delenv("CHAT_APP_AGENT_URL", raising=False)

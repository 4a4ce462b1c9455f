"""Who the audit trail names: from a sign-in proxy's header, a fixed user, or nobody."""

import pytest

from chat_app.ui.session import actor_from


def test_the_configured_header_names_the_actor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_USER_HEADER", "X-Forwarded-Email")
    monkeypatch.setenv("CHAT_APP_USER", "fallback")
    assert actor_from({"x-forwarded-email": "ada@example.com"}) == "ada@example.com"
    assert actor_from({}) == "fallback"


def test_without_configuration_nobody_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAT_APP_USER_HEADER", raising=False)
    monkeypatch.delenv("CHAT_APP_USER", raising=False)
    assert actor_from({"x-forwarded-email": "ada@example.com"}) is None

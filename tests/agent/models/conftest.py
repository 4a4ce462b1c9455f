"""One fake provider server for the session; each test starts with it empty."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.fakes.provider import FakeProvider, serve_fake_provider


@pytest.fixture(scope="session")
def provider_server() -> Iterator[FakeProvider]:
    with serve_fake_provider() as fake:
        yield fake


@pytest.fixture
def fake(provider_server: FakeProvider) -> FakeProvider:
    provider_server.reset()
    return provider_server

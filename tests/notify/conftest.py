"""The notify tests that touch the outbox run on each kind of the app's database
(`database_url`, tests/conftest.py: `test_x[sqlite]`, `test_x[postgresql]`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from chat_app.trust.store import open_database


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """A new, migrated database; disposed of at the end."""
    engine = open_database(database_url)
    try:
        yield engine
    finally:
        engine.dispose()

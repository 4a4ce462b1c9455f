"""`iso_from_epoch` (cached per second) writes what `datetime` writes, rounding included."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from chat_app.trust.seal import iso_from_epoch


def _reference(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def test_iso_from_epoch_matches_datetime() -> None:
    rng = random.Random(7)
    values: list[float] = [rng.uniform(0, 4e9) for _ in range(20_000)]
    values += [rng.randrange(0, 4_000_000_000) for _ in range(1_000)]
    values += [w + k / 1e6 for w in (1_700_000_000, 1_900_000_000) for k in range(0, 10**6, 9973)]
    # Halfway and carry cases of the microsecond rounding, and before the epoch.
    values += [1.9999995, 1.0000005, 0.5e-6, 1.5e-6, 2.5e-6, 1_700_000_000.9999995, -0.5, -1.5e-6]
    assert [iso_from_epoch(v) for v in values] == [_reference(v) for v in values]

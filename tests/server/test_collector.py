"""Both ways of serving collect garbage less often than CPython would, once the app is built.

Each is built in a process of its own: the collector's settings are the process's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chat_app.server.collector import (
    FULL_COLLECTION_EVERY,
    MIDDLE_COLLECTION_EVERY,
    YOUNG_COLLECTION_EVERY,
)

ROOT = Path(__file__).resolve().parents[2]
TUNED = (YOUNG_COLLECTION_EVERY, MIDDLE_COLLECTION_EVERY, FULL_COLLECTION_EVERY)

BUILD = {
    # What each worker of `python -m chat_app.server` builds (uvicorn's factory).
    "server": "from chat_app.server.__main__ import app_from_env; app_from_env()",
    # What `make run` serves: Reflex imports the app, then forks its workers.
    "app": "import chat_app.chat_app",
}


@pytest.mark.parametrize("served", sorted(BUILD))
def test_the_served_process_collects_less_often(served: str, tmp_path: Path) -> None:
    script = (
        "import gc; before = gc.get_threshold(); "
        f"{BUILD[served]}; print('thresholds', *before, *gc.get_threshold())"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CHAT_APP_")}
    finished = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**environment, "CHAT_APP_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    (said,) = [line for line in finished.stdout.splitlines() if line.startswith("thresholds ")]
    numbers = [int(n) for n in said.split()[1:]]
    before, after = tuple(numbers[:3]), tuple(numbers[3:])
    assert after == TUNED
    assert before[0] < YOUNG_COLLECTION_EVERY  # the interpreter's own: collected more often

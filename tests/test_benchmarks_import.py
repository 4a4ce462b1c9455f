"""The benchmarks' modules import with the test tools alone. `make bench` is run by hand, and
nothing else imports them: a module that fails at import (a changed name or shape it reads
at the top) would be found only at the next report."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
MODULES = sorted(
    info.name for info in pkgutil.iter_modules([str(BENCHMARKS)]) if info.name != "__main__"
)


def test_every_benchmark_is_found() -> None:
    assert {"bench_http", "bench_desk", "bench_browser", "report"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_a_benchmark_module_imports(name: str) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    if name.startswith("bench_"):  # what `python -m benchmarks` calls in each
        assert callable(getattr(module, "run", None))

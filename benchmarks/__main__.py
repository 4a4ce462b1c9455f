"""`python -m benchmarks [--quick] [--only NAME ...] [--out DIR]`: run the benchmarks, write
the report.

Writes `docs/benchmarks.md`, `docs/benchmarks/*.png` and `docs/benchmarks/results.json` (with
`--out DIR`: `DIR/benchmarks.md` and `DIR/benchmarks/…`, leaving the committed report alone).
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from pathlib import Path

from . import report
from .report import log, write_report

FINDINGS = Path(__file__).with_name("FINDINGS.md")

ALL = ["canonical", "continuation", "http", "browser", "desk"]

HEADER = (
    "Each figure is measured in one run, ours and the reference on the same machine and the "
    "same inputs; times are medians over repeated runs. Speed-ups and throughput ratios "
    "above 1 mean chat_app is ahead; ratios of ours to TanStack's (p99, CPU) below 1 do. "
    "Raw numbers: [`benchmarks/results.json`](benchmarks/results.json)."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument("--only", nargs="*", choices=ALL, default=ALL)
    parser.add_argument(
        "--out", type=Path, help="write the report here instead of docs/ (e.g. a smoke run)"
    )
    options = parser.parse_args()
    if options.out is not None:
        report.OUTPUT["dir"] = options.out.resolve()
    started = time.monotonic()
    sections = []
    for name in options.only:
        log(f"--- {name}")
        module = importlib.import_module(f"benchmarks.bench_{name}")
        load_before, begun = os.getloadavg()[0], time.monotonic()
        section = module.run(options.quick)
        section.notes.append(
            f"_This benchmark took {time.monotonic() - begun:.0f} s; the machine's load average "
            f"was {load_before:.1f} before it and {os.getloadavg()[0]:.1f} after._"
        )
        sections.append(section)
    findings = FINDINGS.read_text() if FINDINGS.exists() and options.only == ALL else ""
    path = write_report(sections, HEADER, time.monotonic() - started, findings)
    log(f"wrote {path} in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()

"""Shared helpers: timing, the node side, results and the markdown/PNG report.

Every benchmark module has `run(quick: bool) -> Section`; `python -m benchmarks` runs them
and `write_report` turns the sections into `docs/benchmarks.md` and `docs/benchmarks/*.png`.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chat_app.server.collector import tune_collector

ROOT = Path(__file__).resolve().parents[1]
JS_DIR = Path(__file__).resolve().parent / "js"
INTEROP_JS = ROOT / "tests" / "interop" / "js"
DOCS = ROOT / "docs"
#: Where the report goes: `benchmarks.md` here, its PNGs and results.json in `benchmarks/`
#: under it (`python -m benchmarks --out DIR` changes it, e.g. for a smoke run).
OUTPUT = {"dir": DOCS}


def _plots() -> Path:
    return OUTPUT["dir"] / "benchmarks"


@dataclass
class Table:
    """A further table in a section, under its own heading, after the section's plots."""

    title: str
    intro: str
    headers: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)


@dataclass
class Goal:
    """A goal a benchmark checks, and whether this run met it (the report's summary)."""

    source: str  # where it was set, e.g. "issue 19"
    what: str
    met: bool
    figures: str  # this run's figures behind the verdict


@dataclass
class Section:
    """One benchmark's part of the report."""

    title: str
    intro: str
    headers: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)  # file names under docs/benchmarks/
    data: dict[str, Any] = field(default_factory=dict)  # raw figures, for results.json
    tables: list[Table] = field(default_factory=list)  # further tables, after the plots
    goals: list[Goal] = field(default_factory=list)


def median(values: list[float]) -> float:
    return statistics.median(values)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (robust to other load on the machine)."""
    return _stat_cpu(Path(f"/proc/{pid}/stat").read_text())


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU time of every live process in a process group (an app's workers)."""
    return sum(group_cpu_by_process(pgid).values())


def group_cpu_by_process(pgid: int) -> dict[int, float]:
    """User + system CPU time of each live process in a process group, by process id."""
    found: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended meanwhile
            continue
        if int(text.rsplit(")", 1)[1].split()[2]) == pgid:
            found[int(stat.parent.name)] = _stat_cpu(text)
    return found


def _stat_cpu(stat: str) -> float:
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def calibrate(fn: Callable[[], object], min_seconds: float) -> int:
    """How many calls of `fn` take about `min_seconds` (after a warm-up call)."""
    fn()
    loops = 1
    while True:
        spent = sample(fn, loops) * loops
        if spent >= min_seconds / 4 or loops >= 1 << 22:
            return max(1, round(loops * min_seconds / max(spent, 1e-9)))
        loops *= 2


@contextmanager
def collector_as_served() -> Iterator[None]:
    """The collector's thresholds as the servers set theirs (`tune_collector`) for the
    block, this process's own again after it."""
    thresholds = gc.get_threshold()
    tune_collector()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def sample(fn: Callable[[], object], loops: int) -> float:
    """Mean seconds per call over `loops` calls."""
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


class Node:
    """A long-lived `node benchmarks/js/<script>` answering one JSON line per request line."""

    def __init__(self, script: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            ["node", str(JS_DIR / script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "TZ": "UTC", "INTEROP_JS": str(INTEROP_JS)},
        )

    def ask(self, line: str) -> Any:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"node exited ({self.proc.wait()}) on request {line[:200]!r}")
        self._wait_idle()
        return json.loads(answer)

    def _wait_idle(self, most: float = 1.0) -> None:
        """Return once node has used no CPU for 30 ms (or after `most` seconds).

        After answering, V8 goes on collecting garbage and compiling on threads of its own;
        on this machine's two cores that slowed the Python measured right after by a quarter
        (10.1 against 8.1 ms a continuation at 10,000 messages). Node measures itself while
        Python waits, so both are now measured on a quiet machine.
        """
        deadline = time.perf_counter() + most
        last = cpu_seconds(self.proc.pid)
        quiet_since = time.perf_counter()
        while time.perf_counter() < deadline:
            time.sleep(0.01)
            now = cpu_seconds(self.proc.pid)
            if now != last:
                last, quiet_since = now, time.perf_counter()
            elif time.perf_counter() - quiet_since >= 0.03:
                return

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Node:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def fmt(value: float, digits: int = 3) -> str:
    """A number with `digits` significant digits, without scientific notation when small."""
    if value == 0:
        return "0"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def loglog_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x): the growth exponent."""
    import math

    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / den


def _pyplot() -> Any:
    """matplotlib's pyplot on its file-only backend, imported when a figure is drawn: the
    benchmarks' modules then import where only the test tools are installed, as a test does."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def new_figure(title: str, xlabel: str, ylabel: str) -> tuple[Any, Any]:
    fig, ax = _pyplot().subplots(figsize=(7, 4.2), dpi=110)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def save_figure(fig: Any, name: str) -> str:
    _plots().mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(_plots() / name)
    _pyplot().close(fig)
    return name


def environment() -> dict[str, str]:
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    pkg = INTEROP_JS / "node_modules" / "@tanstack" / "ai" / "package.json"
    tanstack = json.loads(pkg.read_text())["version"] if pkg.exists() else "?"
    return {
        "python": platform.python_version(),
        "node": node.stdout.strip(),
        "@tanstack/ai": tanstack,
        "cpu": f"{os.cpu_count()} cores, {platform.machine()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return fmt(value)
    return str(value)


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    """A markdown table and the blank line after it; nothing without rows."""
    if not rows:
        return []
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def write_report(sections: list[Section], header: str, elapsed: float, findings: str) -> Path:
    """Write docs/benchmarks.md (the sections, then the hand-written findings) and the raw
    numbers to docs/benchmarks/results.json."""
    env = environment()
    lines = [
        "# Benchmarks: chat_app side by side with TanStack AI",
        "",
        "Generated by `make bench` (`.venv/bin/python -m benchmarks`); do not edit by hand.",
        f"Run on {env['date']}: Python {env['python']}, node {env['node']}, "
        f"`@tanstack/ai` {env['@tanstack/ai']}, {env['cpu']}; the whole run took "
        f"{elapsed / 60:.1f} min.",
        "",
        header,
        "",
        *_summary(sections),
    ]
    for section in sections:
        lines += [f"## {section.title}", "", section.intro, ""]
        lines += _table(section.headers, section.rows)
        for note in section.notes:
            lines += [note, ""]
        for plot in section.plots:
            lines += [f"![{plot}](benchmarks/{plot})", ""]
        for table in section.tables:
            lines += [f"### {table.title}", "", table.intro, ""]
            lines += _table(table.headers, table.rows)
            for note in table.notes:
                lines += [note, ""]
    if findings:
        lines += [findings.strip(), ""]
    path = OUTPUT["dir"] / "benchmarks.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    raw = {"environment": env, "sections": {s.title: s.data for s in sections}}
    _plots().mkdir(parents=True, exist_ok=True)
    (_plots() / "results.json").write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    return path


def _summary(sections: list[Section]) -> list[str]:
    """Every goal of the run, met or not, with its figures: the report's first table."""
    goals = [(section, goal) for section in sections for goal in section.goals]
    if not goals:
        return []
    met = sum(goal.met for _, goal in goals)
    rows = [
        [
            section.title.split(".")[0],
            goal.source,
            goal.what,
            "**met**" if goal.met else "**not met**",
            goal.figures,
        ]
        for section, goal in goals
    ]
    return [
        "## Summary: the goals",
        "",
        f"{met} of {len(goals)} goals met in this run. Each is checked by its section below, "
        "from the same figures.",
        "",
        *_table(["section", "set by", "goal", "this run", "figures"], rows),
    ]


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

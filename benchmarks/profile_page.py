"""Where the chat page's main thread spends an Approve click, by history length.

`python -m benchmarks.profile_page [--history 10 500 2000] [--approvals 3] [--seed DIR]`

Not part of `make bench`: a tool for finding what grows with the conversation. The app is
built and served as the browser benchmark serves it (`bench_browser.app`); for each history
length H a conversation of H messages is grown through the page (or, with `--seed DIR`, taken
from a data folder saved by an earlier run with `--save-seed DIR`, which saves the growing),
then "delete project apollo" → Approve, as in the benchmark, with:

* a Chrome trace of the click to the end of the exchange: the page's main thread, by trace
  event (self time: script, style, layout, paint, garbage collection, …);
* a V8 CPU profile over the same span: the functions with the most self time;
* every websocket frame the page receives after the click: when, how big, which vars.

The harness waits as the benchmark does (a mutation observer that looks at what changed),
so what is measured is the page's own work; `--bench-waits` uses the benchmark's waits
instead (Playwright's text search over the whole page), to see what those cost.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests.ui.app_server import CHROMIUM, CHROMIUM_ARGS

from .bench_browser import IDLE_SEND, WATCH, Page, app
from .report import ROOT, log

CATEGORIES = [
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "v8",
    "v8.execute",
    "blink",
    "cc",
    "toplevel",
]
VAR = re.compile(r'"([a-z_]+)_rx_state_"')

#: The benchmark's watch before it stopped querying the whole page on every mutation.
OLD_WATCH = """() => {
  window.__bench = {click: null, token: null};
  document.addEventListener('click', () => {
    if (window.__bench.click === null) window.__bench.click = performance.now();
  }, {capture: true, once: true});
  const observer = new MutationObserver(() => {
    const el = document.querySelector('.chat-message.streaming');
    if (el && el.textContent.includes('Project')) {
      window.__bench.token = performance.now();
      observer.disconnect();
    }
  });
  observer.observe(document.body, {childList: true, subtree: true, characterData: true});
}"""


def self_times(trace: dict[str, Any], key: str = "tdur") -> tuple[Counter[str], float]:
    """Self time (ms) per trace event name on the page's renderer main thread, and the total
    of its top-level tasks: thread CPU time (`tdur`, not slowed down by other load on the
    machine), or with `key="dur"` wall time."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    mains = [k for k, name in names.items() if name == "CrRendererMain"]
    per_thread: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if (e.get("pid"), e.get("tid")) in mains and e.get("ph") == "X" and "dur" in e:
            per_thread[(e["pid"], e["tid"])].append(e)
    if not per_thread:
        return Counter(), 0.0
    # The page's renderer: the main thread with the most work.
    main = max(per_thread, key=lambda k: sum(e["dur"] for e in per_thread[k]))
    spans = sorted(per_thread[main], key=lambda e: (e["ts"], -e["dur"]))
    result: Counter[str] = Counter()
    stack: list[tuple[float, str]] = []  # (end, name) of the enclosing events
    total = 0.0
    for e in spans:
        start, spent = e["ts"], e.get(key, e["dur"]) / 1000
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack:  # a child: its time is not its parent's own
            result[stack[-1][1]] -= spent
        else:
            total += spent
        result[e["name"]] += spent
        stack.append((start + e["dur"], e["name"]))
    return result, total


def js_hotspots(profile: dict[str, Any], top: int = 25) -> list[tuple[float, str]]:
    nodes = {n["id"]: n for n in profile["nodes"]}
    spent: Counter[str] = Counter()
    deltas = profile.get("timeDeltas", [])
    for sample, delta in zip(profile["samples"], deltas[1:] + [0], strict=False):
        frame = nodes[sample]["callFrame"]
        url = frame.get("url", "").rsplit("/", 1)[-1]
        spent[f"{frame.get('functionName') or '(anon)'} {url}:{frame.get('lineNumber')}"] += (
            delta / 1000
        )
    return [(ms, name) for name, ms in spent.most_common(top)]


class Profiled(Page):
    def __init__(self, page: Any, app_pgid: int, bench_waits: bool, js: bool) -> None:
        self.bench_waits = bench_waits
        self.js = js
        self.stamped: list[tuple[float, int, str]] = []

        def stamp(frame: str | bytes) -> None:
            size = len(frame.encode()) if isinstance(frame, str) else len(frame)
            self.stamped.append((time.monotonic(), size, str(frame)))

        page.on("websocket", lambda ws: ws.on("framereceived", stamp))
        super().__init__(page, app_pgid)

    def profiled_approve(self, browser: Any, trace_path: Path) -> dict[str, Any]:
        x, y = self.approval_button()
        if self.bench_waits:  # the benchmark's waits before this change
            self.page.evaluate(OLD_WATCH)
            done = self.page.get_by_text("Project apollo is deleted.").count()
        else:
            self.page.evaluate(WATCH, "Project")
        time.sleep(0.3)
        if self.js:
            self.cdp.send("Profiler.enable")
            self.cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            self.cdp.send("Profiler.start")
        browser.start_tracing(page=self.page, path=str(trace_path), categories=CATEGORIES)
        before = self.costs()
        self.stamped.clear()
        clicked = time.monotonic()
        if self.bench_waits:
            self.page.locator(".approval-card button.approve").click()
        else:
            self.page.mouse.click(x, y)
        if self.bench_waits:
            self.page.wait_for_function("window.__bench.token !== null", timeout=30_000)
            self.page.get_by_text("Project apollo is deleted.").nth(done).wait_for()
            self.page.wait_for_selector(IDLE_SEND)
        else:
            self.ended()
        after = self.costs()
        browser.stop_tracing()
        profile = self.cdp.send("Profiler.stop")["profile"] if self.js else None
        bench = self.page.evaluate("window.__bench")
        self.check("Project apollo is deleted.")
        self.messages += 4
        trace = json.loads(trace_path.read_text())
        by_name, total = self_times(trace)
        _, wall = self_times(trace, "dur")
        frames = [
            (round((t - clicked) * 1000), size, sorted(set(VAR.findall(text))))
            for t, size, text in self.stamped
        ]
        return {
            "click_to_token_ms": bench["token"] - bench["click"],
            "task_ms": (after["page_task"] - before["page_task"]) * 1000,
            "thread_ms": (after["page_thread"] - before["page_thread"]) * 1000,
            "devtools_ms": (after["page_devtools"] - before["page_devtools"]) * 1000,
            "script_ms": (after["page_script"] - before["page_script"]) * 1000,
            "layout_ms": (after["page_layout"] - before["page_layout"]) * 1000,
            "backend_ms": (after["backend"] - before["backend"]) * 1000,
            "trace_cpu_ms": total,
            "trace_wall_ms": wall,
            "by_event": by_name.most_common(30),
            "js": js_hotspots(profile) if profile else [],
            "frames": frames,
        }


def grow_or_seed(page: Profiled, target: int, seeds: dict[str, Any] | None) -> None:
    if seeds is not None and str(target) in seeds:
        thread = seeds[str(target)]
        page.page.goto(f"/c/{thread}")
        page.page.wait_for_selector('#app-root[data-hydrated="true"]')
        page.page.wait_for_selector(IDLE_SEND)
        page.page.wait_for_function(
            "(n) => document.querySelectorAll('.chat-message').length >= n",
            arg=target // 2,
            polling=200,
            timeout=120_000,
        )
        page.messages = target
        return
    page.page.goto("/")
    page.page.wait_for_selector('#app-root[data-hydrated="true"]')
    page.messages = 0
    page.grow_to(target)


def copier(tree: Path) -> Any:
    """Copies the app's files of the git work tree `tree` (as `copy_app` does this one's)."""

    def copy(target: Path) -> None:
        listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        names = subprocess.run(listing, cwd=tree, check=True, capture_output=True).stdout
        for name in sorted(set(filter(None, names.decode().split("\0")))):
            source = tree / name
            if source.is_file() and not name.startswith(
                ("tests/", "tools/", "docs/", "benchmarks/")
            ):
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)

    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--history", type=int, nargs="*", default=[10, 500, 2000])
    parser.add_argument("--approvals", type=int, default=3)
    parser.add_argument(
        "--trees",
        type=Path,
        nargs="*",
        default=[ROOT],
        help="git work trees to build and compare, clicks interleaved (default: this one)",
    )
    parser.add_argument("--seed", type=Path, help="a data folder saved with --save-seed")
    parser.add_argument("--save-seed", type=Path)
    parser.add_argument("--bench-waits", action="store_true")
    parser.add_argument("--js", action="store_true", help="also a V8 CPU profile (slows JS)")
    parser.add_argument("--css", help="a style sheet added to the page (to try things)")
    parser.add_argument("--script", help="JavaScript run in the page once loaded (to try things)")
    parser.add_argument(
        "--invalidations", action="store_true", help="trace why style and layout are redone"
    )
    parser.add_argument("--categories", nargs="*", default=[], help="more trace categories")
    parser.add_argument("--chrome-args", nargs="*", default=[], help="more Chromium switches")
    parser.add_argument("--out", type=Path, default=Path("/tmp/profile-page"))
    options = parser.parse_args()
    if options.invalidations:
        CATEGORIES.append("disabled-by-default-devtools.timeline.invalidationTracking")
    CATEGORIES.extend(options.categories)
    options.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    seeds: dict[str, Any] | None = None
    if options.seed is not None:
        seeds = json.loads((options.seed / "threads.json").read_text())
    trees = [tree.resolve() for tree in options.trees]
    results: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    threads: dict[str, str] = {}
    with ExitStack() as stack:
        apps = []
        for tree in trees:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="profile-app-")))
            if options.seed is not None:
                shutil.copytree(options.seed / "data", root / "data")
            base, pgid = stack.enter_context(app(root, copier(tree)))
            apps.append((root, base, pgid))
        pw = stack.enter_context(sync_playwright())
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, *options.chrome_args]
        )
        contexts = []
        for _, base, _ in apps:
            context = browser.new_context(base_url=base, viewport={"width": 1200, "height": 800})
            context.set_default_timeout(120_000)
            contexts.append(context)
        # Every page first (one per tree and history length), then the clicks in rounds,
        # interleaved, so that a busy moment of the machine falls on all of them alike.
        pages: dict[tuple[int, int], Profiled] = {}
        for target in options.history:
            for t, ((_, _, pgid), context) in enumerate(zip(apps, contexts, strict=True)):
                page = Profiled(context.new_page(), pgid, options.bench_waits, options.js)
                started = time.monotonic()
                grow_or_seed(page, target, seeds)
                if options.css:
                    page.page.add_style_tag(content=options.css)
                if options.script:
                    log(f"profile: script gave {page.page.evaluate(options.script)!r}")
                log(f"profile: {target} messages ready in {time.monotonic() - started:.0f} s")
                threads[str(target)] = page.page.evaluate("location.pathname").rsplit("/c/")[-1]
                pages[(t, target)] = page
        for n in range(options.approvals):
            for (t, target), page in pages.items():
                page.page.bring_to_front()
                r = page.profiled_approve(browser, options.out / f"trace-{t}-{target}-{n}.json")
                results[(t, target)].append(r)
                log(
                    f"tree {t} H={target} #{n}: token {r['click_to_token_ms']:.0f} ms, task "
                    f"{r['task_ms']:.1f}, thread {r['thread_ms']:.1f}, script "
                    f"{r['script_ms']:.1f}, layout "
                    f"{r['layout_ms']:.1f}, trace cpu {r['trace_cpu_ms']:.1f}, backend "
                    f"{r['backend_ms']:.0f}"
                )
        for page in pages.values():
            page.page.close()
        browser.close()
        if options.save_seed is not None:
            options.save_seed.mkdir(parents=True, exist_ok=True)
            root = apps[0][0]
            shutil.copytree(root / "data", options.save_seed / "data", dirs_exist_ok=True)
            (options.save_seed / "threads.json").write_text(json.dumps(threads))
    (options.out / "results.json").write_text(
        json.dumps({f"{t} {h}": runs for (t, h), runs in results.items()}, indent=1)
    )
    for (t, target), runs in sorted(results.items(), key=lambda item: (item[0][1], item[0][0])):
        print(f"\n===== tree {t} ({trees[t]}) H={target} (median of {len(runs)})")
        for key in (
            "click_to_token_ms",
            "task_ms",
            "thread_ms",
            "devtools_ms",
            "trace_cpu_ms",
            "trace_wall_ms",
            "script_ms",
            "layout_ms",
            "backend_ms",
        ):
            print(f"  {key:20s} {statistics.median(r[key] for r in runs):8.1f}")
        events: Counter[str] = Counter()
        for r in runs:
            for name, ms in r["by_event"]:
                events[name] += ms / len(runs)
        print("  main thread by trace event (self CPU ms, mean):")
        for name, ms in events.most_common(18):
            print(f"    {ms:8.2f}  {name}")
        js: Counter[str] = Counter()
        for r in runs:
            for ms, name in r["js"]:
                js[name] += ms / len(runs)
        if js:
            print("  JS self time (ms, mean):")
            for name, ms in js.most_common(15):
                print(f"    {ms:8.2f}  {name}")
        print("  frames after the click (last run): ms, bytes, vars")
        for ms, size, names in runs[-1]["frames"]:
            print(f"    +{ms:5d} {size:7d}  {' '.join(names)}")


if __name__ == "__main__":
    main()

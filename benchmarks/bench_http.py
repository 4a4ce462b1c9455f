"""3. Pause -> resume cycles per second over HTTP, ours against a node TanStack AI server.

Servers: `python -m chat_app.server` (uvicorn, one process) as shipped — sealing and the
SQLite ledger on, sign-in and policy at the server's defaults — and with `CHAT_APP_SECURE=0` (a
bare server, like TanStack's); and `tests/interop/js/tanstack_server.mjs` (`chat()` with a
scripted mock adapter, same phrases). Scripted models, no token delay.

Issue 16's check, in the same run and interleaved with the rest: the as-shipped server twice
more, with identity and policy (`CHAT_APP_AUTH=proxy`, every request carrying
`X-Forwarded-Email: rita@example.com` from 127.0.0.1, the default policy) and without
(`CHAT_APP_AUTH=none`, `CHAT_APP_POLICY=none`), at C=16 only; its table is their server CPU
per cycle and the ratio, against the goal of at most 5% more.

One load generator for all (aiohttp on uvloop, this process; httpx cost the generator ~3 ms
of CPU per cycle on the servers' two cores, more than either server, so the throughput was
mostly the generator's): C clients each loop over cycles of
`transfer 25 to Ada` -> the approval pause (RUN_FINISHED with an interrupt outcome) -> a
continuation approving it, built from the streamed events as a client does -> the final
answer (RUN_FINISHED). The first request body is byte-identical for every server; the
continuation differs only in the ids the server chose. A cycle's latency is send to final
answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx
import uvloop

from tests.live_server import free_port

from .report import (
    INTEROP_JS,
    ROOT,
    Section,
    Table,
    cpu_seconds,
    fmt,
    log,
    median,
    new_figure,
    save_figure,
)

CONCURRENCY = [1, 16, 64]


@dataclass(frozen=True)
class Running:
    """A started server: its base URL, process id, and how it said it runs (ours: the
    sign-in and policy lines of its log, e.g. `sign-in: none — …; policy: none`)."""

    base: str
    pid: int
    says: str = ""


#: What each of our servers gets on top of the server's defaults (every other CHAT_APP_*
#: variable of the caller's environment is dropped, so "as shipped" means the defaults).
SERVER_ENV = {
    "ours": {},
    "ours-bare": {"CHAT_APP_SECURE": "0"},
    "ours-checks": {"CHAT_APP_AUTH": "proxy"},
    "ours-nochecks": {"CHAT_APP_AUTH": "none", "CHAT_APP_POLICY": "none"},
}


@contextmanager
def server(kind: str) -> Iterator[Running]:
    """Start one server; yield its base URL and process id."""
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CHAT_APP_")}
        env.update(CHAT_APP_DEMO_TOKEN_DELAY_MS="0", CHAT_APP_DATA_DIR=tmp)
        log_path = os.path.join(tmp, "server.log")
        if kind == "tanstack":
            env["TANSTACK_MOCK_WORDS"] = "1"  # our demo's words, one delta each, as ours sends
            cmd = ["node", str(INTEROP_JS / "tanstack_server.mjs"), "0"]
            proc = subprocess.Popen(
                cmd,
                cwd=INTEROP_JS,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert proc.stdout
            port = int(json.loads(proc.stdout.readline())["port"])
        else:
            env.update(SERVER_ENV[kind])
            port = free_port()
            cmd = [sys.executable, "-m", "chat_app.server", "--port", str(port)]
            with open(log_path, "wb") as log_file:  # its own log lines: a few, at the start
                proc = subprocess.Popen(
                    cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log_file
                )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{base}/api/tools", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{kind} server did not start ({proc.poll()})")
                time.sleep(0.2)
            yield Running(base, proc.pid, "" if kind == "tanstack" else _says(log_path))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _says(log_path: str) -> str:
    """The sign-in and policy lines of a server's log, paths relative to the repository."""
    with open(log_path, encoding="utf-8", errors="replace") as lines:
        said = [
            line.split(":", 1)[1].strip().replace(f"{ROOT}{os.sep}", "")
            for line in lines
            if line.split(":", 1)[-1].strip().startswith(("sign-in:", "policy:"))
        ]
    return "; ".join(said)


WIRE = {"events": 0, "bytes": 0}  # what the servers sent, for the per-cycle figures


async def _events(client: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> list[dict]:
    events = []
    async with client.post(url, data=json.dumps(body), headers=_JSON) as response:
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {await response.read()!r}")
        async for line in response.content:  # lines, each with its b"\n"
            if line.startswith(b"data: "):
                events.append(json.loads(line[6:]))
                WIRE["bytes"] += len(line) + 1  # the frame: the line and the blank line
    WIRE["events"] += len(events)
    return events


def _assistant(events: list[dict]) -> dict[str, Any]:
    """The assistant message a client rebuilds from the stream: text and tool calls."""
    text, calls, message_id = "", {}, ""
    for e in events:
        if e["type"] == "TEXT_MESSAGE_START":
            message_id = e["messageId"]
        elif e["type"] == "TEXT_MESSAGE_CONTENT":
            text += e["delta"]
        elif e["type"] == "TOOL_CALL_START":
            calls[e["toolCallId"]] = {
                "id": e["toolCallId"],
                "type": "function",
                "function": {"name": e["toolCallName"], "arguments": ""},
            }
        elif e["type"] == "TOOL_CALL_ARGS":
            calls[e["toolCallId"]]["function"]["arguments"] += e["delta"]
    return {
        "id": message_id,
        "role": "assistant",
        "content": text,
        "toolCalls": list(calls.values()),
    }


_JSON = {"content-type": "application/json"}


async def cycle(client: aiohttp.ClientSession, base: str) -> None:
    """send -> approval pause -> approve -> final answer; raises if any step goes wrong."""
    url = f"{base}/api/chat"
    thread, paused_run = f"thread-{uuid.uuid4().hex[:12]}", f"run-{uuid.uuid4().hex[:12]}"
    user = {"id": f"user-{thread}", "role": "user", "content": "transfer 25 to Ada"}
    first = await _events(
        client,
        url,
        {
            "threadId": thread,
            "runId": paused_run,
            "state": {},
            "messages": [user],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        },
    )
    finished = first[-1]
    interrupts = (finished.get("outcome") or {}).get("interrupts") or []
    if finished["type"] != "RUN_FINISHED" or len(interrupts) != 1:
        raise RuntimeError(f"expected one approval pause, got {[e['type'] for e in first]}")
    final = await _events(
        client,
        url,
        {
            "threadId": thread,
            "runId": f"run-{uuid.uuid4().hex[:12]}",
            "parentRunId": paused_run,
            "resume": [{"interruptId": interrupts[0]["id"], "status": "resolved", "payload": True}],
            "state": {},
            "messages": [user, _assistant(first)],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        },
    )
    text = "".join(e["delta"] for e in final if e["type"] == "TEXT_MESSAGE_CONTENT")
    if final[-1]["type"] != "RUN_FINISHED" or "rcpt" not in text:
        raise RuntimeError(f"expected the receipt, got {[e['type'] for e in final]} {text!r}")


async def load(
    base: str, concurrency: int, cycles: int, pid: int, headers: dict[str, str] | None = None
) -> dict[str, float]:
    """Run `cycles` cycles from `concurrency` clients: throughput, latency percentiles, and
    the server's CPU time per cycle. Each client has its own session and connection, and
    sends `headers` with every request."""
    latencies: list[float] = []
    remaining = cycles

    async def worker() -> None:
        nonlocal remaining
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1),
            timeout=aiohttp.ClientTimeout(total=120),
            headers=headers,
        ) as client:
            async with client.get(f"{base}/api/tools") as response:  # connect before the clock
                await response.read()
            await ready.wait()
            while remaining > 0:
                remaining -= 1
                start = time.perf_counter()
                await cycle(client, base)
                latencies.append(time.perf_counter() - start)

    ready = asyncio.Event()
    workers = [asyncio.ensure_future(worker()) for _ in range(concurrency)]
    await asyncio.sleep(0.5)  # let every client connect
    WIRE.update(events=0, bytes=0)
    started, cpu = time.perf_counter(), cpu_seconds(pid)
    ready.set()
    await asyncio.gather(*workers)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(pid) - cpu
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))]

    return {
        "events": WIRE["events"] / len(latencies),
        "bytes": WIRE["bytes"] / len(latencies),
        "cps": len(latencies) / elapsed,
        "p50": pct(0.50),
        "p99": pct(0.99),
        "cpu_ms": cpu / len(latencies) * 1e3,
    }


SERVERS = {
    "ours": "ours (as shipped: sealed, ledger)",
    "ours-bare": "ours, CHAT_APP_SECURE=0",
    "tanstack": "TanStack AI (node)",
}


# Per round and server. Enough cycles at C=1 that its p99 is not the single slowest cycle.
CYCLES = {1: 200, 16: 320, 64: 256}

#: Issue 16's check: the as-shipped server with identity and policy, and without.
CHECKS = {
    "ours-checks": "with identity and policy",
    "ours-nochecks": "without (the baseline)",
}
#: One client count is enough for a CPU-per-cycle ratio: 16, where the server is busy and its
#: fixed costs per cycle (the shared fsync) are lowest, so a per-cycle check weighs the most.
CHECKS_C = 16
#: Per measurement: ~1 s of server CPU, so /proc's 10 ms ticks are about 1% of it (and the
#: median of 10 paired ratios less); 20 measurements add ~30 s to the benchmark.
CHECKS_CYCLES = 512
#: Sent to both, so their requests are byte-identical and only the server's work differs.
REQUESTER = {"X-Forwarded-Email": "rita@example.com"}
#: Issue 16: identity and policy add at most 5% server CPU per cycle.
CHECKS_GOAL = 1.05


def run(quick: bool) -> Section:
    rounds = 5
    cycles = {c: n // 2 for c, n in CYCLES.items()} if quick else CYCLES
    checks_cycles = CHECKS_CYCLES // 2 if quick else CHECKS_CYCLES
    results: dict[str, dict[int, list[dict[str, float]]]] = {k: {} for k in SERVERS}
    checks: dict[str, list[dict[str, float]]] = {k: [] for k in CHECKS}
    ratios: list[float] = []  # with / without, each pair measured one right after the other
    with ExitStack() as exits:  # all servers up at once, rounds interleaved
        running = {kind: exits.enter_context(server(kind)) for kind in [*SERVERS, *CHECKS]}
        for kind, up in running.items():  # warm-up: node's JIT, imports, the SQLite file
            uvloop.run(load(up.base, 16, 320, up.pid, REQUESTER if kind in CHECKS else None))
        for round_ in range(rounds):
            for c in CONCURRENCY:
                for kind in SERVERS:
                    figures = uvloop.run(load(running[kind].base, c, cycles[c], running[kind].pid))
                    results[kind].setdefault(c, []).append(figures)
                    _log(f"http round {round_ + 1} C={c} {kind}", figures)
            # A B B A in one round, B A A B in the next: a drift in the machine's speed cancels.
            pair = list(CHECKS) if round_ % 2 == 0 else list(reversed(CHECKS))
            for kind in [*pair, *reversed(pair)]:
                up = running[kind]
                figures = uvloop.run(load(up.base, CHECKS_C, checks_cycles, up.pid, REQUESTER))
                checks[kind].append(figures)
                _log(f"http round {round_ + 1} C={CHECKS_C} {kind}", figures)
            with_, without = (checks[kind][-2:] for kind in CHECKS)
            ratios += [a["cpu_ms"] / b["cpu_ms"] for a, b in zip(with_, without, strict=True)]
    says = {kind: up.says for kind, up in running.items()}
    section = _section(results, rounds, cycles, says["ours"])
    section.tables.append(_checks_table(checks, ratios, rounds, checks_cycles, says))
    section.data["identity and policy (issue 16)"] = {
        "C": CHECKS_C,
        "cycles per measurement": checks_cycles,
        "servers said": {kind: says[kind] for kind in CHECKS},
        "samples": checks,
        "paired CPU ratios (with / without)": ratios,
    }
    return section


def _log(what: str, figures: dict[str, float]) -> None:
    log(
        f"{what}: {figures['cps']:.0f} cycles/s, p50 {figures['p50'] * 1e3:.1f} ms, "
        f"p99 {figures['p99'] * 1e3:.1f} ms, server CPU {figures['cpu_ms']:.2f} ms/cycle"
    )


def _med(samples: list[dict[str, float]], key: str) -> float:
    return median([s[key] for s in samples])


def _event_counts(results: dict[str, dict[int, list[dict[str, float]]]]) -> str:
    """Whether the servers sent the same events per cycle, as measured (the last column)."""
    counts = {kind: round(_med(results[kind][CONCURRENCY[0]], "events")) for kind in SERVERS}
    if len(set(counts.values())) == 1:
        return f"both send the same {counts['tanstack']} events per cycle (the last column)."
    return (
        f"ours sends {counts['ours']} events per cycle, TanStack's {counts['tanstack']}: "
        "the work differs (the last column)."
    )


def _section(
    results: dict[str, dict[int, list[dict[str, float]]]],
    rounds: int,
    cycles: dict[int, int],
    shipped: str,
) -> Section:
    rows = []
    for c in CONCURRENCY:
        ref = results["tanstack"][c]
        for kind, label in SERVERS.items():
            got = results[kind][c]
            ratio = "" if kind == "tanstack" else f"**{_med(got, 'cps') / _med(ref, 'cps'):.2f}×**"
            p99 = "" if kind == "tanstack" else f"{_med(got, 'p99') / _med(ref, 'p99'):.2f}"
            cpu = "" if kind == "tanstack" else f"{_med(got, 'cpu_ms') / _med(ref, 'cpu_ms'):.2f}"
            rows.append(
                [
                    c,
                    label,
                    fmt(_med(got, "cps")),
                    ratio,
                    fmt(_med(got, "p50") * 1e3),
                    fmt(_med(got, "p99") * 1e3),
                    p99,
                    fmt(_med(got, "cpu_ms")),
                    cpu,
                    f"{_med(got, 'events'):.0f} / {_med(got, 'bytes') / 1024:.1f} KiB",
                ]
            )
    data = {k: {str(c): v for c, v in per.items()} for k, per in results.items()}
    per_round = ", ".join(f"{n} cycles at C={c}" for c, n in cycles.items())
    return Section(
        title="3. Pause → resume cycles per second over HTTP",
        intro=(
            "Each cycle: POST `transfer 25 to Ada` → approval pause → POST the continuation "
            "approving it (rebuilt from the streamed events) → final answer with the receipt. "
            "C concurrent clients in one aiohttp load generator on uvloop (in the benchmark "
            "process, on the same cores as the servers), each with its own keep-alive "
            "connection; the server CPU time per cycle (from `/proc`) is what other load on "
            "the machine disturbs least. The servers "
            "run one process each, scripted models, no token delay (`CHAT_APP_DEMO_TOKEN_DELAY"
            f"_MS=0`). Per round and server: {per_round}; medians of {rounds} interleaved "
            "rounds. Goal: at least TanStack's "
            "throughput, p99 no worse (p99 ratio ≤ 1)."
        ),
        headers=[
            "C clients",
            "server",
            "cycles/s",
            "throughput vs TanStack",
            "p50 ms",
            "p99 ms",
            "p99 / TanStack p99",
            "server CPU ms / cycle",
            "CPU / TanStack CPU",
            "events / bytes sent per cycle",
        ],
        rows=rows,
        notes=[
            "Ours as shipped also seals every tool call id (HMAC), commits each answer "
            "exactly once in the SQLite ledger (`synchronous=FULL`: the answer is fsynced "
            "before its tool runs; concurrent answers share a transaction and an fsync) and "
            "appends pause, decision and execution records to the hash-chained audit trail "
            "(committed at once, on disk with the next answer's fsync). TanStack's server does "
            "none of these. Both mock models say the same words, one delta per word "
            f"(`TANSTACK_MOCK_WORDS=1` for TanStack's): {_event_counts(results)} "
            "Warm-up: 320 cycles per server at C=16 before the first round (node's JIT).",
            "As shipped means the standalone server's defaults (no `CHAT_APP_*` variable set "
            f"but the data folder and the token delay); this run's server said: `{shipped}`. "
            "No request carries an identity header.",
        ],
        plots=[_plot(results)],
        data=data,
    )


def _checks_table(
    checks: dict[str, list[dict[str, float]]],
    ratios: list[float],
    rounds: int,
    cycles: int,
    says: dict[str, str],
) -> Table:
    with_, without = (checks[kind] for kind in CHECKS)
    ratio = median(ratios)
    verdict = "**met**" if ratio <= CHECKS_GOAL else "**not met**"
    env = {k: " ".join(f"{n}={v}" for n, v in SERVER_ENV[k].items()) for k in CHECKS}
    rows = []
    for kind, label in CHECKS.items():
        got = checks[kind]
        rows.append(
            [
                f"{label}: `{env[kind]}`",
                fmt(_med(got, "cps")),
                fmt(_med(got, "p50") * 1e3),
                fmt(_med(got, "cpu_ms")),
                f"**{ratio:.3f}×** ({min(ratios):.3f}–{max(ratios):.3f})"
                if kind == "ours-checks"
                else "1",
                f"{_med(got, 'events'):.0f} / {_med(got, 'bytes') / 1024:.2f} KiB",
            ]
        )
    return Table(
        title="Identity and policy: server CPU per cycle (issue 16)",
        intro=(
            f"The same cycles against the as-shipped server (sealed, ledger) started twice "
            f"more: with identity and policy (`CHAT_APP_AUTH=proxy`: every request carries "
            f"`{next(iter(REQUESTER))}: {REQUESTER[next(iter(REQUESTER))]}` from 127.0.0.1, "
            "believed as Rita's sign-in; the default policy, whose `large-transfers` rule is "
            "checked against each transfer and does not match 25, so Rita approves her own "
            "request) and without (`CHAT_APP_AUTH=none`, `CHAT_APP_POLICY=none`). Both get "
            f"the same bytes (the header too). C={CHECKS_C} only, {cycles} cycles per "
            f"measurement, measured A B B A in one round and B A A B in the next within the "
            f"{rounds} rounds above ({len(ratios)} measurements each); the ratio is the median "
            "of the paired ratios (each pair measured back to back; min–max in brackets). "
            f"Goal (issue 16): identity and policy add at most "
            f"{(CHECKS_GOAL - 1) * 100:.0f}% server CPU per cycle, a ratio ≤ {CHECKS_GOAL}: "
            f"{verdict} ({ratio:.3f}×; the ratio of the medians is "
            f"{_med(with_, 'cpu_ms') / _med(without, 'cpu_ms'):.3f}×)."
        ),
        headers=[
            f"server (as shipped, C={CHECKS_C})",
            "cycles/s",
            "p50 ms",
            "server CPU ms / cycle",
            "CPU / without",
            "events / bytes sent per cycle",
        ],
        rows=rows,
        notes=[
            "What the servers said at start: "
            + "; ".join(f"{CHECKS[kind]}: `{says[kind]}`" for kind in CHECKS)
            + ". Any difference in what the two send (the pause's description of who "
            "decides, for one) shows in the last column."
        ],
    )


def _plot(results: dict[str, dict[int, list[dict[str, float]]]]) -> str:
    fig, ax = new_figure("Pause → resume cycles per second", "concurrent clients", "cycles/s")
    for kind, label in SERVERS.items():
        ax.plot(
            CONCURRENCY, [_med(results[kind][c], "cps") for c in CONCURRENCY], "o-", label=label
        )
    ax.set_xscale("log")
    ax.set_xticks(CONCURRENCY, [str(c) for c in CONCURRENCY])
    ax.set_ylim(bottom=0)
    ax.legend()
    return save_figure(fig, "http.png")

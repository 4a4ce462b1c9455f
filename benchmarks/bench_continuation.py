"""2. Continuation validation against history length and batch size, ours against `chat()`.

One request body per (history length N, pending approvals K), built here once and fed to
both engines in-process: a history of N messages (past approvals with their results, and
plain exchanges) ending in an assistant turn with K pending `pay_invoice` calls, answered by
K `resume` entries. Two variants: *accepted* (every call approved: validate, run K quick
tools, one model turn that says "Done.") and *refused* (the last answer is not a boolean:
the whole batch is validated, nothing runs, one RUN_ERROR). Measured from the body text to
the whole SSE text; ours reads the body with the server's own `parse_run_input` (every
message checked against `ag_ui`'s schema and the depth limit, each built into its model only
when read). Ours also without the HTTP-shaped parts: `plan_continuation` alone on an already
parsed input.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tempfile
from pathlib import Path
from typing import Any

from ag_ui.core import RunAgentInput

from chat_app.agent import Agent, ScriptedModel, ScriptedTurn, event_to_wire
from chat_app.agent.resume import plan_continuation
from chat_app.demo.tools import DEMO_TOOLS
from chat_app.interrupts import InterruptResumeValidationError, encode_sse_event
from chat_app.server.app import parse_run_input

from .report import (
    Goal,
    Node,
    Section,
    calibrate,
    collector_as_served,
    fmt,
    log,
    loglog_slope,
    median,
    new_figure,
    sample,
    save_figure,
)

HISTORY = [10, 100, 1000, 10_000]
PENDING = [1, 10, 50]


def _history(n: int) -> list[dict[str, Any]]:
    """n - 2 messages of past work: approved transfers with results, and plain exchanges."""
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < n - 2:
        i += 1
        if i % 2 and len(out) + 4 <= n - 2:
            call = f"call_past_{i}"
            out += [
                {"id": f"u{i}", "role": "user", "content": f"transfer {i} to Ada"},
                {
                    "id": f"a{i}",
                    "role": "assistant",
                    "content": f"I'll send {i} to Ada once you approve.",
                    "toolCalls": [
                        {
                            "id": call,
                            "type": "function",
                            "function": {
                                "name": "transfer",
                                "arguments": json.dumps({"recipient": "Ada", "amount": i}),
                            },
                        }
                    ],
                },
                {
                    "id": f"tool-{call}",
                    "role": "tool",
                    "toolCallId": call,
                    "content": json.dumps(
                        {"receipt": f"rcpt-{i}", "recipient": "Ada", "amount": i}
                    ),
                },
                {
                    "id": f"b{i}",
                    "role": "assistant",
                    "content": f"Sent {i} to Ada. Receipt id: rcpt-{i}.",
                },
            ]
        else:
            out += [{"id": f"u{i}", "role": "user", "content": "hello"}]
            if len(out) < n - 2:
                out += [{"id": f"b{i}", "role": "assistant", "content": "Hello! Try one of these."}]
    return out


def body(n: int, k: int, *, refused: bool) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_pay_{j}",
            "type": "function",
            "function": {
                "name": "pay_invoice",
                "arguments": json.dumps(
                    {"invoice": f"INV-{j}", "supplier": "Acme", "amount": 10 + j}
                ),
            },
        }
        for j in range(k)
    ]
    messages = _history(n) + [
        {"id": "u-last", "role": "user", "content": "pay invoices"},
        {
            "id": "a-last",
            "role": "assistant",
            "content": "Each payment needs your approval.",
            "toolCalls": calls,
        },
    ]
    resume = [
        {"interruptId": f"approval_{c['id']}", "status": "resolved", "payload": True} for c in calls
    ]
    if refused:
        resume[-1]["payload"] = "yes"
    assert len(messages) == n
    return {
        "threadId": "thread-bench",
        "runId": "run-continue",
        "parentRunId": "run-paused",
        "resume": resume,
        "state": {},
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def _agent() -> Agent:
    """The demo's tools (`pay_invoice` answers at once) and a model that says "Done." (no
    sealer)."""
    model = ScriptedModel(lambda _: ScriptedTurn(text="Done."), token_delay=0)
    return Agent(model=model, tools=DEMO_TOOLS)


class Ours:
    def __init__(self) -> None:
        self.agent = _agent()
        self.loop = asyncio.new_event_loop()

    async def _handle(self, body: bytes) -> list[str]:
        # What POST /api/chat does with a body: parse, check (`RunAgentInput`), run, encode.
        run_input = parse_run_input(body)
        return [encode_sse_event(event_to_wire(e)) async for e in self.agent.run(run_input)]

    def handle(self, body: bytes) -> list[str]:
        return self.loop.run_until_complete(self._handle(body))

    def plan_only(self, run_input: RunAgentInput) -> None:
        try:
            plan_continuation(
                thread_id=run_input.thread_id,
                run_id=run_input.run_id,
                parent_run_id=run_input.parent_run_id,
                messages=run_input.messages,
                resume=run_input.resume or [],
                tools=self.agent.tools,
                definitions=self.agent.definitions,
                now_ms=0,
            )
        except InterruptResumeValidationError:
            pass


def frozen_sample(fn: Any, loops: int) -> float:
    """`sample` with the collector as `python -m chat_app.server` runs it: the start-up heap
    left out of collections (`gc.freeze()`) and collections less often (`tune_collector`),
    measured here in the same run."""
    gc.freeze()
    try:
        with collector_as_served():
            return sample(fn, loops)
    finally:
        gc.unfreeze()


def _types(frames: list[str]) -> list[str]:
    events = [json.loads(frame.removeprefix("data: ")) for frame in frames]
    return [f"RUN_ERROR {e['message']}" if e["type"] == "RUN_ERROR" else e["type"] for e in events]


def run(quick: bool) -> Section:
    rounds, min_seconds = (3, 0.05) if quick else (5, 0.1)
    ours = Ours()
    cases = [(n, k, refused) for refused in (False, True) for k in PENDING for n in HISTORY]
    results: dict[tuple[int, int, bool], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-bodies-") as tmp:
        manifest = Path(tmp, "tools.json")
        manifest.write_text(json.dumps(ours.agent.tool_manifest()))
        with Node("continuation.mjs", str(manifest)) as node:
            for n, k, refused in cases:
                text = json.dumps(body(n, k, refused=refused)).encode()
                path = Path(tmp, f"body-{n}-{k}-{int(refused)}.json")
                path.write_bytes(text)
                parsed = parse_run_input(text)  # as the server hands it to the engine
                mine_events = _types(ours.handle(text))
                loops = calibrate(lambda t=text: ours.handle(t), min_seconds)
                plan_loops = calibrate(lambda p=parsed: ours.plan_only(p), min_seconds)
                request = json.dumps({"body": str(path), "minSeconds": min_seconds})
                mine, theirs, plan, frozen = [], [], [], []
                for _ in range(rounds):  # interleaved
                    answer = node.ask(request)
                    theirs.append(answer["seconds"])
                    mine.append(sample(lambda t=text: ours.handle(t), loops))
                    frozen.append(frozen_sample(lambda t=text: ours.handle(t), loops))
                    plan.append(sample(lambda p=parsed: ours.plan_only(p), plan_loops))
                _check(mine_events, answer["events"], refused)
                results[(n, k, refused)] = {
                    "ours_s": median(mine),
                    "tanstack_s": median(theirs),
                    "plan_s": median(plan),
                    "frozen_s": median(frozen),
                    "bytes": len(text),
                    "ours_events": mine_events,
                    "tanstack_events": answer["events"],
                }
                log(
                    f"continuation N={n} K={k} {'refused' if refused else 'accepted'}: "
                    f"ours {results[(n, k, refused)]['ours_s'] * 1e3:.2f} ms, "
                    f"TanStack {results[(n, k, refused)]['tanstack_s'] * 1e3:.2f} ms"
                )
    ours.loop.close()
    return _section(results, rounds, min_seconds)


def _check(ours: list[str], theirs: list[str], refused: bool) -> None:
    """Both engines must have done the same thing with the body."""
    for events in (ours, theirs):
        errors = [e for e in events if e.startswith("RUN_ERROR")]
        if refused != bool(errors) or (not refused and "TEXT_MESSAGE_CONTENT" not in events):
            raise AssertionError(f"unexpected outcome: ours {ours}, TanStack {theirs}")


#: "Linear": the growth exponent over the last decade of N at most this (fixed costs hide
#: the growth below; 1 is exactly linear, 2 quadratic).
LINEAR_GOAL = 1.1


def _section(
    results: dict[tuple[int, int, bool], dict[str, Any]], rounds: int, min_s: float
) -> Section:
    rows: list[list[Any]] = []
    slopes: dict[str, tuple[float, float]] = {}  # (fit over all N, last decade)
    whos = {
        "ours": "ours_s",
        "TanStack": "tanstack_s",
        "ours, gc.freeze()": "frozen_s",
        "ours `plan_continuation`": "plan_s",
    }
    for refused in (False, True):
        variant = "refused" if refused else "accepted"
        for k in PENDING:
            series = [results[(n, k, refused)] for n in HISTORY]
            for who, key in whos.items():
                times = [r[key] for r in series]
                slopes[f"{variant} K={k} {who}"] = (
                    loglog_slope([float(n) for n in HISTORY], times),
                    loglog_slope([float(n) for n in HISTORY[-2:]], times[-2:]),
                )
            for n, r in zip(HISTORY, series, strict=True):
                ours, ref, frozen = r["ours_s"], r["tanstack_s"], r["frozen_s"]
                rows.append(
                    [
                        variant,
                        k,
                        n,
                        f"{r['bytes'] / 1024:,.0f} KiB",
                        fmt(ours * 1e3),
                        fmt(ref * 1e3),
                        f"**{ref / ours:.2f}×**",
                        fmt(frozen * 1e3),
                        f"{ref / frozen:.2f}×",
                        fmt(r["plan_s"] * 1e3),
                    ]
                )
    slope_rows = [
        f"| {variant} | {k} | "
        + " | ".join("{:.2f} / {:.2f}".format(*slopes[f"{variant} K={k} {who}"]) for who in whos)
        + " |"
        for variant in ("accepted", "refused")
        for k in PENDING
    ]
    notes = [
        "Growth exponents: the least-squares slope of log time against log N over N = "
        f"{HISTORY[0]}…{HISTORY[-1]}, then the slope over the last decade "
        f"({HISTORY[-2]} → {HISTORY[-1]}), where fixed costs no longer hide the growth; "
        "1 is linear.",
        "| variant | K | "
        + " | ".join(whos)
        + " |\n|---|---|"
        + "---|" * len(whos)
        + "\n"
        + "\n".join(slope_rows),
        "*ours, gc.freeze()* is the same engine measured with the collector as `python -m "
        "chat_app.server` runs it: `gc.freeze()` in force (the objects alive at that point — "
        "the imported modules — left out of garbage collections) and the young generation "
        "collected less often (`tune_collector`). These bodies are in "
        "the usual shape, read into views the collector does not track; `parse_run_input` "
        "pauses the collector only for a body of 64 KiB or more in another shape.",
        "Our engine here has no sealer and no ledger (the bodies carry no seals); with them "
        "on, a continuation also checks one HMAC per answered call and commits the answers "
        "in one ledger transaction — O(K), not O(N) (section 3 has the server as shipped).",
    ]
    data = {f"N={n} K={k} {'refused' if r else 'accepted'}": v for (n, k, r), v in results.items()}
    speedups = [r["tanstack_s"] / r["ours_s"] for r in results.values()]
    ours_last = [last for key, (_, last) in slopes.items() if key.endswith(" ours")]
    goals = [
        Goal(
            "first stage",
            "a continuation's validation no slower than TanStack's at every N and K",
            min(speedups) >= 1,
            f"{min(speedups):.1f}–{max(speedups):.1f}× TanStack's speed",
        ),
        Goal(
            "first stage",
            f"linear in the history (growth exponent over {HISTORY[-2]:,} → {HISTORY[-1]:,} "
            f"messages at most {LINEAR_GOAL:g})",
            max(ours_last) <= LINEAR_GOAL,
            f"exponents {min(ours_last):.2f}–{max(ours_last):.2f} (1 is linear)",
        ),
    ]
    data["slopes"] = {key: list(value) for key, value in slopes.items()}
    return Section(
        title="2. Continuation validation against history length",
        intro=(
            "Request bodies built once in Python (N messages of history, K pending approvals, "
            "K resume entries) and fed to both engines in-process: ours (the server's "
            "`parse_run_input` — JSON, the depth limit, every message checked against "
            "`ag_ui`'s schema and built into its model only when read — then "
            "`Agent.run`, whose first step is `plan_continuation`) and TanStack's "
            "`chatParamsFromRequest` + `chat()`, each from body text to the whole SSE text. "
            "*accepted*: every call approved, K quick tools run (the demo's `pay_invoice`; "
            'TanStack\'s returns `{ok: true}`), one model turn ("Done."); '
            "*refused*: the last answer is not a boolean, the batch is refused with one "
            "RUN_ERROR and nothing runs (validation only). Both engines are checked to do the "
            f"same thing with each body. Medians of {rounds} interleaved rounds, samples of "
            f"≥ {min_s} s. Goal: linear, and no slower than TanStack."
        ),
        headers=[
            "variant",
            "K pending",
            "N messages",
            "body",
            "ours ms",
            "TanStack ms",
            "speed-up",
            "ours with gc.freeze() ms",
            "speed-up with gc.freeze()",
            "ours `plan_continuation` only, ms",
        ],
        rows=rows,
        notes=notes,
        plots=[_plot(results)],
        data=data,
        goals=goals,
    )


def _plot(results: dict[tuple[int, int, bool], dict[str, Any]]) -> str:
    fig, ax = new_figure(
        "Continuation handling vs history length (accepted)", "N messages", "ms per request"
    )
    for k, color in zip(PENDING, ("tab:blue", "tab:orange", "tab:green"), strict=True):
        series = [results[(n, k, False)] for n in HISTORY]
        ax.loglog(
            HISTORY, [r["ours_s"] * 1e3 for r in series], "o-", color=color, label=f"chat_app K={k}"
        )
        ax.loglog(
            HISTORY,
            [r["tanstack_s"] * 1e3 for r in series],
            "s--",
            color=color,
            label=f"TanStack K={k}",
        )
    ax.legend(fontsize=8)
    return save_figure(fig, "continuation.png")

"""1. Canonical JSON + digest: `canonical_interrupt_json` + `digest_interrupt_json` against
`canonicalInterruptJson` + `digestInterruptJson` of `@tanstack/ai`, on the same JSON files.

The corpus is generated (seeded) into a temporary folder: tool schemas and payloads from a
few bytes to 1 MB. Both sides parse each file once and time the hash of the parsed value.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

from chat_app.demo.tools import DEMO_TOOLS
from chat_app.interrupts import canonical_interrupt_json, digest_interrupt_json

from .report import (
    Goal,
    Node,
    Section,
    calibrate,
    fmt,
    log,
    median,
    new_figure,
    sample,
    save_figure,
)

WORDS = (
    "invoice supplier amount approve transfer project deploy release review urgent quarterly "
    "budget Zürich café naïve São Paulo 東京 レポート résumé — “quoted” señor Ærø 🚀 ✅"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _record(rng: random.Random, index: int) -> dict[str, Any]:
    """A row of a tool result: ids, money with cents, flags, nested lists, unicode text."""
    return {
        "id": f"rec-{index:06d}",
        "customer": {"name": _text(rng, 2), "email": f"user{index}@example.com", "tier": index % 4},
        "amount": round(rng.uniform(1, 5000), 2),
        "currency": rng.choice(["EUR", "USD", "JPY"]),
        "paid": rng.random() < 0.5,
        "tags": [rng.choice(WORDS) for _ in range(3)],
        "lines": [
            {
                "sku": f"SKU-{rng.randrange(10**5)}",
                "qty": rng.randrange(1, 9),
                "price": round(rng.uniform(0.5, 300), 2),
            }
            for _ in range(rng.randrange(1, 4))
        ],
        "note": _text(rng, 12) if index % 3 == 0 else None,
    }


def _form_schema(rng: random.Random, fields: int) -> dict[str, Any]:
    """A large generated form schema (what a generic interrupt's response schema looks like)."""
    kinds = [
        {"type": "string", "minLength": 1, "maxLength": 200},
        {"type": "string", "format": "email"},
        {"type": "string", "format": "date"},
        {"type": "integer", "minimum": 0, "maximum": 1000},
        {"type": "number", "exclusiveMinimum": 0},
        {"type": "boolean", "default": False},
        {"type": "string", "enum": ["standard", "express", "overnight"]},
        {"type": "array", "items": {"type": "string"}, "maxItems": 20},
    ]
    props: dict[str, Any] = {}
    for i in range(fields):
        prop = dict(rng.choice(kinds))
        prop["title"] = _text(rng, 3)
        prop["description"] = _text(rng, 10)
        if i % 10 == 9:
            prop = {
                "type": "object",
                "title": prop["title"],
                "properties": {f"sub{j}": dict(rng.choice(kinds)) for j in range(5)},
                "required": ["sub0"],
            }
        props[f"field_{i:03d}"] = prop
    return {
        "type": "object",
        "properties": props,
        "required": sorted(props)[::3],
        "additionalProperties": False,
    }


def _sensor_readings(rng: random.Random, count: int) -> dict[str, Any]:
    """Floats as Python producers write them (`12.0`, `1e-07`): our exact, slower path."""
    return {
        "sensor": "thermo-7",
        "readings": [
            {
                "t": 1_700_000_000 + i,
                "value": float(rng.randrange(-40, 60)),
                "drift": rng.choice([1e-7, 2.5e-8, 0.0, 3.0e21]),
            }
            for i in range(count)
        ],
    }


def corpus() -> dict[str, Any]:
    """name -> value, tiny to 1 MB. Names sort by size class."""
    rng = random.Random(8)
    tools = {tool.name: tool.manifest() for tool in DEMO_TOOLS}
    records = [_record(rng, i) for i in range(2600)]
    return {
        "a-approval-true.json": {"approved": True},
        "b-transfer-schemas.json": tools["transfer"],
        "c-email-args.json": {
            "to": "ada@example.com",
            "subject": "Launch — next steps",
            "body": _text(rng, 150),
        },
        "d-tool-manifest.json": [tools[name] for name in sorted(tools)],
        "e-form-schema-20k.json": _form_schema(rng, 80),
        "f-records-100k.json": {"rows": records[:260]},
        "g-records-1m.json": {"rows": records},
        "h-python-floats-100k.json": _sensor_readings(rng, 1500),
    }


def run(quick: bool) -> Section:
    rounds, min_seconds = (3, 0.05) if quick else (5, 0.1)
    values = corpus()
    ours: dict[str, list[float]] = {name: [] for name in values}
    theirs: dict[str, list[float]] = {name: [] for name in values}
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as tmp:
        for name, value in values.items():
            Path(tmp, name).write_text(json.dumps(value, ensure_ascii=False))
        loaded = {name: json.loads(Path(tmp, name).read_text()) for name in values}
        calls = {
            name: (lambda v=value: digest_interrupt_json(canonical_interrupt_json(v)))
            for name, value in loaded.items()
        }
        loops = {name: calibrate(call, min_seconds) for name, call in calls.items()}
        with Node("canonical.mjs", tmp, str(min_seconds)) as node:
            for round_ in range(rounds):  # interleaved, so both sides see the same machine
                log(f"canonical: round {round_ + 1}/{rounds}")
                for name in values:
                    answer = node.ask(name)
                    theirs[name].append(answer["seconds"])
                    ours[name].append(sample(calls[name], loops[name]))
                    digest = calls[name]()
                    if digest != answer["digest"]:
                        raise AssertionError(f"{name}: digest {digest} != {answer['digest']}")
    rows: list[list[Any]] = []
    data: dict[str, Any] = {}
    for name, value in loaded.items():
        size = len(canonical_interrupt_json(value).encode())
        mine, ref = median(ours[name]), median(theirs[name])
        data[name] = {
            "bytes": size,
            "ours_s": mine,
            "tanstack_s": ref,
            "ours_samples": ours[name],
            "tanstack_samples": theirs[name],
        }
        rows.append(
            [
                name.removesuffix(".json")[2:],
                _size(size),
                fmt(mine * 1e6),
                fmt(ref * 1e6),
                fmt(size / mine / 1e6),
                fmt(size / ref / 1e6),
                f"**{ref / mine:.1f}×**",
            ]
        )
    speedups = {name: d["tanstack_s"] / d["ours_s"] for name, d in data.items()}
    slowest = min(speedups, key=speedups.__getitem__)
    goal = Goal(
        "first stage",
        "canonical JSON + digest ≥ 2× TanStack's speed on every corpus item",
        min(speedups.values()) >= 2,
        f"{min(speedups.values()):.1f}–{max(speedups.values()):.1f}× "
        f"(lowest: {slowest.removesuffix('.json')[2:]})",
    )
    return Section(
        title="1. Canonical JSON + digest",
        intro=(
            "`canonical_interrupt_json` + `digest_interrupt_json` against `@tanstack/ai`'s "
            "`canonicalInterruptJson` + `digestInterruptJson` in node, on the same JSON files "
            "(each parsed once by each side; every digest checked equal). Medians of "
            f"{rounds} interleaved rounds (ours, theirs, item by item), each sample a loop of "
            f"≥ {min_seconds} s. Goal: ours ≥ 2× faster."
        ),
        headers=[
            "corpus item",
            "canonical size",
            "ours µs/op",
            "TanStack µs/op",
            "ours MB/s",
            "TanStack MB/s",
            "speed-up (TanStack time / ours)",
        ],
        rows=rows,
        notes=[
            "`python-floats` holds floats as Python writes them (`12.0`, `1e-07`, `3e+21`); "
            "`records` has some integral floats (`24.0`) and `null`s, which our fast path "
            "must check by reading the text back."
        ],
        plots=[_plot(data)],
        data=data,
        goals=[goal],
    )


def _size(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:,.0f} KiB"


def _plot(data: dict[str, Any]) -> str:
    fig, ax = new_figure("Canonical JSON + digest throughput", "canonical size (bytes)", "MB/s")
    items = sorted(data.values(), key=lambda d: d["bytes"])
    sizes = [d["bytes"] for d in items]
    ax.loglog(sizes, [d["bytes"] / d["ours_s"] / 1e6 for d in items], "o", label="chat_app")
    ax.loglog(sizes, [d["bytes"] / d["tanstack_s"] / 1e6 for d in items], "s", label="@tanstack/ai")
    ax.legend()
    return save_figure(fig, "canonical.png")

"""One worker's part of a decision's trace, run in a process of its own by test_tracing.py
(a process can install a global tracer provider once): `python -m tests.observe.trace_scenario
<decision id> <part>`, traced to the OTLP endpoint in the environment.

`paused`: the worker that paused the run. `rest`: another worker that takes the answer, runs
the continuation, and closes the decision; it prints the run span's ids as JSON.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime, timedelta

from opentelemetry import trace

from chat_app.observe import (
    close_decision,
    configure_tracing,
    decision_span,
    flush_tracing,
    run_span,
)

#: When the decision paused (the spans' times are given, not read from the clock).
PAUSED_AT = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def main(decision_id: str, part: str) -> None:
    assert configure_tracing(os.environ)
    assert configure_tracing(os.environ)  # again: nothing changes
    if part == "paused":
        decision_span(decision_id, "paused", start=PAUSED_AT, attributes={"tool": "transfer"})
    else:
        decided_at = PAUSED_AT + timedelta(seconds=42)
        decision_span(
            decision_id, "decided", start=decided_at,
            attributes={"outcome": "approved", "decider": "ada@example.com"},
        )  # fmt: skip
        with run_span("continuation", {"thread.id": "t-1"}) as run:
            assert run is not None
            # The run's span is current inside the block, a decision's never is.
            assert trace.get_current_span().get_span_context() == run
            logging.getLogger(__name__).info("running")
        ended = decided_at + timedelta(seconds=1.5)
        decision_span(decision_id, "executed", start=decided_at, end=ended, links=[run])
        close_decision(decision_id, start=PAUSED_AT, end=ended, attributes={"outcome": "approved"})
        print(json.dumps({"trace_id": f"{run.trace_id:032x}", "span_id": f"{run.span_id:016x}"}))
    flush_tracing()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Traces, one per decision: two worker processes export over OTLP/HTTP to a collector stand-in
here (a tiny HTTP server decoding `ExportTraceServiceRequest`), and every span of the decision
lands in the trace named by its id, under its root span, with "executed" linked to the run.

The scenario runs in subprocesses (`trace_scenario.py`): a process sets its global tracer
provider once, and the test process must keep none.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from chat_app.observe import (
    close_decision,
    configure_tracing,
    decision_root,
    decision_span,
    decision_trace_id,
    flush_tracing,
    run_span,
    tracing_enabled,
)
from tests.observe.trace_scenario import PAUSED_AT

ROOT = Path(__file__).resolve().parents[2]
DECISION_ID = "d3f1c0ffee"


@dataclass
class Received:
    service: str
    span: Span


class Collector:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps what is posted to `/v1/traces`."""

    def __init__(self) -> None:
        self.spans: list[Received] = []
        self.paths: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                collector.paths.append(self.path)
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    service = next(
                        attribute.value.string_value
                        for attribute in resource_spans.resource.attributes
                        if attribute.key == "service.name"
                    )
                    for scope_spans in resource_spans.scope_spans:
                        collector.spans += [Received(service, s) for s in scope_spans.spans]
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    found = Collector()
    try:
        yield found
    finally:
        found.close()


def run_worker(part: str, env: dict[str, str]) -> str:
    """One worker's part of the scenario in a fresh interpreter; its standard output."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-m", "tests.observe.trace_scenario", DECISION_ID, part],
        cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def attributes_of(span: Span) -> dict[str, str]:
    return {attribute.key: attribute.value.string_value for attribute in span.attributes}


def nanoseconds(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def test_two_workers_add_to_one_trace_named_by_the_decision(collector: Collector) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url + "/", "OTEL_SERVICE_NAME": "desk-test"}
    run_worker("paused", env)
    run = json.loads(run_worker("rest", env))

    assert set(collector.paths) == {"/v1/traces"}  # the base URL, with the signal's path
    by_name = {received.span.name: received.span for received in collector.spans}
    assert sorted(by_name) == ["continuation", "decided", "decision", "executed", "paused"]
    assert len(collector.spans) == 5
    assert {received.service for received in collector.spans} == {"desk-test"}

    trace_id = decision_trace_id(DECISION_ID).to_bytes(16, "big")
    root = by_name["decision"]
    assert root.trace_id == trace_id and root.parent_span_id == b""
    assert root.span_id == decision_root(DECISION_ID).span_id.to_bytes(8, "big")
    for name in ("paused", "decided", "executed"):
        span = by_name[name]
        assert span.trace_id == trace_id, name
        assert span.parent_span_id == root.span_id, name
        assert span.span_id != root.span_id
        assert attributes_of(span)["chat_app.decision.id"] == DECISION_ID

    assert root.start_time_unix_nano == nanoseconds(PAUSED_AT)
    assert root.end_time_unix_nano - root.start_time_unix_nano == 43_500_000_000
    assert by_name["paused"].start_time_unix_nano == by_name["paused"].end_time_unix_nano
    assert attributes_of(by_name["paused"])["tool"] == "transfer"
    assert attributes_of(by_name["decided"])["decider"] == "ada@example.com"
    assert attributes_of(root)["outcome"] == "approved"

    # The run is a trace of its own, which "executed" links to.
    continuation = by_name["continuation"]
    assert continuation.trace_id.hex() == run["trace_id"] != trace_id.hex()
    assert continuation.parent_span_id == b""
    assert attributes_of(continuation)["thread.id"] == "t-1"
    [link] = by_name["executed"].links
    assert (link.trace_id.hex(), link.span_id.hex()) == (run["trace_id"], run["span_id"])


def test_a_full_traces_endpoint_is_used_as_given(collector: Collector) -> None:
    run_worker("paused", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.url + "/otlp/spans"})
    assert collector.paths == ["/otlp/spans"]
    [received] = collector.spans
    assert received.service == "chat_app"
    assert received.span.trace_id == decision_trace_id(DECISION_ID).to_bytes(16, "big")


def test_the_trace_id_is_the_decisions_hash_and_never_zero() -> None:
    assert decision_trace_id(DECISION_ID) == decision_trace_id(DECISION_ID)
    assert decision_trace_id(DECISION_ID) != decision_trace_id(DECISION_ID + "x")
    assert 0 < decision_trace_id("") < 2**128
    root = decision_root(DECISION_ID)
    assert root.is_valid and root.trace_id == decision_trace_id(DECISION_ID)


def test_without_an_endpoint_nothing_is_traced() -> None:
    assert configure_tracing({}) is False
    assert configure_tracing({"OTEL_SDK_DISABLED": "true"}) is False
    assert not tracing_enabled()
    now = datetime.now(UTC)
    decision_span(DECISION_ID, "paused", start=now)
    close_decision(DECISION_ID, start=now, end=now)
    with run_span("continuation") as run:
        assert run is None
    flush_tracing()
    with pytest.raises(ValueError, match="naive"):
        decision_span(DECISION_ID, "paused", start=datetime(2025, 1, 1))

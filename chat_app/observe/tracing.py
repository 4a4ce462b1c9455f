"""OpenTelemetry traces, one per decision, exported over OTLP/HTTP.

A decision lives longer than any request and is touched by whichever worker gets there: one
pauses the run, another sends the notice, a third takes the answer and runs the continuation.
Passing a trace context between them would mean storing it with the decision, so instead the
trace is *named by the decision*: its trace id is a hash of the decision id, and so is the
span id of its root span ("decision"). Every worker can then add a finished span to that trace
("paused", "notified", "decided", "executed", …) as a child of the root, knowing nothing but the
decision id; the root itself is recorded once, by `close_decision`, when the decision is over.

A continuation run is a trace of its own (`run_span`); the decision's "executed" (or, where
nothing was to run, "continued") span links to it rather than containing it, since one run
may carry several decisions.

Nothing is traced until `configure_tracing` finds an OTLP endpoint; until then every function
here returns at its first line.

Imports nothing of ours.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TypeAlias

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

__all__ = [
    "AttributeValue",
    "DEFAULT_SERVICE_NAME",
    "close_decision",
    "fail_current_span",
    "configure_tracing",
    "decision_root",
    "decision_span",
    "decision_trace_id",
    "flush_tracing",
    "run_span",
    "tracing_enabled",
]

AttributeValue: TypeAlias = str | int | float | bool

DEFAULT_SERVICE_NAME = "chat_app"
#: The attribute every span of a decision carries, so a backend can search by it too.
DECISION_ID_ATTRIBUTE = "chat_app.decision.id"
ROOT_SPAN_NAME = "decision"
#: The instrumentation scope our spans are reported under.
_SCOPE = "chat_app"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NO_ATTRIBUTES: Mapping[str, AttributeValue] = MappingProxyType({})

_log = logging.getLogger(__name__)
_lock = threading.Lock()
#: Ours, once `configure_tracing` turned tracing on; spans are made from it directly (not
#: from the global provider), so they keep our id generator even if someone else had set
#: a global provider first.
_provider: TracerProvider | None = None
_tracer: trace.Tracer | None = None
#: (trace id, span id) the next span started in this context must take: set only around
#: starting a decision's root span.
_forced_ids: ContextVar[tuple[int, int] | None] = ContextVar("chat_app_forced_ids", default=None)


class _DecisionIds(IdGenerator):
    """Random ids, except for the one span started while `_forced_ids` is set."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()

    def generate_span_id(self) -> int:
        forced = _forced_ids.get()
        return forced[1] if forced is not None else self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        forced = _forced_ids.get()
        return forced[0] if forced is not None else self._random.generate_trace_id()


def configure_tracing(environ: Mapping[str, str]) -> bool:
    """Turn tracing on when `environ` names an OTLP endpoint; whether tracing is on.

    `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is the full URL spans are posted to;
    `OTEL_EXPORTER_OTLP_ENDPOINT` a base URL, to which `/v1/traces` is added (as the OTLP
    exporters do). `OTEL_SERVICE_NAME` names the service (default "chat_app");
    `OTEL_SDK_DISABLED=true` keeps tracing off. The exporter's other settings (headers,
    timeout, TLS) it reads from the process's environment itself. Calling it again changes
    nothing.
    """
    global _provider, _tracer
    with _lock:
        if _provider is not None:
            return True
        endpoint = _traces_endpoint(environ)
        if endpoint is None or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return False
        service = environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME
        provider = TracerProvider(
            resource=Resource.create({"service.name": service}), id_generator=_DecisionIds()
        )
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        # Global too, so that other instrumentation (and log lines' trace ids) share it; a
        # provider set before ours stays, and ours is used for our spans regardless.
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            _log.warning("A tracer provider was already set; chat_app's spans use their own.")
        _provider = provider
        _tracer = provider.get_tracer(_SCOPE)
        _log.info("tracing: spans of service %s go to %s", service, endpoint)
        return True


def _traces_endpoint(environ: Mapping[str, str]) -> str | None:
    if full := environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return full
    if base := environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        return f"{base.removesuffix('/')}/v1/traces"
    return None


def tracing_enabled() -> bool:
    """Whether `configure_tracing` turned tracing on in this process."""
    return _tracer is not None


def flush_tracing(timeout_seconds: float = 5) -> None:
    """Send the spans still queued (a worker about to exit, a test about to look)."""
    if _provider is not None:
        _provider.force_flush(int(timeout_seconds * 1000))


def _digest(decision_id: str) -> bytes:
    return hashlib.sha256(decision_id.encode("utf-8")).digest()


def decision_trace_id(decision_id: str) -> int:
    """The trace id of a decision: the first 16 bytes of the SHA-256 of its id (never 0,
    which OTel reads as "no trace")."""
    return int.from_bytes(_digest(decision_id)[:16], "big") or 1


def _root_span_id(decision_id: str) -> int:
    return int.from_bytes(_digest(decision_id)[16:24], "big") or 1


def decision_root(decision_id: str) -> SpanContext:
    """The context of a decision's root span, whichever worker records it (or has yet to)."""
    trace_id = decision_trace_id(decision_id)
    # Sampled as the root itself will be, so that a ratio sampler keeps or drops a decision's
    # spans together (it decides by the trace id, which is the decision's).
    sampled = (
        _provider is None
        or _provider.sampler.should_sample(None, trace_id, ROOT_SPAN_NAME).decision
        == Decision.RECORD_AND_SAMPLE
    )
    return SpanContext(
        trace_id=trace_id,
        span_id=_root_span_id(decision_id),
        is_remote=True,  # recorded by whichever worker closes the decision
        trace_flags=TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT),
    )


def _nanoseconds(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment!r}: pass an aware one (UTC)")
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def decision_span(
    decision_id: str,
    name: str,
    *,
    start: datetime,
    end: datetime | None = None,
    attributes: Mapping[str, AttributeValue] = _NO_ATTRIBUTES,
    links: Sequence[SpanContext] = (),
) -> None:
    """Record one finished step of a decision ("paused", "notified", "decided", "executed",
    "expired", "reminded", "escalated", "refused") from `start` to `end` (default: `start`,
    an instant), as a child of the decision's root span; `links` to other spans (the run
    that carried it)."""
    started = _nanoseconds(start)
    ended = started if end is None else _nanoseconds(end)
    tracer = _tracer
    if tracer is None:
        return
    parent = trace.set_span_in_context(NonRecordingSpan(decision_root(decision_id)), Context())
    span = tracer.start_span(
        name,
        context=parent,
        attributes={**attributes, DECISION_ID_ATTRIBUTE: decision_id},
        links=[Link(context) for context in links if context.is_valid],
        start_time=started,
    )
    span.end(end_time=ended)


def close_decision(
    decision_id: str,
    *,
    start: datetime,
    end: datetime,
    attributes: Mapping[str, AttributeValue] = _NO_ATTRIBUTES,
    error: str = "",
) -> None:
    """Record the decision's root span, "decision", from its pause (`start`) to its end;
    failed, saying why, when the run that carried it failed (`error`).

    Call it once, when the decision is over (decided and carried out, expired, closed): the
    root's ids are fixed, so a second call would record a second span with the same id.
    """
    started, ended = _nanoseconds(start), _nanoseconds(end)
    tracer = _tracer
    if tracer is None:
        return
    root = decision_root(decision_id)
    token = _forced_ids.set((root.trace_id, root.span_id))
    try:
        span = tracer.start_span(
            ROOT_SPAN_NAME,
            context=Context(),  # no parent: a root, whatever span is current
            attributes={**attributes, DECISION_ID_ATTRIBUTE: decision_id},
            start_time=started,
        )
    finally:
        _forced_ids.reset(token)
    if error:
        span.set_status(Status(StatusCode.ERROR, error))
    span.end(end_time=ended)


def fail_current_span(description: str) -> None:
    """Mark the span current now (a continuation's `run_span`) failed, saying why: a run
    that ended with an error it did not raise (the model's 500, a stream cut short)."""
    trace.get_current_span().set_status(Status(StatusCode.ERROR, description))


@contextmanager
def run_span(
    name: str, attributes: Mapping[str, AttributeValue] = _NO_ATTRIBUTES
) -> Iterator[SpanContext | None]:
    """A span around a continuation run, in a trace of its own, current while the block runs
    (log lines inside carry its ids); yields its context for the decisions' "executed" (or
    "continued") spans to link to, or `None` when tracing is off. An exception is recorded
    on it and goes on."""
    tracer = _tracer
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(name, context=Context(), attributes=dict(attributes)) as span:
        yield span.get_span_context()

"""`GET /metrics`: the desk's and the notices' figures in Prometheus' text format.

Every figure is read from the app's database when the route is asked (`DeskStats`,
`DeliveryStats`), through a custom collector in a registry of the app's own: with several
workers behind one address, whichever answers a scrape gives the same, whole figures. The
reads run in a worker thread; a database that does not answer is a 503, never a page of zeros.

| metric | type | labels |
| --- | --- | --- |
| `chat_app_pending_decisions` | gauge | `kind` (tool, question), `tool` ("" for one), `rule` |
| `chat_app_decisions_total` | counter | `outcome` |
| `chat_app_decision_wait_seconds` | histogram | (pause to decision) |
| `chat_app_continuation_seconds` | histogram | (the run that carried the answer) |
| `chat_app_notifications_total` | counter | `channel`, `status` (sent, failed, skipped) |
| `chat_app_notifications_pending` | gauge | `channel` (queued, not sent yet) |
| `chat_app_notification_failures_total` | counter | `channel` (failed attempts) |

Who may read it: an admin (the identity the app's authenticator gives, with the role `admin`
among the roles the app reads for it), or a scraper presenting the metrics token
(`Authorization: Bearer <token>`; the entry point reads it from `CHAT_APP_METRICS_TOKEN`). 401
when nobody is identified, 403 for someone without the role. Without sign-in (no
authenticator, or its mode `none`) and without a token, the figures are open, as the audit
trail is there.

Owns `MetricsSource`, `DeskCollector` and `metrics_routes`.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import get_args

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy.exc import OperationalError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chat_app.desk import ADMIN_ROLE, DeskStats, Histogram
from chat_app.notify.settings import Channel
from chat_app.notify.stats import DeliveryStats
from chat_app.server.desk_routes import Who
from chat_app.server.signin import unauthorized
from chat_app.trust import Identity
from chat_app.trust.authn import NOT_OUR_TOKEN, AuthFailure

__all__ = [
    "CONTINUATION_BUCKETS",
    "WAIT_BUCKETS",
    "DeskCollector",
    "MetricsSource",
    "metrics_routes",
]

_log = logging.getLogger(__name__)

#: Seconds from a pause to its decision: a second up to a day (people take their time).
WAIT_BUCKETS = (1, 5, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400)
#: Seconds of the continuation run that carried a decision: tools, not people.
CONTINUATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

RolesOf = Callable[[Identity], frozenset[str]]


@dataclass(frozen=True, slots=True)
class MetricsSource:
    """Where `GET /metrics` reads its figures, and the token a scraper may present instead of
    signing in (`None`: only admins)."""

    desk_stats: DeskStats
    delivery_stats: DeliveryStats
    token: str | None = None


class DeskCollector(Collector):
    """The figures, read from the database each time the registry is collected."""

    def __init__(self, source: MetricsSource) -> None:
        self.source = source

    def describe(self) -> Iterable[Metric]:
        # Names only: registering the collector must not read the database.
        return self._families()

    def collect(self) -> Iterable[Metric]:
        desk, delivery = self.source.desk_stats, self.source.delivery_stats
        pending, outcomes, wait, continuation, counts, queued, failures = self._families()
        for kind, tool, rule, count in desk.pending_by_tool_rule():
            pending.add_metric([kind, tool, rule], count)
        for outcome, count in desk.outcomes():
            outcomes.add_metric([outcome], count)
        _add_histogram(wait, desk.histogram("wait_seconds", WAIT_BUCKETS))
        _add_histogram(continuation, desk.histogram("continued_seconds", CONTINUATION_BUCKETS))
        # Every channel's queue, empty ones at 0: a series that vanished at zero reads as
        # "no data" on a dashboard, and an alert on its absence would fire.
        waiting = dict.fromkeys(get_args(Channel), 0)
        for channel, status, count in delivery.counts():
            if status == "pending":  # it goes down as they are sent: a gauge, not a counter
                waiting[channel] = count
            else:
                counts.add_metric([channel, status], count)
        for channel, count in waiting.items():
            queued.add_metric([channel], count)
        for channel, count in delivery.failed_attempts():
            failures.add_metric([channel], count)
        return [pending, outcomes, wait, continuation, counts, queued, failures]

    @staticmethod
    def _families() -> tuple[
        GaugeMetricFamily,
        CounterMetricFamily,
        HistogramMetricFamily,
        HistogramMetricFamily,
        CounterMetricFamily,
        GaugeMetricFamily,
        CounterMetricFamily,
    ]:
        return (
            GaugeMetricFamily(
                "chat_app_pending_decisions",
                "Decisions waiting for someone, by kind (tool or question), tool and policy rule.",
                labels=["kind", "tool", "rule"],
            ),
            CounterMetricFamily(
                "chat_app_decisions_total",
                "Decisions made, by outcome (expired and auto included; one the agent refused "
                "and that waits again stays counted as it was made).",
                labels=["outcome"],
            ),
            HistogramMetricFamily(
                "chat_app_decision_wait_seconds",
                "Seconds from a pause to the answer that settled it (a person's, in the page or "
                "at the desk); an expiry is not an answer and is not counted here.",
                labels=[],
            ),
            HistogramMetricFamily(
                "chat_app_continuation_seconds",
                "Seconds of the continuation run that carried a decision to the agent.",
                labels=[],
            ),
            CounterMetricFamily(
                "chat_app_notifications_total",
                "Notices sent, given up on (failed) or not sent at all (skipped), by channel.",
                labels=["channel", "status"],
            ),
            GaugeMetricFamily(
                "chat_app_notifications_pending",
                "Notices queued and not sent yet, by channel.",
                labels=["channel"],
            ),
            CounterMetricFamily(
                "chat_app_notification_failures_total",
                "Delivery attempts that failed, by channel.",
                labels=["channel"],
            ),
        )


def _add_histogram(family: HistogramMetricFamily, histogram: Histogram) -> None:
    # `le` as Python writes a float ("1.0", "0.05"): what Prometheus' own clients write.
    buckets = [(str(float(bound)), float(count)) for bound, count in histogram.buckets]
    family.add_metric([], [*buckets, ("+Inf", float(histogram.count))], histogram.sum)


#: A bearer that is neither a scraper's nor a person's.
NEITHER_TOKEN = "This bearer is neither the metrics token nor an API token of this app."


def metrics_routes(
    source: MetricsSource, who: Who, roles: RolesOf, *, unguarded: bool
) -> list[Route]:
    """`GET /metrics` over `source`; `who` identifies a request, `roles` gives its roles;
    `unguarded`: the app has no sign-in, so without a token anyone may read the figures."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(DeskCollector(source))
    token = source.token.encode() if source.token else None

    async def metrics(request: Request) -> Response:
        if not (token is None and unguarded) and not _has_token(request, token):
            identity = await who(request)
            if isinstance(identity, AuthFailure) and identity.message == NOT_OUR_TOKEN:
                return unauthorized(AuthFailure(NEITHER_TOKEN))  # here, a scraper's may be
            if isinstance(identity, AuthFailure):
                return unauthorized(identity)
            if identity.anonymous:
                return unauthorized(AuthFailure("Sign in as an admin, or give the metrics token."))
            if ADMIN_ROLE not in roles(identity):
                return JSONResponse(
                    {"error": "The metrics are for the role admin (or the metrics token)."},
                    status_code=403,
                )
        try:
            page = await asyncio.to_thread(generate_latest, registry)
        except OperationalError as error:
            _log.warning("GET /metrics: the database did not answer: %s", error.orig or error)
            return JSONResponse(
                {"error": "The database is not answering; no figures to give."},
                status_code=503,
                headers={"Retry-After": "5"},
            )
        return Response(page, media_type=CONTENT_TYPE_LATEST)

    return [Route("/metrics", metrics, methods=["GET"])]


def _has_token(request: Request, token: bytes | None) -> bool:
    if token is None:
        return False
    scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
    # Compared in constant time: how long a wrong guess took says nothing about the token.
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token)

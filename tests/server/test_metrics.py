"""`GET /metrics` on SQLite and on PostgreSQL: who may read it (an admin, by cookie, API token
or a policy's roles; or the metrics token), and figures that follow the database: pending
decisions by tool and rule, outcomes, the wait and continuation histograms, deliveries by
channel and status and their failed attempts. A database that does not answer is a 503.

The exposition is read with prometheus_client's own parser.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from argon2 import PasswordHasher
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, create_engine, insert, update

from chat_app.demo import build_demo_agent
from chat_app.desk import DecisionDraft, DeskStats, DeskStore, Filing, decision_id_of
from chat_app.notify.stats import DeliveryStats
from chat_app.server import create_app
from chat_app.server.metrics import NEITHER_TOKEN, MetricsSource
from chat_app.trust import Identity, Sealer, SQLiteLedger
from chat_app.trust.accounts import Accounts
from chat_app.trust.authn import AuthConfig, Authenticator, AuthMode
from chat_app.trust.sessions import SessionSigner
from chat_app.trust.store import create_database_engine, open_database
from chat_app.trust.tables import decisions, deliveries
from tests.live_server import free_port

TOKEN = "scrape-me-0123456789"
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
Labels = frozenset[tuple[str, str]]
RolesOf = Callable[[Identity], frozenset[str]]


@dataclass
class Metrics:
    """An app with `GET /metrics` over a database, called in process (ASGI)."""

    http: httpx.AsyncClient
    engine: Engine
    accounts: Accounts | None

    async def cookie_of(self, email: str) -> dict[str, str]:
        response = await self.http.post("/api/signin/demo", data={"email": email})
        assert response.status_code == 303, response.text
        return {"Cookie": response.headers["set-cookie"].split(";")[0]}

    def api_token(self, email: str, roles: list[str]) -> dict[str, str]:
        assert self.accounts is not None
        self.accounts.add_user(email, "a-long-password", roles)
        return {"Authorization": f"Bearer {self.accounts.create_token(email, 'scraper')}"}

    async def figures(self, headers: dict[str, str]) -> dict[tuple[str, Labels], float]:
        """Every sample of a successful scrape, by name and labels."""
        response = await self.http.get("/metrics", headers=headers)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == CONTENT_TYPE_LATEST
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples
        }


@asynccontextmanager
async def metrics_app(
    tmp_path: Path,
    database_url: str,
    *,
    mode: AuthMode | None = "demo",
    token: str | None = TOKEN,
    roles: RolesOf | None = None,
    stats_engine: Engine | None = None,
) -> AsyncIterator[Metrics]:
    """The demo agent's app with metrics over a new database (`mode` None: no
    authenticator); `stats_engine` reads the figures instead, when given."""
    engine = open_database(database_url)
    accounts = None
    authenticator = None
    if mode is not None:
        fast = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
        accounts = None if mode == "none" else Accounts(engine, hasher=fast)
        authenticator = Authenticator(
            AuthConfig(mode=mode),
            signer=SessionSigner(b"s" * 32, ttl_seconds=3600),
            directory=accounts,
        )
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    agent = build_demo_agent(sealer=Sealer(b"k" * 32), ledger=ledger)
    source_engine = stats_engine or engine
    source = MetricsSource(DeskStats(source_engine), DeliveryStats(source_engine), token)
    app = create_app(agent, authenticator=authenticator, roles=roles, metrics=source)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            yield Metrics(http, engine, accounts)
    finally:
        ledger.close()
        engine.dispose()


# --- who may read it ------------------------------------------------------------------------


async def test_an_admin_or_the_token_may_read_it_in_demo_mode(
    tmp_path: Path, database_url: str
) -> None:
    async with metrics_app(tmp_path, database_url) as app:
        olive = await app.cookie_of("olive@example.com")  # ops, admin
        sam = await app.cookie_of("sam@example.com")  # ops
        assert await app.figures(olive)
        assert await app.figures({"Authorization": f"Bearer {TOKEN}"})
        assert await app.figures(app.api_token("root@example.com", ["admin"]))

        # Without a cookie, demo mode signs in Rita: identified, but not an admin.
        for headers in ({}, sam, {"Authorization": f"Bearer {TOKEN}x"}):
            refused = await app.http.get("/metrics", headers=headers)
            assert refused.status_code == 403, headers
            assert "admin" in refused.json()["error"]
        token_of_someone = app.api_token("ops@example.com", ["ops"])
        assert (await app.http.get("/metrics", headers=token_of_someone)).status_code == 403
        revoked = await app.http.get("/metrics", headers={"Authorization": "Bearer cat_nope"})
        assert revoked.status_code == 401
        assert revoked.json()["error"] == "The API token is not valid or was revoked."


async def test_with_passwords_nobody_signed_in_is_401_and_roles_come_from_the_app(
    tmp_path: Path, database_url: str
) -> None:
    def roles(identity: Identity) -> frozenset[str]:  # as a policy's [roles] table adds them
        return identity.roles | ({"admin"} if identity.email == "pol@example.com" else set())

    async with metrics_app(tmp_path, database_url, mode="password", roles=roles) as app:
        for headers, said in (
            ({}, "Sign in first."),
            ({"Authorization": "Bearer wrong"}, NEITHER_TOKEN),
        ):
            refused = await app.http.get("/metrics", headers=headers)
            assert refused.status_code == 401
            assert refused.json()["error"] == said
        assert await app.figures({"Authorization": f"bearer  {TOKEN} "})
        assert await app.figures(app.api_token("pol@example.com", []))
        assert (
            await app.http.get("/metrics", headers=app.api_token("x@example.com", ["auditor"]))
        ).status_code == 403


@pytest.mark.parametrize("mode", [None, "none"])
async def test_without_sign_in_a_configured_token_is_needed_and_otherwise_it_is_open(
    tmp_path: Path, database_url: str, mode: AuthMode | None
) -> None:
    async with metrics_app(tmp_path, database_url, mode=mode) as app:
        refused = await app.http.get("/metrics")
        assert refused.status_code == 401
        assert "metrics token" in refused.json()["error"]
        assert await app.figures({"Authorization": f"Bearer {TOKEN}"})
    async with metrics_app(tmp_path, database_url, mode=mode, token=None) as app:
        assert await app.figures({})  # as the audit trail is without sign-in


async def test_only_with_a_metrics_source_is_there_a_route(tmp_path: Path) -> None:
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    app = create_app(build_demo_agent(sealer=Sealer(b"k" * 32), ledger=ledger))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        assert (await http.get("/metrics")).status_code == 404
    ledger.close()


# --- the figures ----------------------------------------------------------------------------


def draft(
    item_id: str, name: str, rule: str | None, kind: Literal["tool", "question"] = "tool"
) -> DecisionDraft:
    return DecisionDraft(
        item_id=item_id, kind=kind, name=name, summary=f"{name} {item_id}", args={},
        requester_email="rita@example.com", requester_name="Rita", expires_at=None,
        filing=Filing(
            rule=rule, approvers=("role:finance",) if rule else ("user:rita@example.com",),
            not_requester=rule is not None, quorum=1, waiting_for="Waiting",
            routes=("role:finance",) if rule else ("user:rita@example.com",),
        ),
    )  # fmt: skip


def decide(
    store: DeskStore, decision_id: str, outcome: str, *, waited: float, took: float | None
) -> None:
    assert store.decide(
        decision_id, email="ada@example.com", name="Ada", outcome=outcome,
        answer={"approved": outcome == "approved"}, now=T0 + timedelta(seconds=waited),
    )  # fmt: skip
    # The seconds as the desk records them (the wait when deciding, the continuation's time
    # when it has carried the answer), set here whatever the store does itself.
    with store.engine.begin() as connection:
        connection.execute(
            update(decisions)
            .where(decisions.c.id == decision_id)
            .values(wait_seconds=waited, continued_seconds=took)
        )


def delivery(key: str, channel: str, status: str, attempts: int) -> dict[str, Any]:
    return dict(
        key=key, decision_id=None, thread_id=None, event="decision-needed", channel=channel,
        recipient="" if channel == "webhook" else "ada@example.com", notice="{}", status=status,
        attempts=attempts, next_attempt_at=T0, created_at=T0,
    )  # fmt: skip


def histogram(
    figures: dict[tuple[str, Labels], float], name: str
) -> tuple[dict[str, float], float, float]:
    """A histogram's cumulative buckets by `le`, its sum and its count."""
    buckets = {
        dict(labels)["le"]: value
        for (sample, labels), value in figures.items()
        if sample == f"{name}_bucket"
    }
    return buckets, figures[(f"{name}_sum", frozenset())], figures[(f"{name}_count", frozenset())]


def labelled(figures: dict[tuple[str, Labels], float], name: str) -> dict[Labels, float]:
    return {labels: value for (sample, labels), value in figures.items() if sample == name}


WAIT_LE = ["1.0", "5.0", "30.0", "60.0", "300.0", "900.0", "1800.0", "3600.0", "7200.0",
           "14400.0", "43200.0", "86400.0", "+Inf"]  # fmt: skip
CONTINUATION_LE = ["0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "30.0", "60.0",
                   "+Inf"]  # fmt: skip


async def test_the_figures_follow_the_database(tmp_path: Path, database_url: str) -> None:
    scraper = {"Authorization": f"Bearer {TOKEN}"}
    async with metrics_app(tmp_path, database_url) as app:
        empty = await app.figures(scraper)
        assert labelled(empty, "chat_app_pending_decisions") == {}
        assert labelled(empty, "chat_app_decisions_total") == {}
        assert labelled(empty, "chat_app_notifications_pending") == {
            frozenset({("channel", "email")}): 0, frozenset({("channel", "webhook")}): 0
        }  # fmt: skip
        buckets, total, count = histogram(empty, "chat_app_decision_wait_seconds")
        assert list(buckets) == WAIT_LE and set(buckets.values()) == {0} and total == count == 0
        buckets, total, count = histogram(empty, "chat_app_continuation_seconds")
        assert list(buckets) == CONTINUATION_LE and set(buckets.values()) == {0}

        store = DeskStore(app.engine)
        store.create(
            "t1", owner_email="rita@example.com", owner_name="Rita", title="pay", state="{}",
            now=T0, status="waiting",
        )  # fmt: skip
        store.save(
            "t1", state="{}", status="waiting", waiting_for="Waiting", error=None, now=T0,
            drafts=[draft("a", "transfer", "large-transfers"), draft("b", "transfer",
            "large-transfers"), draft("c", "delete_project", None), draft("d", "transfer",
            None), draft("e", "How should order 42 ship?", None, "question"),
            draft("f", "How should order 43 ship?", None, "question")],
            open_items=["a", "b", "c", "d", "e", "f"],
        )  # fmt: skip
        pending = labelled(await app.figures(scraper), "chat_app_pending_decisions")
        assert pending == {
            frozenset({("kind", "tool"), ("tool", "transfer"), ("rule", "large-transfers")}): 2,
            frozenset({("kind", "tool"), ("tool", "transfer"), ("rule", "")}): 1,
            frozenset({("kind", "tool"), ("tool", "delete_project"), ("rule", "")}): 1,
            # A question's sentence is no label: one series for every order's question.
            frozenset({("kind", "question"), ("tool", ""), ("rule", "")}): 2,
        }

        decide(store, decision_id_of("t1", "a"), "approved", waited=42, took=0.3)
        decide(store, decision_id_of("t1", "c"), "rejected", waited=3, took=None)
        decide(store, decision_id_of("t1", "d"), "expired", waited=86_400.5, took=None)
        figures = await app.figures(scraper)
        assert labelled(figures, "chat_app_pending_decisions") == {
            frozenset({("kind", "tool"), ("tool", "transfer"), ("rule", "large-transfers")}): 1,
            frozenset({("kind", "question"), ("tool", ""), ("rule", "")}): 2,
        }
        assert labelled(figures, "chat_app_decisions_total") == {
            frozenset({("outcome", "approved")}): 1,
            frozenset({("outcome", "rejected")}): 1,
            frozenset({("outcome", "expired")}): 1,
        }
        buckets, total, count = histogram(figures, "chat_app_decision_wait_seconds")
        assert [buckets[le] for le in WAIT_LE] == [0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3]
        assert (total, count) == (86_445.5, 3)
        buckets, total, count = histogram(figures, "chat_app_continuation_seconds")
        assert [buckets[le] for le in CONTINUATION_LE] == [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]
        assert total == pytest.approx(0.3) and count == 1

        with app.engine.begin() as connection:
            connection.execute(
                insert(deliveries),
                [
                    delivery("w1", "webhook", "sent", 1),
                    delivery("w2", "webhook", "sent", 3),
                    delivery("w3", "webhook", "failed", 5),
                    delivery("e1", "email", "pending", 2),
                    delivery("e2", "email", "pending", 0),
                ],
            )
        figures = await app.figures(scraper)
        assert labelled(figures, "chat_app_notifications_total") == {
            frozenset({("channel", "webhook"), ("status", "sent")}): 2,
            frozenset({("channel", "webhook"), ("status", "failed")}): 1,
        }
        # Queued ones go down as they are sent: a gauge of their own.
        assert labelled(figures, "chat_app_notifications_pending") == {
            frozenset({("channel", "email")}): 2,
            frozenset({("channel", "webhook")}): 0,  # there at 0, not gone
        }
        assert labelled(figures, "chat_app_notification_failures_total") == {
            frozenset({("channel", "webhook")}): 7,
            frozenset({("channel", "email")}): 2,
        }


def test_the_histogram_refuses_buckets_out_of_order(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'unused.sqlite3'}")
    for buckets in ([5, 1], [1, 1], [1, float("inf")]):
        with pytest.raises(ValueError, match="ascending"):
            DeskStats(engine).histogram("wait_seconds", buckets)


async def test_a_database_that_does_not_answer_is_a_503(tmp_path: Path, database_url: str) -> None:
    if database_url.startswith("sqlite"):
        gone = f"sqlite:///{tmp_path / 'no-such-folder' / 'app.sqlite3'}"
    else:
        gone = f"postgresql://nobody@127.0.0.1:{free_port()}/nothing?connect_timeout=2"
    stats_engine = create_database_engine(gone)
    async with metrics_app(tmp_path, database_url, stats_engine=stats_engine) as app:
        refused = await app.http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert refused.status_code == 503
        assert refused.json() == {"error": "The database is not answering; no figures to give."}
    stats_engine.dispose()

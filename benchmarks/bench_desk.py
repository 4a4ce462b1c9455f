"""5. The approval desk: the inbox's first page, and a decision to its continuation's first
event, with 1,000 to 50,000 pending decisions, on SQLite and on PostgreSQL.

Per database (a SQLite file in a temporary folder, as the app keeps it; PostgreSQL from
`tests.pg_server`, fsync off) the desk's tables are filled in bulk, in one transaction per
step, with N pending decisions across N/10 conversations (10 per pause) — N = 1,000, 10,000
and (not with `--quick`) 50,000, each step adding to the last. Of every five decisions two
are large transfers (the demo policy's `large-transfers`: routed to `role:finance`, not the
requester), one a key rotation (`key-rotation`: `role:ops`, quorum 2, not the requester; a
quarter of them with one approval already, half of those Sam's, which takes them out of his
inbox), and two tools no rule covers (routed to
`user:<requester>`), asked by 24 people (Rita, Ada and Sam among them). PostgreSQL is
vacuumed and ANALYZEd after each step, as autovacuum leaves a running database once rows
have been added (without the vacuum, every index-only read also visits the table); SQLite
is not (the app never runs ANALYZE).

At each N:

* **`GET /api/inbox`**: the app of `chat_app.server.create_app` with the desk (demo sign-in,
  the demo policy), called in this process through `httpx.ASGITransport` with the demo
  session cookie of Ada (finance), Sam (ops) and Olive (admin, `?all=1`). Server time is
  from the ASGI call to the last byte of the response handed to the transport. Viewers
  interleaved, requests one at a time: 200 per viewer (30 at 50,000, a growth figure).
  `DeskStore.inbox` is timed inside each request too.
* **the Inbox page's load**: what `InboxState` does on load and on every inbox notice
  (`chat_app/ui/inbox_state.py`, its `_reload`: `Desk.inbox` with the page's limits, the
  rows, the filters' choices), called with the same viewers (Olive with "all pending" on);
  Reflex's own part (the state delta, the websocket) is not in it. 100 loads per viewer
  (15 at 50,000).
* **the plans**: EXPLAIN of the very statements `DeskStore.inbox` sends for each viewer.

At 10,000: **decide → first event**. Real pending transfers ("transfer 5000 to Ada",
started by Rita through `Desk.start`, the demo agent in this process with a sealer, a SQLite
ledger and the demo policy, no token delay), then Ada approves each with
`POST /api/inbox/{decisionId}`: the time from sending it to the first AG-UI event of the
continuation that the agent's `run` yields (the desk's `connection_for` wraps it), one
decision at a time, each continuation finished before the next; 60 per database.

`--quick`: N = 1,000 and 10,000, 30 requests and 15 page loads per viewer, 10 decisions.
Without PostgreSQL's server binaries, SQLite alone (the log says so).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import uvloop
from ag_ui.core import RunAgentInput
from sqlalchemy import Engine, event, insert, text

from chat_app.agent import Agent, event_to_wire
from chat_app.client import Connection, InProcessConnection, read_manifest
from chat_app.demo import POLICY_PATH, build_demo_agent
from chat_app.desk import Desk, DeskStore, RunAs, decision_id_of
from chat_app.server import create_app
from chat_app.trust import DEMO_PEOPLE, Identity, Policy, Sealer, SQLiteLedger
from chat_app.trust.accounts import Accounts
from chat_app.trust.authn import AuthConfig, Authenticator
from chat_app.trust.sessions import SessionSigner
from chat_app.trust.store import open_database
from chat_app.trust.tables import (
    conversation_states,
    conversations,
    decision_routes,
    decision_votes,
    decisions,
)

from .report import (
    Goal,
    Section,
    Table,
    collector_as_served,
    fmt,
    log,
    loglog_slope,
    median,
    new_figure,
    save_figure,
)

_DEMO = {person.name: person for person in DEMO_PEOPLE}
RITA, ADA, SAM, OLIVE = (_DEMO[name] for name in ("Rita", "Ada", "Sam", "Olive"))
POLICY = Policy.load(POLICY_PATH)
SIZES = (1_000, 10_000, 50_000)
QUICK_SIZES = (1_000, 10_000)
PER_CONVERSATION = 10
#: Who asked: the demo people but Olive, and 21 others.
REQUESTERS = [RITA.email, ADA.email, SAM.email, *(f"person{k}@example.com" for k in range(21))]
#: (label, viewer, GET query, the page's "all pending" switch)
VIEWERS = [
    ("finance (Ada)", ADA, "", False),
    ("ops (Sam)", SAM, "", False),
    ("admin (Olive), all=1", OLIVE, "?all=1", True),
]
#: Requests per viewer (interleaved) at N up to DECIDE_AT, and beyond it (where the
#: figure is only the growth's: fewer, to keep the run short); the page loads likewise.
REQUESTS = {"full": (200, 30), "quick": (30, 20)}
PAGE_LOADS = {"full": (100, 15), "quick": (15, 10)}
#: Decisions timed from POST to the continuation's first event, per database.
DECISIONS = {"full": 60, "quick": 10}
#: Where decide → first event is measured.
DECIDE_AT = 10_000
#: The issue's goals (server time, ms).
INBOX_GOAL_MS = 50.0
DECIDE_GOAL_MS = 100.0


# --- filling the tables ---------------------------------------------------------------------


def _kind(i: int, requester: str) -> dict[str, Any]:
    """The i-th decision's tool, arguments, rule and routes (two in five for finance, one
    for ops, two for the requester)."""
    slot = i % 5
    if slot in (0, 1):
        rule = POLICY.rule_named("large-transfers")
        args: dict[str, Any] = {"recipient": "Ada", "amount": 1000 + (i % 9000)}
        name, routes, quorum = "transfer", ["role:finance"], 1
    elif slot == 2:
        rule = POLICY.rule_named("key-rotation")
        args = {"environment": "production" if i % 2 else "staging"}
        name, routes, quorum = "rotate_keys", ["role:ops"], 2
    else:
        rule = None
        name = "refund" if slot == 3 else "delete_project"
        args = {"order": f"A-{i}", "amount": 60 + i % 500} if slot == 3 else {"name": f"p{i}"}
        routes, quorum = [f"user:{requester}"], 1
    return {
        "name": name,
        "args": args,
        "rule": rule,
        "routes": routes,
        "quorum": quorum,
    }


def seed(engine: Engine, start: int, stop: int, base: datetime) -> None:
    """Pending decisions start..stop-1 (and their conversations) in one transaction, the
    newest last; decision i was asked `stop - i` seconds before `base`."""
    convs, rows, routes, votes = [], [], [], []
    for c in range(start // PER_CONVERSATION, stop // PER_CONVERSATION):
        thread = f"seed-{c:06d}"
        requester = REQUESTERS[c % len(REQUESTERS)]
        name = requester.split("@")[0].capitalize()
        first = base - timedelta(seconds=stop - c * PER_CONVERSATION)
        convs.append(
            {
                "thread_id": thread,
                "owner_email": requester,
                "owner_name": name,
                "title": "seeded",
                "status": "waiting",
                "waiting_for": "",
                "error": None,
                "version": 2,
                "runner": None,
                "runner_until": None,
                "created_at": first,
                "updated_at": first,
            }  # fmt: skip
        )
        for i in range(c * PER_CONVERSATION, (c + 1) * PER_CONVERSATION):
            kind = _kind(i, requester)
            rule = kind["rule"]
            item_id = f"approval_{i}"
            decision_id = decision_id_of(thread, item_id)
            created = base - timedelta(seconds=stop - i)
            waiting = (
                POLICY.waiting_for(rule, viewer_is_requester=False)
                if rule is not None
                else f"Waiting for {name}"
            )
            rows.append(
                {
                    "id": decision_id,
                    "thread_id": thread,
                    "item_id": item_id,
                    "kind": "tool",
                    "name": kind["name"],
                    "summary": ", ".join(f"{k}={v}" for k, v in kind["args"].items()),
                    "args": json.dumps(kind["args"]),
                    "requester_email": requester,
                    "requester_name": name,
                    "rule": rule.name if rule is not None else None,
                    "approvers": json.dumps(list(rule.approvers) if rule is not None else []),
                    "not_requester": rule is not None and rule.not_requester,
                    "quorum": kind["quorum"],
                    "waiting_for": waiting,
                    "status": "pending",
                    "outcome": None,
                    "decided_by": None,
                    "decided_by_name": None,
                    "answer": None,
                    "applied": False,
                    "created_at": created,
                    "expires_at": None,
                    "decided_at": None,
                }  # fmt: skip
            )
            routes += [
                {"decision_id": decision_id, "route": route, "created_at": created}
                for route in kind["routes"]
            ]
            if kind["quorum"] > 1 and i % 4 == 2:  # one of two approvals given
                sams = i % 8 == 6 and requester != SAM.email  # then no longer Sam's to give
                voter = (SAM.email, SAM.name) if sams else ("oscar@example.com", "Oscar")
                votes.append(
                    {
                        "decision_id": decision_id,
                        "voter_email": voter[0],
                        "voter_name": voter[1],
                        "verified_by": "password",
                        "token_name": "",
                        "roles": '["ops"]',
                        "approved": True,
                        "answer": json.dumps(
                            {"interruptId": item_id, "status": "resolved", "payload": True}
                        ),
                        "at": created + timedelta(seconds=1),
                    }  # fmt: skip
                )
    with engine.begin() as connection:
        connection.execute(insert(conversations), convs)
        states = [{"thread_id": conv["thread_id"], "state": "{}"} for conv in convs]
        connection.execute(insert(conversation_states), states)
        connection.execute(insert(decisions), rows)
        connection.execute(insert(decision_routes), routes)
        if votes:
            connection.execute(insert(decision_votes), votes)
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT")
            connection.execute(text("VACUUM ANALYZE"))


def plans(desk: Desk, viewer: Identity, everyone: bool) -> dict[str, str]:
    """The database's plan for each statement `DeskStore.inbox` sends for `viewer`, as
    captured on its way to the database, condensed to a line: `cut` (where the person's
    routes were read short of all their entries; not for an admin's all pending), `page`
    (the page of 50) and `count` (its capped total); of the last round, when a person's
    page takes more than one."""
    engine = desk.store.engine
    sent: list[tuple[str, str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        head = statement.lstrip()[:40].lower()
        if head.startswith("select decision_votes") or not head.startswith("select"):
            return
        kind = (
            "count" if head.startswith("select count")
            else "page" if ".args" in statement  # it reads whole decisions
            else "cut"
        )  # fmt: skip
        sent.append((kind, statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        desk.store.inbox(
            desk._routes(viewer), viewer_email=viewer.email, everyone=everyone, limit=50
        )
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    postgres = engine.dialect.name == "postgresql"
    found = {}
    with engine.connect() as connection:
        for kind, statement, parameters in sent:
            prefix = "EXPLAIN " if postgres else "EXPLAIN QUERY PLAN "
            rows = connection.exec_driver_sql(prefix + statement, parameters).all()
            found[kind] = _condensed([str(row[-1]) for row in rows], postgres)
    return found


def _condensed(lines: list[str], postgres: bool) -> str:
    """A plan on one line: SQLite's as it is; PostgreSQL's nodes without their costs."""
    if not postgres:
        return " / ".join(" ".join(line.split()) for line in lines)
    nodes = [lines[0]] + [line for line in lines[1:] if "->" in line]
    return " / ".join(
        " ".join(re.sub(r"\s*\(cost=[^)]*\)", "", line).replace("->", "").split()) for line in nodes
    )


# --- the app in this process ----------------------------------------------------------------


class ServerTime:
    """An ASGI app wrapped to time each request: from the call to the last body message."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        started = time.perf_counter()

        async def timed(message: Any) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.last = time.perf_counter() - started
            await send(message)

        await self.app(scope, receive, timed)


@dataclass
class Rig:
    """The demo agent, the desk over one database, the app, and the continuations' first
    events (thread id -> perf_counter) as the agent yields them."""

    engine: Engine
    agent: Agent
    desk: Desk
    timed: ServerTime
    store_time: StoreTime
    http: httpx.AsyncClient
    cookies: dict[str, dict[str, str]] = field(default_factory=dict)
    first_event: dict[str, float] = field(default_factory=dict)


def _connection_for(agent: Agent, first_event: dict[str, float]) -> Callable[[RunAs], Connection]:
    """As `python -m chat_app.server` wires the desk to the agent, with the first event of
    each continuation timestamped."""

    async def stamped(thread_id: str, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for event_ in events:
            first_event.setdefault(thread_id, time.perf_counter())
            yield event_

    def connect(run_as: RunAs) -> Connection:
        def run(given: RunAgentInput) -> AsyncIterator[Any]:
            events = agent.run(
                given,
                identity=run_as.identity,
                cosigners=run_as.cosigners,
                deciders=run_as.deciders,
            )
            return stamped(given.thread_id, events) if given.resume else events

        return InProcessConnection(run, encode=event_to_wire)

    return connect


@contextmanager
def rig(engine: Engine, folder: Path) -> Iterator[Rig]:
    first_event: dict[str, float] = {}
    agent = build_demo_agent(
        sealer=Sealer(os.urandom(32)), ledger=SQLiteLedger(folder / "ledger.db"), policy=POLICY
    )
    tools = read_manifest({"tools": agent.tool_manifest()}).tools
    desk = Desk(
        DeskStore(engine), connection_for=_connection_for(agent, first_event),
        tools=lambda: tools, policy=POLICY,
    )  # fmt: skip
    authenticator = Authenticator(
        AuthConfig(mode="demo"),
        signer=SessionSigner(os.urandom(32), ttl_seconds=3600),
        directory=Accounts(engine),
    )
    timed = ServerTime(
        create_app(agent, authenticator=authenticator, roles=POLICY.roles_of, desk=desk)
    )
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=timed), base_url="http://desk")
    yield Rig(engine, agent, desk, timed, StoreTime(desk.store), http, first_event=first_event)


async def sign_in(r: Rig) -> None:
    for person in DEMO_PEOPLE:
        answer = await r.http.post("/api/signin/demo", data={"email": person.email})
        assert answer.status_code == 303, answer.text
        r.cookies[person.email] = {"Cookie": answer.headers["set-cookie"].split(";")[0]}


# --- measuring ------------------------------------------------------------------------------


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def _figures(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1e3 for s in seconds]
    return {"n": len(ms), "p50": _pct(ms, 0.5), "p99": _pct(ms, 0.99), "max": max(ms)}


class StoreTime:
    """`DeskStore.inbox` of one desk wrapped to time its calls (in the desk's worker thread):
    the queries and the items, without the HTTP around them."""

    def __init__(self, store: DeskStore) -> None:
        self.calls: list[float] = []
        inbox = store.inbox

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return inbox(*args, **kwargs)
            finally:
                self.calls.append(time.perf_counter() - started)

        store.inbox = timed  # type: ignore[method-assign]


async def inbox_http(r: Rig, requests: int) -> dict[str, Any]:
    """`GET /api/inbox` for each viewer, interleaved: server time, the `DeskStore.inbox`
    call in it, this process's CPU time (the app and, on SQLite, the database), and what it
    answered (items on the page, total)."""
    labels = [label for label, *_ in VIEWERS]
    times: dict[str, list[float]] = {label: [] for label in labels}
    store: dict[str, list[float]] = {label: [] for label in labels}
    cpu: dict[str, list[float]] = {label: [] for label in labels}
    shown: dict[str, tuple[int, int]] = {}
    for round_ in range(requests + 5):  # the first 5: warm-up
        for label, viewer, query, _ in VIEWERS:
            r.store_time.calls.clear()
            began = time.process_time()
            answer = await r.http.get(f"/api/inbox{query}", headers=r.cookies[viewer.email])
            used = time.process_time() - began
            if answer.status_code != 200:
                raise RuntimeError(f"GET /api/inbox{query}: {answer.status_code} {answer.text}")
            if round_ >= 5:
                times[label].append(r.timed.last)
                store[label].append(sum(r.store_time.calls))
                cpu[label].append(used)
            else:
                body = answer.json()
                shown[label] = (len(body["items"]), body["total"])
    return {
        label: {
            **_figures(times[label]),
            "store_p50": median(store[label]) * 1e3,
            "cpu_p50": median(cpu[label]) * 1e3,
            "items": shown[label][0],
            "total": shown[label][1],
        }
        for label in labels
    }


def page_loader(desk: Desk) -> tuple[str, Callable[[Identity, bool], Any]]:
    """The Inbox page's load work, as its state does it: what it is, and an async function."""
    from chat_app.ui import session as sessions
    from chat_app.ui.inbox_state import LIMIT, InboxState

    sessions._backend.desk = desk
    reload = InboxState._reload

    async def page(viewer: Identity, everyone: bool) -> Any:
        state = SimpleNamespace(
            tool="", requester="", everyone=everyone, rows=[], total=0, tools=[],
            requesters=[], loaded=False, problem="", is_admin=False, inbox_count=0,
            auth_error="",
        )  # fmt: skip
        await reload(state, viewer)  # type: ignore[arg-type]
        if state.problem:
            raise RuntimeError(f"the inbox page: {state.problem}")
        return state.rows, state.total

    what = (
        f"`InboxState._reload` (`chat_app/ui/inbox_state.py`): `Desk.inbox` (the first "
        f"{LIMIT}, with the total), the person's own count when the list is not theirs "
        "(Olive's all pending), `Desk.inbox_choices` for the filters, and the rows built"
    )
    return what, page


async def inbox_page(load: Callable[[Identity, bool], Any], loads: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {label: [] for label, *_ in VIEWERS}
    cpu: dict[str, list[float]] = {label: [] for label, *_ in VIEWERS}
    shown: dict[str, int] = {}
    for round_ in range(loads + 3):  # the first 3: warm-up
        for label, viewer, _, everyone in VIEWERS:
            sent, began = time.perf_counter(), time.process_time()
            rows, _total = await load(viewer, everyone)
            if round_ >= 3:
                times[label].append(time.perf_counter() - sent)
                cpu[label].append(time.process_time() - began)
            shown[label] = len(rows)
    return {
        label: {**_figures(times[label]), "cpu_p50": median(cpu[label]) * 1e3, "rows": shown[label]}
        for label in times
    }


async def decide_to_first_event(r: Rig, count: int) -> dict[str, Any]:
    """`count` real pending transfers (Rita), then Ada approves each over HTTP: POST sent ->
    the continuation's first event; also POST -> its answer, and -> the continuation's end."""
    threads: list[str] = []
    for _ in range(0, count, 10):  # ten runs at a time
        for _ in range(10):
            threads.append(await r.desk.start(RITA, "transfer 5000 to Ada"))
        await r.desk.wait_idle()
    threads = threads[:count]
    pending = []
    for thread in threads:
        [item] = [i for i in r.desk.store.decisions_of(thread) if i.status == "pending"]
        pending.append((thread, item.decision_id))
    first, answered, finished = [], [], []
    cookie = r.cookies[ADA.email]
    for thread, decision_id in pending:
        sent = time.perf_counter()
        answer = await r.http.post(f"/api/inbox/{decision_id}", json={"approved": True},
                                   headers=cookie)  # fmt: skip
        answered.append(time.perf_counter() - sent)
        if answer.status_code != 200 or answer.json()["status"] != "decided":
            raise RuntimeError(f"POST /api/inbox/{decision_id}: {answer.status_code} {answer.text}")
        await r.desk.wait_idle()
        finished.append(time.perf_counter() - sent)
        if thread not in r.first_event:
            raise RuntimeError(f"no continuation reached the agent for {thread}")
        first.append(r.first_event[thread] - sent)
    view = await r.desk.view(pending[-1][0], ADA)
    if view.summary.status != "done":
        raise RuntimeError(f"the last transfer ended {view.summary.status}: {view.summary.error}")
    return {
        "first_event": _figures(first),
        "post_answer": _figures(answered),
        "continuation_done": _figures(finished),
    }


# --- the run --------------------------------------------------------------------------------


@contextmanager
def databases(folder: Path) -> Iterator[list[tuple[str, str]]]:
    """(name, URL) of each database to measure: SQLite, and PostgreSQL when its binaries are
    here."""
    from tests.pg_server import PostgresMissing, start_postgres

    found = [("SQLite", f"sqlite:///{folder / 'sqlite' / 'chat_app.sqlite3'}")]
    server = None
    try:
        server = start_postgres()
        found.append(("PostgreSQL", server.create_database("bench")))
    except PostgresMissing as error:
        log(f"desk: no PostgreSQL ({error})")
    try:
        yield found
    finally:
        if server is not None:
            server.stop()


async def measure(
    name: str, url: str, folder: Path, sizes: tuple[int, ...], mode: str
) -> dict[str, Any]:
    engine = open_database(url)
    results: dict[str, Any] = {"sizes": {}}
    base = datetime.now(UTC) - timedelta(days=1)
    try:
        with rig(engine, folder) as r:
            await sign_in(r)
            what, load = page_loader(r.desk)
            results["page"] = what
            done = 0
            for n in sizes:
                began = time.perf_counter()
                seed(engine, done, n, base + timedelta(seconds=n))
                seeded = time.perf_counter() - began
                done = n
                # As the app is served (`reflex run --env prod` freezes the heap it built
                # before it forks its workers, which collect as `tune_collector` says): what
                # lives on (the rig, the imports) is kept out of the collections the loads
                # would otherwise pause for.
                gc.collect()
                gc.freeze()
                at: dict[str, Any] = {"seed_s": seeded}
                beyond = 1 if n > DECIDE_AT else 0
                at["http"] = await inbox_http(r, REQUESTS[mode][beyond])
                at["page"] = await inbox_page(load, PAGE_LOADS[mode][beyond])
                at["plans"] = {
                    label: await asyncio.to_thread(plans, r.desk, viewer, everyone)
                    for label, viewer, _, everyone in VIEWERS
                }
                log(
                    f"desk {name} N={n}: seeded in {seeded:.1f} s; GET p50/p99 "
                    + ", ".join(
                        f"{k} {v['p50']:.1f}/{v['p99']:.1f} ms" for k, v in at["http"].items()
                    )
                    + "; page p50/p99 "
                    + ", ".join(
                        f"{k} {v['p50']:.1f}/{v['p99']:.1f} ms" for k, v in at["page"].items()
                    )
                )
                if n == DECIDE_AT:
                    at["decide"] = await decide_to_first_event(r, DECISIONS[mode])
                    d = at["decide"]["first_event"]
                    log(f"desk {name} N={n}: decide -> first event p50 {d['p50']:.1f} "
                        f"p99 {d['p99']:.1f} ms")  # fmt: skip
                results["sizes"][n] = at
            await r.http.aclose()
    finally:
        engine.dispose()
    return results


def run(quick: bool) -> Section:
    mode = "quick" if quick else "full"
    sizes = QUICK_SIZES if quick else SIZES
    previous = os.environ.get("CHAT_APP_DEMO_TOKEN_DELAY_MS")
    os.environ["CHAT_APP_DEMO_TOKEN_DELAY_MS"] = "0"  # model excluded
    results: dict[str, Any] = {}
    try:
        with (
            tempfile.TemporaryDirectory(prefix="bench-desk-") as tmp,
            databases(Path(tmp)) as dbs,
            collector_as_served(),
        ):
            for name, url in dbs:
                folder = Path(tmp) / name
                folder.mkdir(exist_ok=True)
                results[name] = uvloop.run(measure(name, url, folder, sizes, mode))
    finally:
        if previous is None:
            os.environ.pop("CHAT_APP_DEMO_TOKEN_DELAY_MS", None)
        else:
            os.environ["CHAT_APP_DEMO_TOKEN_DELAY_MS"] = previous
    return _section(results, sizes, mode)


# --- the report -----------------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


#: The growth goal, as this benchmark reads "indexed, not linear": the growth exponent of the
#: p50 against N (log-log slope) at most this, i.e. 10× the pending decisions for at most 2×
#: the time (an index range scan stays near 0; linear work is 1).
GROWTH_GOAL = 0.3


def _section(results: dict[str, Any], sizes: tuple[int, ...], mode: str) -> Section:
    labels = [label for label, *_ in VIEWERS]
    rows = []
    for name, got in results.items():
        for n, at in got["sizes"].items():
            for label in labels:
                h, p = at["http"][label], at["page"][label]
                rows.append(
                    [
                        name,
                        f"{n:,}",
                        label,
                        f"{h['items']} of {h['total']:,}",
                        fmt(h["p50"]),
                        fmt(h["p99"]),
                        fmt(h["store_p50"]),
                        fmt(h["cpu_p50"]),
                        fmt(p["p50"]),
                        fmt(p["p99"]),
                        fmt(p["cpu_p50"]),
                    ]
                )
    at_goal = {name: got["sizes"][DECIDE_AT] for name, got in results.items()}

    def worst(at: dict[str, Any], part: str) -> tuple[float, str]:
        return max((at[part][label]["p99"], label) for label in labels)

    def under(
        what: str, figures: dict[str, tuple[float, str]], goal: float, unit: str = "ms"
    ) -> Goal:
        return Goal(
            "issue 17",
            what,
            all(value < goal for value, _ in figures.values()),
            "; ".join(
                f"{name} {value:.1f} {unit} ({label})" for name, (value, label) in figures.items()
            ),
        )

    decide = {name: at["decide"]["first_event"] for name, at in at_goal.items()}
    slopes = {
        name: {
            label: loglog_slope(
                [float(n) for n in sizes], [got["sizes"][n]["http"][label]["p50"] for n in sizes]
            )
            for label in labels
        }
        for name, got in results.items()
    }
    goals = [
        under(
            f"`GET /api/inbox`, first page at {DECIDE_AT:,} pending, server p99 < "
            f"{INBOX_GOAL_MS:.0f} ms (the worst viewer)",
            {k: worst(at, "http") for k, at in at_goal.items()},
            INBOX_GOAL_MS,
        ),
        under(
            f"the Inbox page's load at {DECIDE_AT:,} pending, p99 < {INBOX_GOAL_MS:.0f} ms",
            {k: worst(at, "page") for k, at in at_goal.items()},
            INBOX_GOAL_MS,
        ),
        under(
            f"`POST /api/inbox/{{id}}` → the continuation's first event at {DECIDE_AT:,} "
            f"pending, p99 < {DECIDE_GOAL_MS:.0f} ms, model excluded",
            {k: (d["p99"], f"p50 {d['p50']:.1f} ms") for k, d in decide.items()},
            DECIDE_GOAL_MS,
        ),
        Goal(
            "issue 17",
            "growth with the pending decisions indexed, not linear (the growth exponent of "
            f"`GET /api/inbox` p50 over N = {', '.join(f'{n:,}' for n in sizes)} at most "
            f"{GROWTH_GOAL:g}: 10× the decisions for at most 2× the time; linear is 1)",
            all(max(by.values()) <= GROWTH_GOAL for by in slopes.values()),
            "; ".join(
                f"{name} " + ", ".join(f"{label} {v:.2f}" for label, v in by.items())
                for name, by in slopes.items()
            ),
        ),
    ]
    growth_rows, decide_rows, plan_rows = [], [], []
    for name, got in results.items():
        by_n = got["sizes"]
        for label in labels:
            cells = [name, label]
            for a, b in zip(sizes, sizes[1:], strict=False):
                for part in ("http", "page"):
                    cells.append(
                        f"{by_n[b][part][label]['p50'] / by_n[a][part][label]['p50']:.2f}×"
                    )
                store = [by_n[x]["http"][label]["store_p50"] for x in (a, b)]
                cells.append(f"{store[1] / store[0]:.2f}×")
            for key in ("p50", "store_p50"):
                ys = [by_n[n]["http"][label][key] for n in sizes]
                cells.append(f"{loglog_slope([float(n) for n in sizes], ys):.2f}")
            growth_rows.append(cells)
        d = by_n[DECIDE_AT]["decide"]
        decide_rows.append(
            [
                name,
                d["first_event"]["n"],
                fmt(d["first_event"]["p50"]),
                fmt(d["first_event"]["p99"]),
                fmt(d["post_answer"]["p50"]),
                fmt(d["continuation_done"]["p50"]),
            ]
        )
        for label in labels:
            planned = by_n[DECIDE_AT]["plans"][label]
            plan_rows.append(
                [name, label]
                + [f"`{planned[k]}`" if k in planned else "" for k in ("cut", "page", "count")]
            )
    loads = f"{REQUESTS[mode][0]} requests per viewer and N"
    page_loads = f"{PAGE_LOADS[mode][0]} loads"
    if sizes[-1] > DECIDE_AT:
        loads += f" ({REQUESTS[mode][1]} at {sizes[-1]:,}, a growth figure only)"
        page_loads += f" ({PAGE_LOADS[mode][1]} at {sizes[-1]:,})"
    intro = (
        f"N pending decisions across N/{PER_CONVERSATION} conversations, written in bulk, per "
        "database: two in five large transfers for `role:finance`, one in five key rotations "
        "for `role:ops` (quorum 2; a quarter with one approval given, half of those Sam's), two "
        "in five for "
        "`user:<requester>`; 24 requesters, Ada and Sam among them (their own requests are "
        "not theirs to approve). SQLite: a file, as the app keeps it, no ANALYZE; PostgreSQL: "
        "`tests.pg_server` (fsync off), vacuumed and ANALYZEd after each fill, as autovacuum "
        "leaves a running database. `GET /api/inbox` is "
        "`create_app` with the desk, in this process (`httpx.ASGITransport`, the demo session "
        "cookie, one request at a time, viewers interleaved); server time is from the ASGI "
        "call to the response's last byte; CPU is this process's (the app, and SQLite's work, "
        f"but not PostgreSQL's server). {loads}. The Inbox page: {page_loads} of "
        f"{results[next(iter(results))]['page']}, for the same viewers (Olive with all "
        "pending on); Reflex's own part (the state delta, the websocket) is not in it. "
        "After each fill the process's heap is collected and frozen (`gc.freeze()`) and the "
        "collector set as the app sets it (`tune_collector`), as Reflex's production server "
        "freezes the app's heap before it forks its workers: a full "
        "collection of this process's unfrozen heap paused 100–180 ms, and was the page's p99 "
        "at PostgreSQL in earlier runs. "
        "The goals are the issue's, absolute: TanStack AI has no inbox or stored decisions, so "
        "there is no reference to run beside it."
    )
    growth_headers = ["database", "viewer"]
    for a, b in zip(sizes, sizes[1:], strict=False):
        ratio = f"{b // 1000}k / {a // 1000}k"
        growth_headers += [f"GET p50 {ratio}", f"page p50 {ratio}", f"`DeskStore.inbox` {ratio}"]
    growth_headers += ["growth exponent, GET p50", "growth exponent, `DeskStore.inbox`"]
    return Section(
        title="5. The approval desk: inbox first page, decide → first event",
        intro=intro,
        headers=[
            "database",
            "N pending",
            "viewer",
            "page / total",
            "GET p50 ms",
            "GET p99 ms",
            "of which `DeskStore.inbox` p50 ms",
            "GET CPU p50 ms",
            "page load p50 ms",
            "page p99 ms",
            "page CPU p50 ms",
        ],
        rows=rows,
        notes=[
            "Goals (the issue's): "
            + " ".join(
                f"({i + 1}) {g.what}: {_verdict(g.met)} ({g.figures})." for i, g in enumerate(goals)
            )
        ],
        goals=goals,
        plots=[_plot(results, sizes)],
        tables=[
            Table(
                title=f"Decide → the continuation's first event, {DECIDE_AT:,} pending",
                intro=(
                    'Real pending transfers ("transfer 5000 to Ada", started by Rita through '
                    "`Desk.start`; the demo agent in this process with a sealer, a SQLite "
                    "ledger and the demo policy, no token delay), then Ada approves each with "
                    "`POST /api/inbox/{decisionId}`, one at a time, each continuation finished "
                    "before the next. First event: sending the POST → the first AG-UI event "
                    "the agent's `run` yields for the continuation. The POST answers once the "
                    "continuation has stored its first step; done: the continuation's reply "
                    "stored."
                ),
                headers=[
                    "database",
                    "decisions",
                    "→ first event p50 ms",
                    "p99 ms",
                    "POST answered p50 ms",
                    "continuation done p50 ms",
                ],
                rows=decide_rows,
            ),
            Table(
                title="Growth with the number of pending decisions",
                intro=(
                    "Ratios of p50s between sizes (10× the pending decisions from 1k to 10k, "
                    "5× from 10k to 50k), and the growth exponent over all sizes (the slope of "
                    "log time against log N). An index range scan stays near 1× and 0; work "
                    "over every pending decision (or every one the viewer may see) follows N, "
                    "an exponent near 1 once it outweighs the fixed costs."
                ),
                headers=growth_headers,
                rows=growth_rows,
            ),
            Table(
                title=f"The inbox's plans at {DECIDE_AT:,} pending",
                intro=(
                    "EXPLAIN (SQLite: EXPLAIN QUERY PLAN) of the statements `DeskStore.inbox` "
                    "sends for each viewer (a person's: where their routes were read short of "
                    "all their entries, the page of 50, the count of the total; an admin's all "
                    "pending: the page and the count), captured on their way to the database; "
                    "PostgreSQL's nodes without costs."
                ),
                headers=["database", "viewer", "routes read short", "page of 50", "count"],
                rows=plan_rows,
            ),
        ],
        data={
            name: {str(n): at for n, at in got["sizes"].items()} | {"page": got["page"]}
            for name, got in results.items()
        },
    )


def _plot(results: dict[str, Any], sizes: tuple[int, ...]) -> str:
    fig, ax = new_figure("Inbox first page: server time p50", "pending decisions", "ms (p50)")
    for name, got in results.items():
        for label, *_ in VIEWERS:
            ax.plot(
                list(sizes),
                [got["sizes"][n]["http"][label]["p50"] for n in sizes],
                "o-",
                label=f"{name}, GET, {label}",
            )
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return save_figure(fig, "desk.png")

"""The inbox is an index lookup by route, however many decisions are pending for others: the
plan of the very statements `DeskStore.inbox` sends (captured as they go to the database)
uses `decision_routes`' route index, never a scan of that table, and its page looks each
decision up by its key, never scanning `decisions` for them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event, insert, text

from chat_app.desk import DecisionDraft, Filing, decision_id_of
from chat_app.trust.tables import decisions
from tests.desk.world import World

PEOPLE = 40
PENDING = 150  # each: 6000 pending decisions, 40 of them for finance; more than a page each
DECIDED = 100  # each: a history of 4000 decided ones (which have no routes)


def draft(n: int, requester: str, route: str) -> DecisionDraft:
    return DecisionDraft(
        item_id=f"approval_{n}", kind="tool", name="transfer",
        summary=f"recipient=Ada, amount={n}", args={"recipient": "Ada", "amount": n},
        requester_email=requester, requester_name="", expires_at=None,
        filing=Filing(
            rule=None, approvers=(), not_requester=False, quorum=1,
            waiting_for=f"Waiting for {requester}", routes=(route,),
        ),
    )  # fmt: skip


def fill(world: World) -> None:
    """Many people's pending decisions, each routed to the person who asked, one each also to
    finance, stored by `DeskStore` as the desk stores a pause; and a longer history of
    decided ones, written in bulk as `DeskStore.decide` leaves them (no routes)."""
    start = datetime.now(UTC) - timedelta(days=30)
    history: list[dict[str, Any]] = []
    for person in range(PEOPLE):
        email = f"person{person}@example.com"
        thread = f"thread-{person}"
        now = start + timedelta(minutes=person)
        world.store.create(thread, owner_email=email, owner_name="", title="t", state="{}",
                           now=now)  # fmt: skip
        drafts = [
            draft(n, email, "role:finance" if n == 0 else f"user:{email}") for n in range(PENDING)
        ]
        opened = [d.item_id for d in drafts]
        world.store.save(thread, state="{}", status="waiting", waiting_for="", error=None,
                         now=now, drafts=drafts, open_items=opened)  # fmt: skip
        history += [
            {"id": decision_id_of(thread, f"old_{n}"), "thread_id": thread, "item_id": f"old_{n}",
             "kind": "tool", "name": "transfer", "summary": "", "args": "{}",
             "requester_email": email, "requester_name": "", "rule": None, "approvers": "[]",
             "not_requester": False, "quorum": 1, "waiting_for": "", "status": "decided",
             "outcome": "approved", "decided_by": email, "decided_by_name": "",
             "answer": "{}", "applied": True, "created_at": start - timedelta(minutes=n),
             "expires_at": None, "decided_at": now}
            for n in range(DECIDED)
        ]  # fmt: skip
    with world.engine.begin() as connection:
        connection.execute(insert(decisions), history)


def plans(world: World, routes: list[str], viewer: str) -> tuple[Any, list[tuple[str, str]]]:
    """What `inbox` answers, and the database's plan for each statement it sent, with what
    the statement is: `page` (it reads the decisions' arguments) or `other`."""
    sent: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "decision_routes" in statement:
            sent.append((statement, parameters))

    event.listen(world.engine, "before_cursor_execute", capture)
    try:
        found = world.store.inbox(routes, viewer_email=viewer)
    finally:
        event.remove(world.engine, "before_cursor_execute", capture)
    # Where the routes were read short, the page (at most a few rounds of both), the count.
    assert len(sent) >= 3, sent
    postgres = world.engine.dialect.name == "postgresql"
    explained: list[tuple[str, str]] = []
    with world.engine.connect() as connection:
        if postgres:
            connection.execute(text("ANALYZE"))  # the statistics a running database keeps
        for statement, parameters in sent:
            prefix = "EXPLAIN " if postgres else "EXPLAIN QUERY PLAN "
            rows = connection.exec_driver_sql(prefix + statement, parameters).all()
            kind = "page" if ".args" in statement else "other"
            explained.append((kind, "\n".join(str(row[-1]) for row in rows)))
    return found, explained


async def test_the_inbox_is_an_index_lookup_by_route(world: World) -> None:
    fill(world)
    (items, total), explained = plans(world, ["user:ada@example.com", "*", "role:finance"],
                                      "ada@example.com")  # fmt: skip
    assert total == PEOPLE and len(items) == min(PEOPLE, 50)
    assert {item.summary for item in items} == {"recipient=Ada, amount=0"}
    assert items[0].thread_id == f"thread-{PEOPLE - 1}"  # newest first

    (mine, count), explained_mine = plans(
        world, ["user:person7@example.com"], "person7@example.com"
    )
    explained += explained_mine
    assert count == PENDING - 1
    # All asked at once: in the order asked, as many as a page holds.
    asked = [f"approval_{n}" for n in range(1, PENDING)]  # approval_0 is finance's
    assert [item.item_id for item in mine] == asked[:50]

    assert "page" in [kind for kind, _ in explained_mine]
    for kind, plan in explained:
        assert "ix_decision_routes_route_created_at" in plan, plan
        if world.engine.dialect.name == "postgresql":
            assert "Seq Scan on decision_routes" not in plan, plan
            if kind == "page":
                assert "Seq Scan on decisions" not in plan, plan
        else:
            assert "SCAN decision_routes" not in plan, plan
            if kind == "page":
                assert "SCAN decisions" not in plan, plan

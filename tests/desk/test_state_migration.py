"""The desk's stored conversations: the migration that moves a conversation's state into a
table of its own keeps every conversation, its state and its decisions (a copy of the table
would have cascaded to them); a lease leaves the state alone; a decision opened again is
told again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alembic import command
from alembic.config import Config
from sqlalchemy import select, text

from chat_app.desk import DeskStore
from chat_app.desk.store import DecisionDraft, Filing
from chat_app.trust import store
from chat_app.trust.store import create_database_engine, migrate, write_transaction
from chat_app.trust.tables import decisions

BEFORE = "deliveries_reason"
STATE = '{"threadId": "t1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}'


def _migrate_to(url: str, revision: str) -> None:
    engine = create_database_engine(url)
    config = Config()
    config.set_main_option("script_location", str(store.MIGRATIONS))
    try:
        with write_transaction(engine) as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        engine.dispose()


def test_a_stored_conversation_keeps_its_state_and_decisions(database_url: str) -> None:
    _migrate_to(database_url, BEFORE)
    engine = create_database_engine(database_url)
    now = datetime(2026, 12, 1, 12, 0)
    try:
        with write_transaction(engine) as connection:
            connection.execute(
                text(
                    "INSERT INTO conversations (thread_id, owner_email, owner_name, title, "
                    "status, waiting_for, error, state, version, runner, runner_until, "
                    "created_at, updated_at) VALUES ('t1', 'rita@example.com', 'Rita', 'hi', "
                    "'waiting', 'finance', NULL, :state, 3, NULL, NULL, :now, :now)"
                ),
                {"state": STATE, "now": now},
            )
            connection.execute(
                text(
                    "INSERT INTO decisions (id, thread_id, item_id, kind, name, summary, args, "
                    "requester_email, requester_name, approvers, not_requester, quorum, "
                    "waiting_for, status, applied, created_at) VALUES ('d1', 't1', 'i1', "
                    "'tool', 'transfer', 'amount=5000', '{}', 'rita@example.com', 'Rita', "
                    "'[]', true, 1, 'finance', 'pending', false, :now)"
                ),
                {"now": now},
            )
        migrate(engine)
        row = DeskStore(engine).load("t1")
        assert row is not None
        assert (row.state, row.status, row.version) == (STATE, "waiting", 3)
        with engine.connect() as connection:
            assert connection.execute(select(decisions.c.id)).scalars().all() == ["d1"]
    finally:
        engine.dispose()


def test_a_lease_leaves_the_state_as_it_was(database_url: str) -> None:
    migrate(database_url)
    engine = create_database_engine(database_url)
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    desk = DeskStore(engine)
    try:
        desk.create("t1", owner_email="rita@example.com", owner_name="Rita", title="hi",
                    state=STATE, now=now)  # fmt: skip
        assert desk.claim("t1", "worker-1", now=now, until=now)
        desk.release("t1", "worker-1")
        row = desk.load("t1")
        assert row is not None and row.state == STATE and row.runner is None
    finally:
        engine.dispose()


def test_a_decision_opened_again_is_told_again(database_url: str) -> None:
    """An answer given in the chat closes the item; refused, the item opens again. Its first
    notice may have been skipped while it was closed (the deliverer skips settled items), so
    it is due again, not left as told."""
    migrate(database_url)
    engine = create_database_engine(database_url)
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    desk = DeskStore(engine)
    draft = DecisionDraft(
        item_id="i1", kind="tool", name="transfer", summary="amount=5000", args={},
        requester_email="rita@example.com", requester_name="Rita", expires_at=None,
        filing=Filing(
            rule="large-transfers", approvers=("role:finance",), not_requester=True, quorum=1,
            waiting_for="finance", routes=("role:finance",), notify_after=timedelta(0),
        ),
    )  # fmt: skip

    def save(at: datetime, *, open_item: bool) -> None:
        desk.save("t1", state=STATE, status="waiting", waiting_for="finance", error=None,
                  now=at, drafts=[draft], open_items=["i1"] if open_item else [])  # fmt: skip

    try:
        desk.create("t1", owner_email="rita@example.com", owner_name="Rita", title="hi",
                    state=STATE, now=now)  # fmt: skip
        save(now, open_item=True)
        (due,) = desk.due("notify", now)
        assert desk.fire("notify", due.decision.id, now)  # told once
        assert desk.due("notify", now + timedelta(minutes=1)) == []
        later = now + timedelta(minutes=5)
        desk.save("t1", state=STATE, status="running", waiting_for="", error=None, now=later,
                  open_items=[], closed_by=("rita@example.com", "Rita"))  # fmt: skip
        save(later, open_item=True)  # the chat's answer was refused: open again
        (again,) = desk.due("notify", later)
        assert again.decision.id == due.decision.id and again.decision.notified_at is None
        # Told as its inbox lists it: its stored routes, with those an escalation added.
        assert again.routes == ("role:finance",)
        assert desk.fire("escalate", due.decision.id, later, routes=["role:admin", "role:finance"])
        (told,) = desk.due("notify", later)
        assert told.routes == ("role:admin", "role:finance")
    finally:
        engine.dispose()

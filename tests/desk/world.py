"""The desk under test: a `Desk` over a `DeskStore` on a real database (SQLite or PostgreSQL),
running the demo agent in this process with the demo policy, and what the tests read back:
the agent's audit trail, a conversation's messages, a person's one inbox item.

    async def test_x(world: World) -> None:
        thread = await world.start(RITA, "transfer 5000 to Ada")   # run to its pause
        item = await world.only_item(ADA)
        await world.desk.decide(item.decision_id, ADA, Answer("approve"))
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ag_ui.core import RunAgentInput
from sqlalchemy import Engine

from chat_app.agent import Agent, event_to_wire
from chat_app.client import ClientState, ClientTool, Connection, InProcessConnection
from chat_app.desk import ConnectionFor, ConversationView, Desk, DeskStore, Fanout, InboxItem, RunAs
from chat_app.trust import DEMO_PEOPLE, AuditEntry, AuditRecord, Identity, Policy

RITA, ADA, SAM, OLIVE, THEO = DEMO_PEOPLE

#: Wraps one run of the agent (its input, the events it streams), for a test that stalls it.
RunWrapper = Callable[[RunAgentInput, AsyncIterator[Any]], AsyncIterator[Any]]


@dataclass(eq=False)
class World:
    """One desk (and any more the test makes: other workers) over one database and agent."""

    engine: Engine
    store: DeskStore
    agent: Agent
    policy: Policy
    tools: tuple[ClientTool, ...]
    desk: Desk = field(init=False)
    desks: list[Desk] = field(default_factory=list)
    #: Every run the agent was asked for, in order (a continuation has `resume`).
    runs: list[RunAgentInput] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.desk = self.new_desk(worker="worker-1")

    def connection_for(self, wrap: RunWrapper | None = None) -> ConnectionFor:
        """The desk's way to the agent: a run in this process as the verified person, with
        the earlier approvers as cosigners (as the app wires it)."""

        def connect(run_as: RunAs) -> Connection:
            def run(given: RunAgentInput) -> AsyncIterator[Any]:
                self.runs.append(given)
                events = self.agent.run(
                    given,
                    identity=run_as.identity,
                    cosigners=run_as.cosigners,
                    deciders=run_as.deciders,
                )
                return events if wrap is None else wrap(given, events)

            return InProcessConnection(run, encode=event_to_wire)

        return connect

    def new_desk(
        self,
        *,
        worker: str,
        clock: Callable[[], datetime] | None = None,
        lease_seconds: float | None = None,
        wrap: RunWrapper | None = None,
        fanout: Fanout | None = None,
        store: DeskStore | None = None,
        audit: Callable[[Sequence[AuditEntry]], Awaitable[None]] | None = None,
    ) -> Desk:
        """Another desk on the same database and agent: another worker of the app (`store`: a
        `DeskStore` of the same engine that the test slows down; `audit`: where its trail
        records go, the agent's ledger by default)."""
        extra: dict[str, Any] = {}
        if clock is not None:
            extra["clock"] = clock
        if lease_seconds is not None:
            extra["lease_seconds"] = lease_seconds
        desk = Desk(
            store or self.store,
            connection_for=self.connection_for(wrap),
            tools=lambda: self.tools,
            policy=self.policy,
            fanout=fanout,
            worker=worker,
            audit=audit or (self.agent.ledger.append_async if self.agent.ledger else None),
            **extra,
        )
        self.desks.append(desk)
        return desk

    def use_policy(self, text: str) -> Policy:
        """The app came back with the policy `text`: `desk`'s and the engine's (a desk the
        test made for another worker keeps its own)."""
        policy = Policy.parse(text, "policy.toml")
        self.desk.policy = self.agent.policy = policy
        return policy

    async def start(self, owner: Identity, text: str, desk: Desk | None = None) -> str:
        """`owner` starts a conversation; returns its thread id once its run has ended."""
        desk = desk or self.desk
        thread_id = await desk.start(owner, text)
        await desk.wait_idle()
        return thread_id

    async def only_item(self, viewer: Identity, **filters: Any) -> InboxItem:
        items, total = await self.desk.inbox(viewer, **filters)
        assert total == 1 and len(items) == 1, [item.to_json() for item in items]
        return items[0]

    @property
    def continuations(self) -> list[RunAgentInput]:
        return [run for run in self.runs if run.resume]

    def records(self, kind: str) -> list[AuditRecord]:
        assert self.agent.ledger is not None
        return [record for record in self.agent.ledger.records() if record.kind == kind]

    def in_the_ledger(self, thread: str, item_id: str, by: Identity) -> None:
        """`by`'s approval of `item_id` committed in the agent's ledger as the engine commits
        one, and nothing after it: a send whose end was lost (a ledger that answered too
        late, a worker that died)."""
        ledger = self.agent.ledger
        assert ledger is not None
        lost = AuditEntry(kind="decision", thread_id=thread, run_id="lost", actor=by.email,
                          data={"interruptId": item_id, "decision": "approved"})  # fmt: skip
        assert ledger.commit_batch(thread_id=thread, interrupt_ids=[item_id], entries=[lost]) == []

    def executions(self, tool: str | None = None) -> list[dict[str, Any]]:
        """What the agent ran (its trail's execution records), oldest first."""
        found = [record.data for record in self.records("execution")]
        return [data for data in found if tool is None or data["toolName"] == tool]


def state_of(view: ConversationView) -> ClientState:
    return ClientState.from_json(view.state)


def texts(view: ConversationView) -> list[str]:
    """A conversation's messages as its page shows their text."""
    return [message.text for message in state_of(view).messages]


__all__ = ["ADA", "OLIVE", "RITA", "SAM", "RunWrapper", "World", "state_of", "texts"]

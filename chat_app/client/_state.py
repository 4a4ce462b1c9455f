"""The client as data: `ClientState`, which round-trips through JSON.

Owns `ClientState`. A UI keeps it (Reflex state, Redis), and `ChatClient.restore` rebuilds
a client from it after a reload: messages, the interrupt batch, staged answers, drafts,
errors and a pending or retryable submission.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal, TypeAlias

from pydantic import TypeAdapter

from chat_app.interrupts import BATCH_ERROR_CODES, ITEM_ERROR_CODES, BatchInterruptError

from ._items import AnsweredQuestion, InterruptItem, ManagerSnapshot
from ._messages import ChatMessage

__all__ = ["INTERRUPTED", "ClientState", "ClientStatus"]

ClientStatus: TypeAlias = Literal["ready", "streaming", "error"]
#: What a run says that stopped with the process running it (`ChatClient.restore`'s `died`).
INTERRUPTED = "The app stopped while this conversation was running. Retry runs it again."


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientState:
    """Everything a UI shows, and everything needed to resume after a reload."""

    thread_id: str
    messages: tuple[ChatMessage, ...] = ()
    #: Public interrupt items (no hidden client-tool executions, none being submitted).
    interrupts: tuple[InterruptItem, ...] = ()
    #: Root (batch) errors: transport, protocol, unsupported bulk operation, …
    interrupt_errors: tuple[BatchInterruptError, ...] = ()
    #: A continuation is in flight.
    resuming: bool = False
    #: `retry_interrupts()` would re-send the last submission.
    can_retry: bool = False
    #: The last message's run failed (not a continuation's): `resend()` runs it again.
    can_resend: bool = False
    #: The last answers were applied and the reply after them failed: `go_on()` asks for it.
    can_go_on: bool = False
    #: `resolve_interrupts(True)` / `resolve_interrupts(False)` apply: every item still to
    #: answer is a tool approval whose approve (reject) branch takes no payload.
    can_approve_all: bool = False
    can_reject_all: bool = False
    status: ClientStatus = "ready"
    #: The last run or transport failure: its message, and `transport` or the `RUN_ERROR`'s
    #: own code (`None` when it has none).
    error: str | None = None
    error_code: str | None = None
    #: The latest `STATE_SNAPSHOT` from the agent, with the `STATE_DELTA`s since applied.
    agent_state: object = None
    manager: ManagerSnapshot = ManagerSnapshot()
    #: The questions answered so far (or cancelled), oldest first.
    answered: tuple[AnsweredQuestion, ...] = ()

    @property
    def refused(self) -> bool:
        """The run's error is the server refusing the continuation: its reasons are on the
        interrupt items and batch errors, not a failure of the run itself."""
        return self.error_code in REFUSAL_CODES

    @property
    def answered_before(self) -> bool:
        """The server refused the last answers as a replay (`conflict` on every item still to
        answer): its ledger holds answers to them from an earlier send whose end this client
        never heard (a reply cut off, a ledger that answered too late). Nothing sends them
        again (`docs/protocol.md` §4.8): the batch is over, and a new message goes on."""
        items = [item for item in self.interrupts if item.answerable]
        return (
            self.refused
            and bool(items)
            and all(item.error is not None and item.error.code == "conflict" for item in items)
        )

    @property
    def results_since_asked(self) -> bool:
        """A tool's result came back after the person's last message."""
        asked = max((i for i, m in enumerate(self.messages) if m.role == "user"), default=-1)
        return any(
            call.has_output for message in self.messages[asked + 1 :] for call in message.tool_calls
        )

    def to_json(self) -> str:
        return _adapter().dump_json(self).decode("utf-8")

    @classmethod
    def from_json(cls, text: str | bytes) -> ClientState:
        return _adapter().validate_json(text)


#: A server refuses with an interrupt error code; `transport` is the client's own (a failed
#: send), never a refusal: its message is the run's error.
REFUSAL_CODES = (ITEM_ERROR_CODES | BATCH_ERROR_CODES) - {"transport"}


@cache
def _adapter() -> TypeAdapter[ClientState]:
    return TypeAdapter(ClientState)

"""The approval desk: stored conversations, the inbox, and continuations the server runs.

`Desk` (in `desk.py`) is the service; `Judge` (`judge.py`) its reading of the policy, who
may see and decide what; `DeskStore` its rows; `Fanout` its change notices across workers;
`records.py` what it hands out. See `docs/protocol.md` §10.
"""

from .desk import (
    LEASE_SECONDS,
    RUN_SECONDS,
    ConnectionFor,
    Desk,
    RunAs,
    ToolSource,
    inbox_topic,
    owner_topic,
    thread_topic,
)
from .fanout import Fanout
from .judge import ADMIN_ROLE
from .records import (
    Answer,
    ConversationStatus,
    ConversationSummary,
    ConversationView,
    DecideResult,
    DeskError,
    DeskErrorCode,
    InboxItem,
    InboxQuery,
    PastDecision,
    SettledRequest,
    Vote,
)
from .stats import DeskStats, Histogram
from .store import INBOX_COUNT_CAP, DecisionDraft, DeskStore, Filing, decision_id_of
from .timers import AuditSink, PeopleFor, Timers

__all__ = [
    "ADMIN_ROLE",
    "Answer",
    "AuditSink",
    "ConnectionFor",
    "ConversationStatus",
    "ConversationSummary",
    "ConversationView",
    "DecideResult",
    "DecisionDraft",
    "Desk",
    "DeskError",
    "DeskErrorCode",
    "DeskStats",
    "DeskStore",
    "Fanout",
    "Filing",
    "Histogram",
    "INBOX_COUNT_CAP",
    "InboxItem",
    "InboxQuery",
    "LEASE_SECONDS",
    "PastDecision",
    "PeopleFor",
    "RUN_SECONDS",
    "RunAs",
    "SettledRequest",
    "Timers",
    "ToolSource",
    "Vote",
    "decision_id_of",
    "inbox_topic",
    "owner_topic",
    "thread_topic",
]

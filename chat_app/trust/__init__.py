"""Trust: what makes a decision safe to act on and to show later.

Sealing (what this server proposed, for whom, and until when), the exactly-once ledger (an
answer is committed once, before anything runs), the hash-chained audit trail (who decided
what), who someone is (`identity`; verified by `authn` from `sessions`, a proxy's headers or
`accounts`' API tokens, kept in the database of `store`), who may decide what (`policy`),
and whom an inbox route names (`people`). The names below are the light ones; `authn`,
`sessions`, `accounts`, `people` and `store` (SQLAlchemy, argon2) are imported as modules by
those that need them. Imports the wire layer
(`chat_app.interrupts`) only; the engine calls into it.
"""

from .audit_records import (
    approval_record,
    decision_record,
    held_record,
    pause_record,
    policy_decision_record,
    refusal_record,
    verified_by,
)
from .identity import ANONYMOUS, DEMO_PEOPLE, AuthMethod, Directory, Identity, SessionEnd
from .ledger import (
    GENESIS,
    AuditEntry,
    AuditRecord,
    Ledger,
    LedgerUnavailable,
    LedgerUnusable,
    SQLiteLedger,
    audit_report,
    open_ledger,
    record_hash,
    verify_chain,
)
from .policy import (
    WITHDRAWAL_ONLY,
    Policy,
    PolicyError,
    Rule,
    asking_a_person,
    cancel_refusal,
    describe_duration,
    editable_shown,
    edited_refusal,
    escalation_note,
    expiry_words,
    parse_duration,
    rule_lifetime,
)
from .redis_ledger import RedisLedger
from .seal import DEFAULT_TTL_SECONDS, SealCheck, Sealer, iso_from_epoch, load_secret

__all__ = [
    "ANONYMOUS",
    "AuditEntry",
    "AuditRecord",
    "AuthMethod",
    "DEFAULT_TTL_SECONDS",
    "DEMO_PEOPLE",
    "Directory",
    "GENESIS",
    "Identity",
    "Ledger",
    "LedgerUnavailable",
    "LedgerUnusable",
    "Policy",
    "PolicyError",
    "RedisLedger",
    "Rule",
    "SQLiteLedger",
    "SealCheck",
    "Sealer",
    "SessionEnd",
    "WITHDRAWAL_ONLY",
    "approval_record",
    "asking_a_person",
    "audit_report",
    "cancel_refusal",
    "decision_record",
    "describe_duration",
    "editable_shown",
    "edited_refusal",
    "escalation_note",
    "expiry_words",
    "held_record",
    "iso_from_epoch",
    "load_secret",
    "open_ledger",
    "parse_duration",
    "pause_record",
    "policy_decision_record",
    "record_hash",
    "refusal_record",
    "rule_lifetime",
    "verified_by",
    "verify_chain",
]

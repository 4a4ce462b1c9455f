"""Every package's public names: a sorted `__all__`, pinned here so a change is deliberate.

`test_every_package_lists_exactly_its_public_names` reads each `chat_app/**/__init__.py` with
`ast` (no Reflex needed): what an `__init__` defines without a leading underscore, and what it
imports only to re-export (a name it also uses itself is a helper), must be in `__all__`, and
`__all__` must be `sorted()` and name only what the `__init__` binds. The pins below import the
packages and compare their `__all__` whole: adding or removing a public name edits this file.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

INTERRUPTS = [
    "ABSENT",
    "APPROVAL_ID_PREFIX",
    "APPROVAL_REASON",
    "APPROVED_BOOLEAN_REQUIRED",
    "ApprovalSchema",
    "BATCH_ERROR_CODES",
    "BatchInterruptError",
    "BatchInterruptErrorCode",
    "BoundaryPhase",
    "CANCELLED_RESULT",
    "CLIENT_TOOL_ID_PREFIX",
    "CLIENT_TOOL_REASON",
    "CanonicalResolutions",
    "ClientToolExecutionBinding",
    "CompiledSchema",
    "ContinuationRead",
    "DEFAULT_DENIED_RESULT",
    "Decision",
    "DecisionKind",
    "DecisionOutcome",
    "DecisionProblem",
    "DecisionTarget",
    "GenericBinding",
    "GenericInterruptContinuation",
    "INTERRUPT_BINDING_KIND",
    "INTERRUPT_BINDING_METADATA_KEY",
    "INTERRUPT_BINDING_VERSION",
    "INTERRUPT_BOUNDARY_PHASES",
    "INTERRUPT_CONTINUATION_METADATA_KEY",
    "INTERRUPT_CONTINUATION_VERSION",
    "INTERRUPT_PAYLOAD_METADATA_KEY",
    "INTERRUPT_TOOL_RESUMES",
    "ITEM_ERROR_CODES",
    "InterruptBinding",
    "InterruptError",
    "InterruptKind",
    "InterruptResumeValidationError",
    "ItemInterruptError",
    "ItemInterruptErrorCode",
    "JSONSchema",
    "JSONValue",
    "LEGACY_APPROVAL_REASON",
    "LEGACY_CLIENT_TOOL_REASON",
    "MAX_SAFE_INTEGER",
    "POLICY_DECISION_EVENT",
    "POLICY_METADATA_KEY",
    "RUN_ID_HEADER",
    "SSEDecodeError",
    "SSEDecoder",
    "SSE_HEADERS",
    "SchemaProblem",
    "Side",
    "TOOL_MESSAGE_ID_PREFIX",
    "ToolApprovalBinding",
    "ToolResume",
    "UnusableSchemaError",
    "canonical_interrupt_json",
    "canonicalize_interrupt_resolutions",
    "check_decision",
    "client_tool_response_schema",
    "collation_key",
    "compile_schema",
    "definition_schema_identity",
    "digest_interrupt_json",
    "edited_args_of",
    "encode_sse_event",
    "expired_result",
    "generic_continuation_from_descriptor",
    "hash_schema_input",
    "interrupt_error_from_wire",
    "is_expired_result",
    "is_raw_json_schema",
    "js_json_dumps",
    "normalize_approval_schema",
    "parse_js_date",
    "raw_interrupt_binding",
    "read_decision",
    "read_generic_continuation",
    "read_interrupt_binding",
    "read_unopened_interrupt_binding",
    "schema_is_usable",
    "schema_problem",
    "schema_problems",
    "tanstack_metadata",
    "tool_call_id_of",
    "tool_result_text",
    "with_interrupt_binding",
    "without_interrupt_binding",
    "wrap_generic_continuation",
]

TRUST = [
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

AGENT = [
    "Agent",
    "GenericResolution",
    "InterruptDefinition",
    "InterruptRequest",
    "Middleware",
    "Model",
    "ModelEvent",
    "ModelRequest",
    "Resolutions",
    "RunContext",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedTurn",
    "TextDelta",
    "Tool",
    "ToolCallDelta",
    "combine_tool_resumes",
    "define_interrupt",
    "event_to_wire",
    "last_user_text",
    "tool",
]

AGENT_MODELS = [
    "MODEL_ENV",
    "Model",
    "ModelError",
    "ModelErrorCode",
    "ModelEvent",
    "ModelRequest",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedTurn",
    "TextDelta",
    "ToolCallDelta",
    "last_user_text",
    "model_from_env",
    "model_from_spec",
]

CLIENT = [
    "ABSENT",
    "ANSWERABLE_STATUSES",
    "ANSWERED_BEFORE",
    "AnsweredQuestion",
    "ChangeSource",
    "ChatClient",
    "ChatMessage",
    "ClientError",
    "ClientErrorCode",
    "ClientInterruptDefinition",
    "ClientState",
    "ClientStatus",
    "ClientTool",
    "ClientToolFunction",
    "Connection",
    "DefinitionLike",
    "DeskClient",
    "DeskRequestError",
    "EventEncoder",
    "GenericInterrupt",
    "INTERRUPTED",
    "InProcessConnection",
    "InterruptHandle",
    "InterruptItem",
    "InterruptManager",
    "ItemRecord",
    "ItemStatus",
    "LEFT_BEHIND",
    "ManagerSnapshot",
    "MessagePart",
    "MockConnection",
    "RUNNING_ELSEWHERE",
    "RunError",
    "RunFunction",
    "RunStatus",
    "SSEConnection",
    "StreamProcessor",
    "StreamState",
    "Submission",
    "TextPart",
    "ToolApprovalInterrupt",
    "ToolCallPart",
    "ToolCallStatus",
    "ToolDecision",
    "ToolManifest",
    "ToolRequest",
    "ToolResultPart",
    "TransactionResolver",
    "TransportError",
    "UnboundInterrupt",
    "UsageError",
    "build_run_input",
    "fetch_manifest",
    "from_wire_messages",
    "read_manifest",
    "to_wire_messages",
]

SERVER = [
    "HEARTBEAT_SECONDS",
    "create_app",
]

DESK = [
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

OBSERVE = [
    "JsonLines",
    "Seldom",
    "close_decision",
    "configure_logging",
    "configure_tracing",
    "decision_root",
    "decision_span",
    "decision_trace_id",
    "fail_current_span",
    "flush_tracing",
    "log_level",
    "run_span",
    "server_log_config",
    "tracing_enabled",
]

NOTIFY = [
    "Deliverer",
    "Delivery",
    "DeliveryError",
    "DeliveryStatus",
    "Event",
    "MAX_BACKOFF_SECONDS",
    "Notice",
    "NoticeKind",
    "NotifyConfigError",
    "NotifySettings",
    "OUTCOME_HEADINGS",
    "Outbox",
    "OutboxError",
    "Recipient",
    "SmtpServer",
    "WebhookFormat",
    "delivery_key",
    "sign",
    "verify",
    "webhook_addressees",
]

DEMO = [
    "DEFAULT_TOKEN_DELAY_MS",
    "HELP",
    "INSTRUCTIONS",
    "POLICY_PATH",
    "build_demo_agent",
    "demo_model",
    "describe_model",
]

PINNED = {
    "chat_app.interrupts": INTERRUPTS,
    "chat_app.trust": TRUST,
    "chat_app.agent": AGENT,
    "chat_app.agent.models": AGENT_MODELS,
    "chat_app.client": CLIENT,
    "chat_app.desk": DESK,
    "chat_app.observe": OBSERVE,
    "chat_app.notify": NOTIFY,
    "chat_app.server": SERVER,
    "chat_app.demo": DEMO,
}


@pytest.mark.parametrize("package", sorted(PINNED))
def test_the_public_names_are_pinned(package: str) -> None:
    assert importlib.import_module(package).__all__ == PINNED[package]


def _bindings(body: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """The names a module body defines, and the names it imports (its top level only)."""
    defined: set[str] = set()
    imported: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {target.id for target in targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.Import):
            imported |= {(alias.asname or alias.name).partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imported |= {alias.asname or alias.name for alias in node.names}
    return defined, imported


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list), "__all__ is a list literal"
            return value
    return None


def _package_inits() -> list[Path]:
    return sorted((ROOT / "chat_app").rglob("__init__.py"))


@pytest.mark.parametrize(
    "init", _package_inits(), ids=lambda path: str(path.parent.relative_to(ROOT))
)
def test_every_package_lists_exactly_its_public_names(init: Path) -> None:
    tree = ast.parse(init.read_text(encoding="utf-8"))
    defined, imported = _bindings(tree.body)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    exported = {name for name in defined | (imported - used) if not name.startswith("_")}
    declared = _declared_all(tree)
    if declared is None:
        assert not exported, f"public names without an __all__: {sorted(exported)}"
        return
    assert declared == sorted(declared), "__all__ is not sorted()"
    assert len(declared) == len(set(declared)), "__all__ repeats a name"
    assert set(declared) <= defined | imported, "__all__ names what the package does not bind"
    missing = sorted(exported - set(declared))
    assert not missing, f"public but not in __all__: {missing}"

"""What operators watch: traces, one per decision (`tracing.py`), and JSON log lines
(`logs.py`). Both are off until configured from the environment by an entry point.

Imports nothing of ours.
"""

from .logs import JsonLines, Seldom, configure_logging, log_level, server_log_config
from .tracing import (
    close_decision,
    configure_tracing,
    decision_root,
    decision_span,
    decision_trace_id,
    fail_current_span,
    flush_tracing,
    run_span,
    tracing_enabled,
)

__all__ = [
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

"""What the Audit page's Who column says of a record."""

from __future__ import annotations

from chat_app.ui.audit_state import who

RITA = "rita@example.com"


def test_a_decision_a_policy_made_is_the_policys_not_the_requesters() -> None:
    by_policy = {
        "kind": "decision",
        "actor": RITA,
        "data": {"decidedBy": "policy", "rule": "small-refunds", "verifiedBy": "demo"},
    }
    assert who(by_policy) == f"policy (asked by {RITA})"
    by_rita = {"kind": "decision", "actor": RITA, "data": {"verifiedBy": "demo"}}
    assert who(by_rita) == RITA
    assert who({"kind": "execution", "actor": None, "data": {}}) == "—"

"""What the Audit page's Who and What columns say of a record."""

from __future__ import annotations

from chat_app.ui.audit_state import summarize, verified_words, who

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


def test_verified_by_says_how_and_the_roles_that_let_them_decide() -> None:
    def record(**data: object) -> dict[str, object]:
        return {"kind": "decision", "actor": RITA, "data": data}

    assert verified_words(record(verifiedBy="demo", roles=["finance"])) == "demo (finance)"
    assert verified_words(record(verifiedBy="password")) == "password"
    proxy = record(verifiedBy="proxy", roles=["admin", "ops"])
    assert verified_words(proxy) == "proxy (admin, ops)"
    assert verified_words(record(verifiedBy="token", tokenName="nightly", roles=["ops"])) == (
        "token nightly (ops)"
    )
    assert verified_words(record(verifiedBy="token", tokenName="x\u202ey")) == "token x[U+202E]y"
    # A rule decided: the requester's roles had no part in it.
    policy = record(verifiedBy="demo", decidedBy="policy", roles=["ops"])
    assert verified_words(policy) == "policy"
    assert verified_words({"kind": "execution", "actor": None, "data": {}}) == ""


def test_an_approval_with_changes_says_what_changed() -> None:
    edited = {
        "kind": "decision",
        "actor": "ada@example.com",
        "data": {"decision": "approved", "toolName": "transfer",
                 "shownArgs": {"recipient": "Bob", "amount": 5300},
                 "editedArgs": {"recipient": "Bob", "amount": 4800}},
    }  # fmt: skip
    assert summarize(edited) == "Approved transfer with changes (amount: 5300 → 4800)"
    # A record of an earlier release, without what was shown, says only that it was edited.
    del edited["data"]["shownArgs"]  # type: ignore[attr-defined]
    assert summarize(edited) == "Approved transfer with edited arguments"


def test_an_approval_short_of_its_quorum_says_how_far_it_got() -> None:
    approval = {
        "kind": "approval",
        "actor": "sam@example.com",
        "data": {"interruptId": "approval_c1", "toolName": "rotate_keys", "rule": "key-rotation",
                 "progress": "1 of 2: Sam approved", "verifiedBy": "password"},
    }  # fmt: skip
    assert summarize(approval) == (
        "Approved rotate_keys towards rule key-rotation: 1 of 2: Sam approved"
    )
    assert who(approval) == "sam@example.com"


def test_answers_sent_again_name_whose_they_are_and_who_sent_them() -> None:
    resent = {
        "kind": "resent",
        "actor": RITA,
        "data": {"answers": [
            {"interruptId": "approval_c1", "name": "transfer", "outcome": "approved",
             "decidedBy": "ada@example.com"},
            {"interruptId": "approval_c2", "name": "refund", "outcome": "expired",
             "decidedBy": None},
        ], "verifiedBy": "demo"},
    }  # fmt: skip
    assert summarize(resent) == (
        "Sent again: transfer approved by ada@example.com; refund expired"
    )
    assert who(resent) == RITA

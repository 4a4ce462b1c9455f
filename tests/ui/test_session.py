"""Who a tab belongs to, and who decides each item: read on the server from the socket's
cookies and the policy, never from anything the page sends."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chat_app.client import ClientState, ToolApprovalInterrupt
from chat_app.demo import POLICY_PATH
from chat_app.interrupts import POLICY_METADATA_KEY
from chat_app.trust import ANONYMOUS, DEMO_PEOPLE, Identity, Policy, Sealer
from chat_app.trust.accounts import Accounts
from chat_app.trust.authn import AuthConfig, Authenticator, AuthFailure
from chat_app.trust.sessions import SESSION_COOKIE, SessionSigner
from chat_app.trust.store import open_database
from chat_app.ui import session
from tests.trust.policies import deciding_alone

RITA, ADA, SAM, OLIVE = DEMO_PEOPLE[:4]
SIGNER = SessionSigner(b"ui-session-test-secret-ui-session", ttl_seconds=3600)


def configure(mode: Any, policy: Policy | None = None) -> None:
    authenticator = Authenticator(AuthConfig(mode=mode), signer=SIGNER, directory=None)
    session.configure(lambda _: None, lambda: {"tools": []}, authenticator=authenticator,  # type: ignore[arg-type,return-value]
                      policy=policy)  # fmt: skip


def item(shown: dict[str, Any] | None, amount: int = 5000) -> ToolApprovalInterrupt:
    return ToolApprovalInterrupt(
        id="approval_c1", reason="tool_call", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="transfer", tool_call_id="c1",
        original_args={"recipient": "Ada", "amount": amount},
        metadata={POLICY_METADATA_KEY: shown} if shown is not None else None,
    )  # fmt: skip


@pytest.fixture(autouse=True)
def _reset() -> Any:
    yield
    session.configure(lambda _: None, lambda: {"tools": []})  # type: ignore[arg-type,return-value]


def test_a_demo_tab_is_rita_until_its_cookie_names_someone_else() -> None:
    configure("demo", Policy.load(POLICY_PATH))
    assert session.identify({}, "127.0.0.1") == RITA.with_roles(frozenset())
    cookie = f"{SESSION_COOKIE}={SIGNER.issue(ADA)}"
    found = session.identify({"cookie": cookie}, "127.0.0.1")
    assert isinstance(found, Identity) and found.email == ADA.email
    assert "finance" in found.roles


def test_a_proxy_header_from_an_untrusted_address_names_nobody() -> None:
    configure("proxy")
    found = session.identify({"X-Forwarded-Email": "mallory@corp"}, "203.0.113.9")
    assert isinstance(found, AuthFailure)
    trusted = session.identify({"X-Forwarded-Email": "ada@corp"}, "127.0.0.1")
    assert isinstance(trusted, Identity) and trusted.email == "ada@corp"


def test_without_sign_in_everyone_is_anonymous(tmp_path: Path) -> None:
    session.configure(lambda _: None, lambda: {"tools": []})  # type: ignore[arg-type,return-value]
    assert session.identify({"X-Forwarded-Email": "ceo@corp"}, "127.0.0.1") == ANONYMOUS


def test_the_card_says_who_decides_when_it_is_not_the_viewer() -> None:
    configure("demo", Policy.load(POLICY_PATH))
    shown = {"rule": "large-transfers", "requester": RITA.email,
             "approvers": ["role:finance"], "notRequester": True, "quorum": 1}  # fmt: skip
    rita = session.identify({}, "127.0.0.1")
    assert isinstance(rita, Identity)
    assert session.who_decides(rita)(item(shown)) == (
        "Waiting for finance — you asked for this, so someone else approves it"
    )
    ada = ADA.with_roles(frozenset({"finance"}))
    assert session.who_decides(ada)(item(shown)) == ""
    assert session.who_decides(SAM)(item(shown)) == "Waiting for finance"


def test_without_a_rule_the_person_who_asked_decides() -> None:
    configure("demo", Policy.load(POLICY_PATH))
    shown = {"rule": None, "requester": RITA.email}
    assert session.who_decides(RITA)(item(shown, amount=500)) == ""
    assert session.who_decides(ADA)(item(shown, amount=500)) == (
        "Waiting for rita@example.com, who decides this"
    )
    named = session.who_decides(ADA, names={RITA.email: "Rita"})
    assert named(item(shown, amount=500)) == "Waiting for Rita, who decides this"
    assert session.who_decides(ADA)(item(None)) == ""


def test_the_card_names_the_rule_the_engine_will_judge_by() -> None:
    """The pause was filed under `large-transfers`; the app came back with it renamed (the
    metadata's name is gone) and with a rule for transfers of 100 or more: the card follows
    the rules as the engine will apply them, not the name the pause carries."""
    text = POLICY_PATH.read_text().replace('name = "large-transfers"', 'name = "big-transfers"')
    configure("demo", Policy.parse(text, "policy.toml"))
    shown = {"rule": "large-transfers", "requester": RITA.email}
    assert session.who_decides(RITA)(item(shown)).startswith("Waiting for finance")
    assert session.who_decides(ADA.with_roles(frozenset({"finance"})))(item(shown)) == ""
    lowered = text.replace("exclusiveMinimum = 1000", "minimum = 100")
    configure("demo", Policy.parse(lowered, "policy.toml"))
    unruled = {"rule": None, "requester": RITA.email}
    assert session.who_decides(RITA)(item(unruled, amount=500)).startswith("Waiting for finance")


def test_a_transfer_the_policy_now_approves_alone_is_left_to_whoever_asked() -> None:
    """It paused for finance; the policy has since come to approve large transfers by itself.
    Nobody is asked under such a rule, so the card offers the answer to Rita, who asked, as
    the engine's gate and the desk leave it to her, and tells Ada whose it is."""
    configure("demo", Policy.parse(deciding_alone("large-transfers", "approve"), "p.toml"))
    shown = {"rule": "large-transfers", "requester": RITA.email,
             "approvers": ["role:finance"], "notRequester": True, "quorum": 1}  # fmt: skip
    assert session.who_decides(RITA)(item(shown)) == ""
    assert session.who_decides(ADA.with_roles(frozenset({"finance"})))(item(shown)) == (
        "Waiting for rita@example.com, who decides this"
    )


def test_a_remote_agents_pause_is_judged_by_the_rule_it_names() -> None:
    """With the agent elsewhere (`CHAT_APP_AGENT_URL`), its gate reads its own rules: the
    card goes by the rule the pause names, not by matching this app's policy."""
    authenticator = Authenticator(AuthConfig(mode="demo"), signer=SIGNER, directory=None)
    session.configure(lambda _: None, lambda: {"tools": []}, authenticator=authenticator,  # type: ignore[arg-type,return-value]
                      policy=Policy.load(POLICY_PATH), agent_reads_policy=False)  # fmt: skip
    unruled = {"rule": None, "requester": RITA.email}
    assert session.who_decides(RITA)(item(unruled)) == ""
    named = {"rule": "large-transfers", "requester": RITA.email}
    assert session.who_decides(RITA)(item(named, amount=500)).startswith("Waiting for finance")


def test_the_edit_form_follows_the_rule_the_engine_will_judge_by() -> None:
    """The pause said "amount"; the policy in force now lets the recipient be changed
    instead, and the page offers what the server will take. A remote agent's pause is taken
    at its word (its rules are its own)."""
    paused = item({"rule": "large-transfers", "requester": RITA.email, "editable": ["amount"]})
    configure("demo", Policy.load(POLICY_PATH))
    assert session.edit_limits(paused) == ("large-transfers", ("amount",))
    changed = POLICY_PATH.read_text().replace('editable = ["amount"]', 'editable = ["recipient"]')
    configure("demo", Policy.parse(changed, "policy.toml"))
    assert session.edit_limits(paused) == ("large-transfers", ("recipient",))
    without = re.sub(r"(?m)^editable = .*\n", "", POLICY_PATH.read_text())
    configure("demo", Policy.parse(without, "policy.toml"))
    assert session.edit_limits(paused) is None
    authenticator = Authenticator(AuthConfig(mode="demo"), signer=SIGNER, directory=None)
    session.configure(lambda _: None, lambda: {"tools": []}, authenticator=authenticator,  # type: ignore[arg-type,return-value]
                      policy=Policy.parse(without, "p.toml"), agent_reads_policy=False)  # fmt: skip
    assert session.edit_limits(paused) == ("large-transfers", ("amount",))


def test_views_count_only_what_the_viewer_may_decide() -> None:
    from chat_app.ui.views import build_views

    configure("demo", Policy.load(POLICY_PATH))
    shown = {"rule": "large-transfers", "requester": RITA.email,
             "approvers": ["role:finance"], "notRequester": True, "quorum": 1}  # fmt: skip
    answerable = ToolApprovalInterrupt(
        id="approval_c1", reason="tool_call", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="transfer", tool_call_id="c1", can_resolve=True,
        metadata={POLICY_METADATA_KEY: shown},
    )  # fmt: skip
    state = ClientState(thread_id="t", interrupts=(answerable,))
    for_rita = build_views(state, {}, who_decides=session.who_decides(RITA))
    assert for_rita.open_count == 0
    assert for_rita.loose_decisions[0].waiting.startswith("Waiting for finance")
    # The card asks only whoever may answer it.
    assert for_rita.loose_decisions[0].title == "Approval needed: transfer"
    for_ada = build_views(
        state, {}, who_decides=session.who_decides(ADA.with_roles(frozenset({"finance"})))
    )
    assert for_ada.open_count == 1 and for_ada.loose_decisions[0].waiting == ""
    assert for_ada.loose_decisions[0].title == "Approve transfer?"
    # Cancel is whoever asked's withdrawal: finance is offered Reject, not Cancel.
    assert for_ada.loose_decisions[0].can_cancel is True  # without `asked_by`: as before
    ada = ADA.with_roles(frozenset({"finance"}))
    with_asker = build_views(state, {}, who_decides=session.who_decides(ada),
                             asked_by=session.asked_by(ada))  # fmt: skip
    assert with_asker.loose_decisions[0].can_cancel is False
    assert with_asker.cancel_all_ok is False  # nor Cancel all, which would cancel it too
    # Rita's own request keeps Cancel (her withdrawal), and so does one under no policy.
    rule_less = replace(answerable, metadata={POLICY_METADATA_KEY: {**shown, "rule": None}})
    own = build_views(
        ClientState(thread_id="t", interrupts=(rule_less,)), {},
        who_decides=session.who_decides(RITA), asked_by=session.asked_by(RITA),
    )  # fmt: skip
    assert own.loose_decisions[0].can_cancel is True and own.cancel_all_ok is True
    bare = replace(answerable, metadata={})
    unknown = build_views(ClientState(thread_id="t", interrupts=(bare,)), {},
                          asked_by=session.asked_by(ada))  # fmt: skip
    assert unknown.loose_decisions[0].can_cancel is True


def test_an_item_only_its_sealed_tag_names_is_still_the_requesters() -> None:
    """After Ada moved Rita's request on, the next item names Rita only by her sealed tag."""
    sealer = Sealer(b"ui-session-sealer-secret-ui-session")
    authenticator = Authenticator(AuthConfig(mode="demo"), signer=SIGNER, directory=None)
    session.configure(lambda _: None, lambda: {"tools": []}, authenticator=authenticator,  # type: ignore[arg-type,return-value]
                      policy=Policy.load(POLICY_PATH), sealer=sealer)  # fmt: skip
    shown = {"rule": None, "requester": None, "requesterTag": sealer.requester_tag(RITA.email)}
    assert session.who_decides(RITA)(item(shown, amount=500)) == ""
    assert session.who_decides(ADA)(item(shown, amount=500)).startswith(
        "Waiting for the person who asked"
    )


def test_a_run_goes_on_as_whoever_started_it() -> None:
    """Signing in or out while a run goes on changes who the next run is for, not this one;
    nobody signed in changes nothing."""

    class Busy:
        def done(self) -> bool:
            return False

    configure("demo", Policy.load(POLICY_PATH))
    started = session.session_for("tab-identity", "", RITA)
    assert session.session_for("tab-identity", "", None).identity == RITA
    started.task = Busy()  # type: ignore[assignment]
    assert session.session_for("tab-identity", "", ADA).identity == RITA
    started.task = None
    assert session.session_for("tab-identity", "", ADA).identity == ADA
    session.forget("tab-identity")


def test_whoever_asked_may_withdraw_what_someone_else_decides() -> None:
    """A large transfer waits for finance; Rita, who asked, may withdraw it (the server allows
    a requester's cancel), Sam may not, and Ada decides it anyway."""
    from chat_app.ui.views import build_views

    configure("demo", Policy.load(POLICY_PATH))
    shown = {"rule": "large-transfers", "requester": RITA.email,
             "approvers": ["role:finance"], "notRequester": True, "quorum": 1}  # fmt: skip
    pending = ToolApprovalInterrupt(
        id="approval_c1", reason="tool_call", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="transfer", tool_call_id="c1", can_resolve=True,
        metadata={POLICY_METADATA_KEY: shown},
    )  # fmt: skip
    state = ClientState(thread_id="t", interrupts=(pending,))
    ada = ADA.with_roles(frozenset({"finance"}))
    seen = {
        person.email: build_views(
            state, {}, who_decides=session.who_decides(person),
            asked_by=session.asked_by(person),
        ).loose_decisions[0]  # fmt: skip
        for person in (RITA, SAM, ada)
    }
    assert seen[RITA.email].waiting and seen[RITA.email].can_withdraw
    assert seen[SAM.email].waiting and not seen[SAM.email].can_withdraw
    assert not seen[ada.email].waiting and not seen[ada.email].can_withdraw
    assert session.asked_by(RITA)(item(None)) is False


def test_whoever_waits_on_a_quorum_reads_how_far_it_has_got() -> None:
    configure("demo", Policy.load(POLICY_PATH))
    shown = {"rule": "key-rotation", "requester": RITA.email}
    rotation = ToolApprovalInterrupt(
        id="approval_k1", reason="tool_call", thread_id="t", interrupted_run_id="r",
        binding={}, tool_name="rotate_keys", tool_call_id="k1", original_args={"env": "prod"},
        metadata={POLICY_METADATA_KEY: shown},
    )  # fmt: skip
    waiting = (
        "Waiting for ops (2 approvals needed) — you asked for this, so someone else approves it"
    )
    none_yet = {"approval_k1": ["0 of 2"]}
    assert session.who_decides(RITA, none_yet)(rotation) == waiting
    one = {"approval_k1": ["1 of 2: Sam approved", SAM.email]}
    assert session.who_decides(RITA, one)(rotation) == f"{waiting}; 1 of 2: Sam approved"
    escalated = {"approval_k1": "escalated to admin after 2 h"}
    assert session.who_decides(RITA, one, escalated)(rotation) == (
        f"{waiting}; 1 of 2: Sam approved; escalated to admin after 2 h"
    )
    as_sam_reads_it = {"approval_k1": ["1 of 2", SAM.email]}  # `InboxItem.progress_for`
    assert session.who_decides(SAM, as_sam_reads_it)(rotation) == (
        "You approved (1 of 2); waiting for another approver"
    )


def test_an_accounts_database_that_does_not_answer_is_nobody_known_not_a_sign_out(
    tmp_path: Path,
) -> None:
    """A tab's socket carries a valid session, but the accounts' database is gone: the page
    is told that nobody could tell who is here (503, `unavailable`, as the HTTP routes say
    it), not that the person signed out, and the driver's failure does not escape."""
    database = tmp_path / "accounts.db"
    engine = open_database(f"sqlite:///{database}")
    accounts = Accounts(engine)
    accounts.add_user("ada@example.com", "correct horse battery", name="Ada")
    authenticator = Authenticator(
        AuthConfig(mode="password"), signer=SIGNER, directory=accounts
    )
    session.configure(lambda _: None, lambda: {"tools": []}, authenticator=authenticator)  # type: ignore[arg-type,return-value]
    ada = Identity(email="ada@example.com", method="password", name="Ada")
    cookie = {"cookie": f"{SESSION_COOKIE}={SIGNER.issue(ada)}"}
    found = session.identify(cookie, "127.0.0.1")
    assert isinstance(found, Identity) and found.email == ada.email

    engine.dispose()
    database.unlink()  # opened again, the file is new and empty: no accounts table
    gone = session.identify(cookie, "127.0.0.1")
    assert isinstance(gone, AuthFailure)
    assert (gone.status, gone.code) == (503, "unavailable")
    assert "not answering" in gone.message
    engine.dispose()

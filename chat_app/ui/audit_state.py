"""The Audit page's state: the ledger's records, newest first, and whether the chain holds."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import reflex as rx

from chat_app.trust import Identity, LedgerUnavailable, Policy
from chat_app.trust.identity import AUDIT_ROLES, spelled_out
from chat_app.trust.policy import all_of, any_of_approvers, either_of

from . import session as sessions
from .answered import arguments_changed
from .conversations_state import follow_page
from .guard import guarded, guarded_task
from .identity_state import IdentityState
from .views import pretty

_log = logging.getLogger("chat_app.ui")
#: The page's address.
ROUTE = "/audit"
#: What the page says while the ledger that keeps the trail does not answer.
LEDGER_SILENT = (
    "The audit trail cannot be read just now: the approval ledger that keeps it does not "
    "answer. Refresh once it is back."
)


@dataclass
class AuditRow:
    seq: int
    at: str
    kind: str
    actor: str
    #: How the actor was verified, with the roles it gave them then (`verified_words`).
    verified: str
    #: The policy rule that allowed (or made) the decision.
    rule: str
    thread: str
    summary: str
    detail: str  # pretty JSON of the record's data
    hash: str


def _verified(record: dict[str, Any]) -> str:
    data = record.get("data") or {}
    if data.get("decidedBy") == "policy":
        return "policy"
    return str(data.get("verifiedBy") or "")


def verified_words(record: dict[str, Any]) -> str:
    """The Verified by column: how the actor was verified (`demo`, `password`, `proxy`,
    `token` with its name, `none`, or `policy`) and the roles it gave them then: "token
    nightly (ops)", "proxy (finance, admin)"."""
    method = _verified(record)
    if method == "policy":  # the rule decided: whoever asked was verified, not as deciding
        return method
    data = record.get("data") or {}
    token = data.get("tokenName")
    said = f"{method} {spelled_out(str(token))}" if method == "token" and token else method
    roles = [spelled_out(str(role)) for role in data.get("roles") or []]
    return f"{said} ({', '.join(roles)})" if said and roles else said


def who(record: dict[str, Any]) -> str:
    """The Who column: the verified actor, or for a decision a policy rule made on its own,
    the policy, on behalf of whoever asked (the record's actor decided nothing)."""
    actor = str(record.get("actor") or "")
    if _verified(record) == "policy":
        return f"policy (asked by {actor})" if actor else "policy"
    return actor or "—"


def _approvers(data: dict[str, Any], policy: Policy | None) -> str:
    """Who a reminder went to, as the rule names them ("finance"), else by the emails told."""
    rule = policy.rule_named(data.get("rule")) if policy is not None else None
    if rule is not None and rule.approvers:
        return any_of_approvers(rule.approvers)
    told = [str(email) for email in data.get("told") or []]
    return either_of(told) or "the approvers"


def questions_asked(records: Iterable[dict[str, Any]]) -> dict[str, str]:
    """What each question of the trail's pauses asked, by interrupt id ("How should order 42
    ship?"): the decisions about them name only the id."""
    return {
        str(item["interruptId"]): str(item["message"])
        for record in records
        if record.get("kind") == "pause"
        for item in (record.get("data") or {}).get("interrupts") or []
        if isinstance(item, dict) and item.get("message") and "toolName" not in item
    }


def summarize(
    record: dict[str, Any], policy: Policy | None = None, asked: Mapping[str, str] | None = None
) -> str:
    """One line a reviewer can scan: what was shown, decided, run, or what the desk's timers
    and the notices did. `policy` names whom a rule's reminder went to ("finance"); `asked`
    (`questions_asked`) what a question answered asked."""
    data = record.get("data") or {}
    kind = record.get("kind")
    interrupt_id = data.get("interruptId")
    what = data.get("toolName") or (asked or {}).get(str(interrupt_id)) or interrupt_id
    if kind == "reminded":
        return f"Reminded {_approvers(data, policy)} about {what} after {data.get('after')}"
    if kind == "escalated":
        to = any_of_approvers(data.get("to") or [])
        return f"Escalated {what} to {to or 'more people'} after {data.get('after')}"
    if kind == "delivery-failed":
        channel = data.get("channel")
        recipient = data.get("recipient")
        target = f"the email to {recipient}" if channel == "email" else f"the {channel}"
        then = "will retry" if data.get("willRetry") else "gave up"
        return (
            f"Delivery of {target} failed (attempt {data.get('attempt')}): "
            f"{data.get('error')}; {then}"
        )
    if kind == "decision" and "expired" in (data.get("status"), data.get("decision")):
        if approved := data.get("approvedBy"):
            approvals = f"{len(approved)} of {data.get('quorum')} approvals"
            return f"Expired {what}: {approvals} ({', '.join(map(str, approved))})"
        return f"Expired {what}: nobody decided"
    if kind == "pause":
        shown = data.get("interrupts") or []
        names = [
            item.get("toolName") or item.get("message") or item.get("interruptId") for item in shown
        ]
        return "Paused for: " + ", ".join(str(name) for name in names)
    if kind == "decision":
        text = f"{str(data.get('decision', '')).capitalize()} {what}"
        if "editedArgs" in data:  # what changed, as the card says it, where the record shows
            changed = arguments_changed(data.get("shownArgs"), data.get("editedArgs"))
            shown = "shownArgs" in data and changed
            text += f" with changes ({'; '.join(changed)})" if shown else " with edited arguments"
        if data.get("decidedBy") == "policy":
            text += f" by policy {data.get('rule')}"
        earlier = [str(person.get("actor")) for person in data.get("cosigners") or []]
        if earlier:  # a quorum: who approved before the person who completed it
            text += f", after {all_of(earlier)} approved"
        return text
    if kind == "refusal":
        return f"Refused {what}: {data.get('reason')}"
    if kind == "held":  # answered at the desk, waiting for the rest of its batch
        return f"{str(data.get('outcome', '')).capitalize()} {what}: held for the rest of its batch"
    if kind == "approval":  # towards a quorum, short of it
        return f"Approved {what} towards rule {data.get('rule')}: {data.get('progress')}"
    if kind == "resent":  # answers given at the desk, sent again by a Retry
        return "Sent again: " + "; ".join(
            f"{answer.get('name')} {answer.get('outcome')}"
            + (f" by {answer['decidedBy']}" if answer.get("decidedBy") else "")
            for answer in data.get("answers") or []
            if isinstance(answer, dict)
        )
    if kind == "execution":
        return f"Ran {data.get('toolName')}" + (" (failed)" if data.get("error") else "")
    return str(kind)


class AuditState(IdentityState):
    rows: list[AuditRow] = []
    chain_ok: bool = True
    chain_message: str = ""
    available: bool = True
    #: Why the trail is not shown to this person ("" when it is).
    refused: str = ""
    #: Whether `load` has run: before it, the page shows neither a badge nor a refusal.
    loaded: bool = False
    #: The trail shown is this app's own, so its export is the same records.
    exportable: bool = True
    #: Why the trail cannot be read just now ("" when it could, or when there is none).
    unreadable: str = ""

    def _show_failure(self, message: str) -> bool:
        """The trail could not be read: the page says it is not available (and a toast why)."""
        self.available = False
        self.rows = []
        return False

    def _refusal(self, viewer: Identity | None) -> str:
        """Why `viewer` may not read the trail ("" when they may)."""
        if viewer is not None and (self.auth_mode == "none" or viewer.roles & AUDIT_ROLES):
            return ""
        if viewer is None:
            return self._nobody_here("Sign in to read the audit trail.")
        return (
            "The audit trail is for the roles admin and auditor; you are signed in as "
            f"{viewer.label}."
        )

    @rx.event
    @guarded
    async def load(self) -> Any:
        viewer = self._viewer()
        redirect = self._sign_in_first(ROUTE)
        if redirect is not None:
            return redirect
        self.loaded = True
        if viewer is not None:
            await self._count_inbox(viewer)  # the header's count on this page too
        refused = self._refusal(viewer)
        if refused or viewer is None:  # nobody is always refused; said for the type checker
            self.refused, self.rows = refused, []
            return None
        self.refused = ""
        self.exportable = sessions.agent_here()
        try:
            trail = sessions.read_audit(viewer)
        except LedgerUnavailable as error:  # its address is for the log
            _log.warning("The audit trail could not be read: %s", error)
            trail, self.unreadable = None, LEDGER_SILENT
        else:
            self.unreadable = ""
        if trail is None:
            self.available = False
            self.rows = []
            return None
        self.available = True
        chain = trail.get("chain") or {}
        self.chain_ok = bool(chain.get("ok", True))
        records = list(trail.get("records") or [])
        asked = questions_asked(records)
        self.chain_message = (
            f"Intact: {len(records)} records, each linked to the one before by its SHA-256."
            if self.chain_ok
            else f"Broken at record {chain.get('brokenAt')}: {chain.get('reason')}."
        )
        self.rows = [
            AuditRow(
                seq=int(record.get("seq", 0)),
                at=str(record.get("at", "")),
                kind=str(record.get("kind", "")),
                actor=who(record),
                verified=verified_words(record),
                rule=str((record.get("data") or {}).get("rule") or ""),
                thread=str(record.get("thread_id", "")),
                summary=summarize(record, sessions.policy(), asked),
                detail=pretty(record.get("data")),
                hash=str(record.get("hash", ""))[7:19],
            )
            for record in reversed(records)
        ]
        return AuditState.watch

    @rx.event(background=True)
    @guarded_task
    async def watch(self) -> AsyncIterator[None]:
        """While the tab shows the trail, look every `WATCH_SECONDS` at who is signed in
        (the trail is read again only by Refresh): once nobody is (they signed out on
        another device, their session ran out) or they lost the roles, the trail goes and
        the page says why. Not while nobody can tell who is here (the accounts database
        does not answer)."""

        async def look() -> None:
            viewer = self._viewer()
            refused = "" if self._identity_unknown else self._refusal(viewer)
            if refused and self.rows:
                self.refused, self.rows = refused, []

        # No desk notice is about the trail (`set`: no topics): each look is the timeout's.
        async for _ in follow_page(self, ROUTE, set, look):
            yield

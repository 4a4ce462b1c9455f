"""Who may decide what: the policy file (`CHAT_APP_POLICY`), read once at start.

Owns `Policy`, `Rule` and `PolicyError`. A policy names roles (`[roles]`: role -> emails,
besides the roles an identity already carries) and an ordered list of `[[rules]]`; the first
rule whose `tool` (or generic `interrupt`) and `when` (a JSON Schema over the arguments, or
the interrupt's display payload) match decides. A rule either decides by itself (`decide`)
or names who may (`approvers`, `not_requester`, `quorum`) and which arguments they may
change in approving (`editable`), and how long a person has: after
`expires_after` the request expires unanswered, `remind_after` is when the approval desk
reminds the approvers, and after `escalate_after` the people of `escalate_to` may decide too.
When no rule matches, the person who asked decides. Every problem in the file is a
`PolicyError` at load, naming the file, the rule and what to fix, so a bad file stops the
start rather than a decision.

Pure: reads no environment and imports only the standard library, `jsonschema`,
`chat_app.interrupts` (its schema checks) and `chat_app.trust.identity`.
"""

from __future__ import annotations

import datetime
import difflib
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, overload

import jsonschema

from chat_app.interrupts import (
    POLICY_METADATA_KEY,
    CompiledSchema,
    canonical_interrupt_json,
    compile_schema,
)

from .identity import Identity, spelled_out

__all__ = [
    "WITHDRAWAL_ONLY",
    "cancel_refusal",
    "Policy",
    "PolicyError",
    "Rule",
    "describe_duration",
    "editable_shown",
    "edited_refusal",
    "escalation_note",
    "expiry_words",
    "parse_duration",
    "rule_lifetime",
]

_TOP_KEYS = ("roles", "known_roles", "rules")
_RULE_KEYS = (
    "name", "tool", "interrupt", "when", "decide", "reason", "approvers", "not_requester",
    "quorum", "editable", "expires_after", "remind_after", "escalate_after", "escalate_to",
)  # fmt: skip
_DURATION_KEYS = ("expires_after", "remind_after", "escalate_after")
_DURATION_PART = re.compile(r"\s*(\d+)\s*([dhms])", re.IGNORECASE)
_DURATION_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION_FORM = (
    'a whole number and a unit (d, h, m or s), largest first, like "90s", "30m", "2h", "1d" '
    'or "1h30m"'
)
_EMAIL = re.compile(r"^[^@\s:]+@[^@\s]+$")
_ROLE_PREFIX = "role:"
_ROLE_PREFIX_WORD = "role "

# Keywords a `when` schema may use (any draft jsonschema knows, plus annotations). An unknown
# keyword is ignored by JSON Schema, so a typo such as `maximun` would match everything.
_SCHEMA_KEYWORDS = frozenset().union(
    *(
        cls.VALIDATORS
        for cls in (
            jsonschema.Draft4Validator,
            jsonschema.Draft6Validator,
            jsonschema.Draft7Validator,
            jsonschema.Draft201909Validator,
            jsonschema.Draft202012Validator,
        )
    ),
    {
        "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary",
        "$defs", "definitions", "$comment", "title", "description", "default", "examples",
        "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
        "contentSchema",
    },
)  # fmt: skip
_SUBSCHEMA = frozenset(
    {
        "additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if",
        "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties",
    }
)  # fmt: skip
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SUBSCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)


#: Fifty years: the longest any time a setting or rule names may be. A sealed tool call id
#: writes its expiry as eight hex digits of Unix time (`Sealer.seal_tool_call`), which end in
#: February 2106, and an expiry, reminder or escalation must be a date before then.
LONGEST_DURATION = datetime.timedelta(days=18262)


def parse_duration(text: str) -> datetime.timedelta:
    """A span of time written as a policy writes it: "90s", "30m", "2h", "1d", "1h30m"
    (spaces allowed between the parts, each unit once, largest first).

    Raises:
        ValueError: when `text` is not such a span, is not longer than zero, or is longer
            than `LONGEST_DURATION`.
    """
    written = text.strip()
    if not written:
        raise ValueError(f"{text!r} is not a duration; write {_DURATION_FORM}")
    seconds, at, last = 0, 0, None
    units = list(_DURATION_UNITS)
    while at < len(written):
        part = _DURATION_PART.match(written, at)
        if part is None:
            raise ValueError(f"{text!r} is not a duration; write {_DURATION_FORM}")
        unit = part.group(2).lower()
        if last is not None and units.index(unit) <= units.index(last):
            raise ValueError(
                f"{text!r} repeats a unit or puts a smaller one first; write {_DURATION_FORM}"
            )
        seconds += int(part.group(1)) * _DURATION_UNITS[unit]
        at, last = part.end(), unit
    if seconds <= 0:
        raise ValueError(f"{text!r} is no time at all; a duration must be longer than zero")
    if seconds > LONGEST_DURATION.total_seconds():
        raise ValueError(
            f"{text!r} is longer than {LONGEST_DURATION.days}d (fifty years), the longest a "
            "policy time may be"
        )
    return datetime.timedelta(seconds=seconds)


def describe_duration(span: datetime.timedelta) -> str:
    """A span for a sentence, in its largest unit and the next one down, dropping a zero:
    "45 s", "30 min", "2 h", "1 h 30 min", "1 day", "2 days", "1 day 2 h" (a fraction of a
    second, and anything below the second unit, is left out)."""
    seconds = max(0, int(span.total_seconds()))
    parts = [
        (seconds // 86400, "day"),
        (seconds % 86400 // 3600, "h"),
        (seconds % 3600 // 60, "min"),
        (seconds % 60, "s"),
    ]
    first = next((i for i, (count, _) in enumerate(parts) if count), len(parts) - 1)
    shown = [
        f"{count} {unit}{'s' if unit == 'day' and count != 1 else ''}"
        for count, unit in parts[first : first + 2]
        if count or not seconds
    ]
    return " ".join(shown)


class PolicyError(ValueError):
    """A policy file that cannot be used. `str()` names the file, the rule (by name, or by its
    place among the `[[rules]]`) when there is one, and what to fix."""

    def __init__(self, source: str, problem: str, *, rule: str | None = None) -> None:
        self.source = source
        self.rule = rule
        self.problem = problem
        where = f"{source}, {rule}" if rule else source
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Rule:
    """One `[[rules]]` entry.

    >>> rule = Rule(name="large-transfers", tool="transfer", interrupt=None,
    ...             when={"properties": {"amount": {"exclusiveMinimum": 1000}}}, decide=None,
    ...             reason=None, approvers=("role:finance",), not_requester=True)
    >>> rule.matches("transfer", {"amount": 5000})
    True
    """

    name: str
    #: The tool whose approvals this rule governs; exactly one of `tool` and `interrupt`.
    tool: str | None
    #: A generic interrupt's definition id.
    interrupt: str | None
    #: JSON Schema over the tool's arguments (or the interrupt's display payload); `None`
    #: matches any.
    when: Mapping[str, object] | None
    #: Decided by the policy itself: nobody is asked.
    decide: Literal["approve", "reject"] | None
    #: With `decide = "reject"`: the reason the model reads.
    reason: str | None
    #: Who may decide: `"role:NAME"` or a lower-case email.
    approvers: tuple[str, ...]
    #: Nobody approves their own request.
    not_requester: bool = False
    #: Distinct approvals needed before it runs (any rejection decides).
    quorum: int = 1
    #: The arguments a decider may change by approving with edited arguments (top-level
    #: names; empty: none); `None`: any, within the rule's reach (`edited_refusal`).
    editable: tuple[str, ...] | None = None
    #: How long a request waits before it expires unanswered (`None`: the sealer's TTL).
    expires_after: datetime.timedelta | None = None
    #: When the approval desk reminds the approvers, counted from the pause.
    remind_after: datetime.timedelta | None = None
    #: From this long after the pause, `escalate_to` may decide as well as `approvers`.
    escalate_after: datetime.timedelta | None = None
    #: Who may decide once it is escalated: `"role:NAME"` or a lower-case email.
    escalate_to: tuple[str, ...] = ()
    _when: CompiledSchema | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.when is not None:
            object.__setattr__(self, "_when", compile_schema(self.when, exact=True))

    def matches(self, name: str, args: object) -> bool:
        """Whether this rule governs the tool (or interrupt definition) `name` called with
        `args` (or showing that display payload)."""
        if name != (self.tool if self.tool is not None else self.interrupt):
            return False
        return self._when is None or self._when.is_valid(args)

    def refuses_approval(self) -> str | None:
        """Why an approval of a call under this rule is refused, when the rule rejects such
        calls: the `forbidden` message the gate gives and the desk gives before it."""
        if self.decide != "reject":
            return None
        return f"Rejected by policy {self.name}: {self.reason or 'not allowed'}."

    def refuses_edit(self, shown: object, edited: object) -> str | None:
        """Why approving `shown` arguments as `edited` is refused, when the edit changes one
        this rule does not list in `editable`: the `forbidden` message the gate gives and
        the desk gives before it ("Rule large-transfers lets an approver change only amount,
        not recipient.")."""
        if self.editable is None:
            return None
        changed = changed_arguments(shown, edited)
        fixed = [name for name in changed if name not in self.editable]
        if not fixed:
            return None
        if not self.editable:
            return (f"Rule {self.name} lets nobody change the arguments: approve them as "
                    "shown, or reject.")  # fmt: skip
        only = f"Rule {self.name} lets an approver change only {all_of(list(self.editable))}"
        if not isinstance(shown, Mapping) or not isinstance(edited, Mapping):
            return f"{only}, and these edited arguments are not an object of named ones."
        # Named from what an approver sent: spelled out, and a few (the trail keeps it).
        named = [spelled_out(name) for name in fixed[:_NAMED]]
        if len(fixed) > _NAMED:
            named.append(f"{len(fixed) - _NAMED} more")
        return f"{only}, not {either_of(named)}."

    def pinned(self, shown: object, edited: object) -> object:
        """`edited` with each argument this rule's `editable` leaves out as `shown` has it:
        an edit `refuses_edit` let through changes those at most in how a number is written
        (`1.0` for `1`), which the tool then does not see."""
        if self.editable is None or not isinstance(shown, Mapping):
            return edited
        if not isinstance(edited, Mapping):
            return edited
        return {name: shown[name] if name in shown and name not in self.editable else value
                for name, value in edited.items()}  # fmt: skip


#: How many arguments a refused edit names (then "and N more").
_NAMED = 5


def changed_arguments(shown: object, edited: object) -> list[str]:
    """The top-level arguments `edited` changes from `shown` (one added or removed counts),
    in the order shown then added; `["arguments"]` when either is not an object and they
    differ. Values compare as JSON does (`true` is not `1`)."""
    if not isinstance(shown, Mapping) or not isinstance(edited, Mapping):
        return [] if _same_json(shown, edited) else ["arguments"]
    names = [*shown, *(name for name in edited if name not in shown)]
    return [
        str(name) for name in names
        if name not in shown or name not in edited or not _same_json(shown[name], edited[name])
    ]  # fmt: skip


def _same_json(a: object, b: object) -> bool:
    """Equal as JSON values, as the interrupts' canonical form writes them (`1` and `1.0`
    alike, `true` not `1`, key order aside)."""
    return canonical_interrupt_json(a) == canonical_interrupt_json(b)


def editable_shown(metadata: object) -> tuple[str, ...] | None:
    """The `editable` a pause's policy metadata (`chat_app:policy`, as the engine's gate
    describes the rule) gives: for a page or desk that judges by the pause, an agent's
    whose rules are its own. `None`: any argument may change, or it does not say."""
    shown = metadata.get(POLICY_METADATA_KEY) if isinstance(metadata, Mapping) else None
    named = shown.get("editable") if isinstance(shown, Mapping) else None
    return tuple(str(name) for name in named) if isinstance(named, list) else None


@overload
def rule_lifetime(rule: Rule | None, ttl_seconds: float) -> float: ...
@overload
def rule_lifetime(rule: Rule | None, ttl_seconds: float | None) -> float | None: ...
def rule_lifetime(rule: Rule | None, ttl_seconds: float | None) -> float | None:
    """How long, in seconds, a request under `rule` waits before it expires: the rule's
    `expires_after`, else `ttl_seconds` (the sealer's TTL; `None` without a sealer, when only
    a rule's `expires_after` expires anything).

    The one reckoning of it: what the engine seals, what it tells a late answer ("nobody
    decided within 1 day"), when it counts an escalation from, and the start's warnings must
    all agree on it.
    """
    if rule is not None and rule.expires_after is not None:
        return rule.expires_after.total_seconds()
    return ttl_seconds


def asking_a_person(rule: Rule | None) -> Rule | None:
    """The rule whose approvers answer a request that paused under `rule`: `rule` itself,
    unless it decides alone. Such a rule asks nobody, and a request waits under one only when
    the policy came to decide it after the pause; whoever asked answers it then, as under no
    rule (the engine's gate still refuses an approval a rule that rejects would not give).

    The one reckoning of it: the gate that judges the answer, the desk that files it in an
    inbox and the page that offers its buttons must agree on who that is.
    """
    return None if rule is None or rule.decide is not None else rule


@dataclass(frozen=True)
class Policy:
    """Who may decide what.

    ```python
    policy = Policy.load("chat_app/demo/policy.toml")
    rule = policy.rule_for_tool("transfer", {"recipient": "Ada", "amount": 5000})
    refusal = policy.check(rule, ada, decider_is_requester=False)  # None: Ada may approve
    ```
    """

    #: The file it was read from, or `"<empty>"`.
    source: str
    #: Role -> lower-case emails, from `[roles]`.
    roles: Mapping[str, frozenset[str]]
    rules: tuple[Rule, ...]
    _roles_by_email: Mapping[str, frozenset[str]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        by_email: dict[str, set[str]] = {}
        for role, members in self.roles.items():
            for email in members:
                by_email.setdefault(email.lower(), set()).add(role)
        frozen = {email: frozenset(roles) for email, roles in by_email.items()}
        object.__setattr__(self, "_roles_by_email", MappingProxyType(frozen))

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Read and check a policy file.

        Raises:
            PolicyError: on any problem with the file, naming the rule and what to fix.
        """
        source = str(path)
        try:
            text = Path(path).read_bytes().decode("utf-8")
        except OSError as error:
            raise PolicyError(source, f"cannot be read ({error.strerror or error})") from None
        except UnicodeDecodeError:
            raise PolicyError(source, "is not UTF-8 text; save it as UTF-8") from None
        return cls.parse(text, source)

    @classmethod
    def parse(cls, text: str, source: str = "<policy>") -> Policy:
        """Check a policy given as TOML text (`source` names it in errors)."""
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise PolicyError(
                source, f"is not valid TOML: {error}; fix the TOML syntax there"
            ) from None
        return _read_policy(document, source)

    @classmethod
    def empty(cls) -> Policy:
        """No rules: the person who asked decides everything."""
        return cls(source="<empty>", roles=MappingProxyType({}), rules=())

    def edit_problems(self, input_schemas: Mapping[str, Mapping[str, Any] | None]) -> list[str]:
        """Each name a rule's `editable` gives that its tool's input schema (`input_schemas`:
        tool name -> schema, the agent's) has no property of, as a warning: a misspelt name
        leaves the argument it meant fixed, and this file is read without the tools."""
        problems: list[str] = []
        for rule in self.rules:
            schema = input_schemas.get(rule.tool or "")
            properties = schema.get("properties") if isinstance(schema, Mapping) else None
            if not rule.editable or not isinstance(properties, Mapping):
                continue
            unknown = [name for name in rule.editable if name not in properties]
            if unknown:
                problems.append(
                    f"{self.source}, rule {rule.name!r}: editable names "
                    f"{', '.join(unknown)}, which {rule.tool} does not take (its arguments: "
                    f"{', '.join(properties) or 'none'}); check the spelling."
                )
        return problems

    def short_quorums(self) -> list[str]:
        """Each rule whose quorum the people this file names cannot reach, as a warning: its
        roles may gain members from accounts (`users set-roles`) or a sign-in proxy's groups,
        which only the running server knows. A rule with `not_requester` is short by one for
        a request one of them made: that waits for escalation, or expires."""
        notes: list[str] = []
        for rule in self.rules:
            named = [a.removeprefix(_ROLE_PREFIX) for a in rule.approvers
                     if a.startswith(_ROLE_PREFIX)]  # fmt: skip
            if rule.decide is not None or rule.quorum < 2 or not named:
                continue
            if any(role not in self.roles for role in named):  # members from elsewhere only
                continue
            people = {a for a in rule.approvers if not a.startswith(_ROLE_PREFIX)}
            for role in named:
                people |= self.roles[role]
            short = len(people) - 1 if rule.not_requester else len(people)
            if rule.quorum <= short:
                continue
            who = f"{_people(len(people))} ({', '.join(sorted(people)) or 'nobody'})"
            roles = ", ".join(f"role {role}" for role in named)
            if rule.quorum > len(people):
                problem = f"only {who} could approve"
            else:
                problem = (f"of the {who} who could approve, a request by one of them can "
                           f"gain only {short} approval{'s' if short != 1 else ''} "
                           "(not_requester), and waits for escalation or expires")  # fmt: skip
            notes.append(
                f"{self.source}, rule {rule.name!r}: `quorum` is {rule.quorum}, but {problem}, "
                f"unless accounts or a sign-in proxy's groups give {roles} to more people."
            )
        return notes

    @property
    def role_names(self) -> frozenset[str]:
        """The roles this policy names: in `[roles]`, or among a rule's `approvers` or
        `escalate_to` (a role that grants nothing here is named nowhere)."""
        in_rules = {
            who.removeprefix(_ROLE_PREFIX)
            for rule in self.rules
            for who in (*rule.approvers, *rule.escalate_to)
            if who.startswith(_ROLE_PREFIX)
        }
        return frozenset(self.roles) | in_rules

    def rule_named(self, name: object) -> Rule | None:
        """The rule called `name` (what a pause's metadata names), if there is one."""
        return next((rule for rule in self.rules if rule.name == name), None)

    def rule_for_tool(self, name: str, args: object) -> Rule | None:
        """The first rule that governs a call of tool `name` with `args`, or `None`."""
        for rule in self.rules:
            if rule.tool is not None and rule.matches(name, args):
                return rule
        return None

    def rule_for_interrupt(self, definition_id: str, payload: object) -> Rule | None:
        """The first rule that governs a generic interrupt showing `payload`, or `None`."""
        for rule in self.rules:
            if rule.interrupt is not None and rule.matches(definition_id, payload):
                return rule
        return None

    def roles_of(self, identity: Identity) -> frozenset[str]:
        """The identity's own roles and those `[roles]` gives its email."""
        if identity.anonymous:
            return identity.roles
        return identity.roles | self._roles_by_email.get(identity.email.lower(), frozenset())

    def check(
        self,
        rule: Rule,
        decider: Identity,
        *,
        decider_is_requester: bool,
        escalated: bool = False,
    ) -> str | None:
        """`None` when `decider` may decide under `rule`; otherwise the message of a
        `forbidden` refusal, saying who may. Once the request is `escalated` (its rule's
        `escalate_after` has passed since the pause), `escalate_to` may decide as well;
        `not_requester` still holds. Quorums are counted by the caller."""
        if rule.decide is not None:
            return f"Decided by policy {rule.name}; nobody is asked."
        who = self.describe_approvers(rule, escalated=escalated)
        not_you = ", not the requester" if rule.not_requester else ""
        # A question is answered, not approved.
        needs = "Needs an answer from" if rule.interrupt is not None else "Needs approval from"
        if rule.not_requester and decider_is_requester:
            if not rule.approvers:
                return "Needs a decision from someone other than the requester."
            return f"{needs} {who}, not the requester."
        if not rule.approvers:
            return None
        if self._names(_deciders(rule, escalated), decider):
            return None
        refusal = f"{needs} {who}{not_you}."
        later = rule.escalate_after
        if not escalated and later is not None and self._names(rule.escalate_to, decider):
            # Someone the escalation will let in reads when, rather than a flat no.
            refusal += (
                f" Escalation lets {any_of_approvers(rule.escalate_to)} decide too once it has "
                f"waited {describe_duration(later)}."
            )
        return refusal

    def _names(self, approvers: Sequence[str], person: Identity) -> bool:
        """Whether `approvers` ("role:finance", "ada@example.com") take in `person`."""
        if person.anonymous:
            return False
        email = person.email.lower()
        roles = self.roles_of(person)
        for approver in approvers:
            if approver.startswith(_ROLE_PREFIX):
                if approver[len(_ROLE_PREFIX) :] in roles:
                    return True
            elif approver == email:
                return True
        return False

    def describe_approvers(self, rule: Rule, *, escalated: bool = False) -> str:
        """Who may decide, for a message: "role finance", "ada@example.com or role finance";
        once `escalated`, with the rule's `escalate_to` ("role finance or role admin")."""
        return describe_people(_deciders(rule, escalated)) or "anyone"

    def waiting_for(self, rule: Rule, *, viewer_is_requester: bool) -> str:
        """A short sentence for the page, e.g. "Waiting for finance"."""
        if rule.decide is not None:
            return f"{'Approved' if rule.decide == 'approve' else 'Rejected'} by policy {rule.name}"
        who = any_of_approvers(rule.approvers) or "someone"
        if not rule.approvers and rule.not_requester:
            who = "someone else"
        sentence = f"Waiting for {who}"
        if rule.quorum > 1:
            sentence += f" ({rule.quorum} approvals needed)"
        if viewer_is_requester and rule.not_requester and rule.approvers:
            sentence += " — you asked for this, so someone else approves it"
        return sentence


#: Why an approval's cancellation by anyone but whoever asked is refused: it would stop the
#: call with no reason, where its rule may ask a rejection for one.
WITHDRAWAL_ONLY = "Only the person who asked may withdraw this request: to say no, reject it."



def cancel_refusal(*, approval: bool, asked: bool | None) -> str | None:
    """Why a cancellation is refused, if it is: a tool approval's is its requester's
    withdrawal alone (`WITHDRAWAL_ONLY`). `approval`: it answers a tool approval, and is not
    its expiry (which whoever may decide it closes); `asked`: the canceller asked for it, or
    `None` when nobody knows who asked (no sealed requester, no policy), and nothing is
    refused. The engine's gate, the desk and the card all ask this."""
    if not approval or asked is None or asked:
        return None
    return WITHDRAWAL_ONLY


def edited_refusal(rule: Rule | None, refusal: str) -> str:
    """Why edited arguments may not run, when their own rule (`rule`; `None`: none) refuses
    what that of the call as shown allowed: "Edited, the call falls under rule
    large-transfers: Needs approval from role finance, not the requester." The engine's gate
    and the desk both say a refusal by who may decide so (a quorum's they word themselves)."""
    under = f"rule {rule.name}" if rule is not None else "no rule"
    return f"Edited, the call falls under {under}: {refusal}"


_Fail = Callable[[str], PolicyError]


def _deciders(rule: Rule, escalated: bool) -> tuple[str, ...]:
    """Who may decide under `rule`: its approvers, and once escalated its `escalate_to`."""
    if not escalated or rule.escalate_after is None:
        return rule.approvers
    return rule.approvers + tuple(a for a in rule.escalate_to if a not in rule.approvers)


def _schema_validator(schema: Mapping[str, object]) -> Any:
    """A validator for `schema` (2020-12 unless it names its draft).

    Raises:
        jsonschema.SchemaError: when `schema` is not a valid JSON Schema.
    """
    schema = dict(schema)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=jsonschema.FormatChecker())


def escalation_note(escalate_to: Sequence[str], after: datetime.timedelta) -> str:
    """How an escalation reads wherever it is shown (an inbox item, a card, a notice): "escalated
    to admin or boss@example.com after 2 h" (roles bare); "" when it names nobody."""
    if not escalate_to:
        return ""
    return f"escalated to {any_of_approvers(escalate_to)} after {describe_duration(after)}"


def describe_people(approvers: Sequence[str]) -> str:
    """Approvers as a rule names them, for a message: "role finance", "ada@example.com or
    role finance"; "" for none."""
    names = [_ROLE_PREFIX_WORD + a[len(_ROLE_PREFIX) :] if a.startswith(_ROLE_PREFIX) else a
             for a in approvers]  # fmt: skip
    return either_of(names)


def any_of_approvers(approvers: Sequence[str]) -> str:
    """Approvers as a rule names them ("role:finance", "boss@example.com"), said as people
    read them: "finance or boss@example.com" (roles bare); "" for none."""
    return either_of([str(approver).removeprefix(_ROLE_PREFIX) for approver in approvers])


def either_of(names: list[str]) -> str:
    """ "finance", "finance or admin", "ada@example.com, sam@example.com or admin"."""
    return _listed(names, "or")


def expiry_words(within: str, approved_by: Sequence[str] = (), quorum: int = 1) -> str:
    """How a request that expired ended, `within` its time ("within 1 day", "in time"):
    "Expired: nobody decided within 1 day."; for a quorum some approved short of, who did
    and how far it got: "Expired: only Sam approved (1 of 2) within 1 day, so nothing ran."
    """
    if not approved_by:
        return f"Expired: nobody decided {within}."
    who, count = all_of(list(approved_by)), len(approved_by)
    return f"Expired: only {who} approved ({count} of {quorum}) {within}, so nothing ran."


def all_of(names: list[str]) -> str:
    """ "Sam", "Sam and Olive", "Sam, Ada and Olive"."""
    return _listed(names, "and")


def _listed(names: list[str], last: str) -> str:
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} {last} {names[-1]}"


def _people(count: int) -> str:
    return f"{count} {'person' if count == 1 else 'people'}"


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The one of `choices` `word` is likeliest a typo of, if any is close."""
    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return close[0] if close else None


def _suggest(word: str, choices: Iterable[str]) -> str:
    meant = closest(word, choices)
    return f" (did you mean `{meant}`?)" if meant else ""


def _read_policy(document: dict[str, Any], source: str) -> Policy:
    for key in document:
        if key not in _TOP_KEYS:
            raise PolicyError(
                source,
                f"unknown top-level key `{key}`{_suggest(key, _TOP_KEYS)}; "
                "a policy has only [roles], known_roles and [[rules]]",
            )
    roles = _read_roles(document.get("roles", {}), source)
    known = _read_known_roles(document.get("known_roles", []), source)
    raw_rules = document.get("rules", [])
    if not isinstance(raw_rules, list) or not all(isinstance(r, dict) for r in raw_rules):
        raise PolicyError(source, "`rules` must be an array of tables: write each as [[rules]]")
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_rules, start=1):
        rule = _read_rule(raw, index, roles, known, source)
        if rule.name in seen:
            raise PolicyError(
                source,
                f"the name {rule.name!r} is already used by [[rules]] #{seen[rule.name]}; "
                "give each rule its own name",
                rule=f"rule {rule.name!r} ([[rules]] #{index})",
            )
        seen[rule.name] = index
        rules.append(rule)
    return Policy(source=source, roles=MappingProxyType(roles), rules=tuple(rules))


def _read_roles(raw: object, source: str) -> dict[str, frozenset[str]]:
    shape = 'write it as [roles] with lines like finance = ["ada@example.com"]'
    if not isinstance(raw, dict):
        raise PolicyError(source, f"[roles] must be a table; {shape}")
    roles: dict[str, frozenset[str]] = {}
    for role, members in raw.items():
        if role.startswith(_ROLE_PREFIX) or not role.strip() or role != role.strip():
            raise PolicyError(
                source,
                f"[roles] has the role {role!r}; name it without "
                "`role:` and without surrounding spaces, like finance",
            )
        if role in _TOP_KEYS:
            raise PolicyError(
                source,
                f"[roles] has a role named {role}: TOML puts every key after [roles] in "
                f"that table, so move `{role} = ...` above [roles]",
            )
        if not isinstance(members, list):
            raise PolicyError(source, f"[roles] {role} must be a list of emails; {shape}")
        for member in members:
            if not isinstance(member, str) or not _EMAIL.match(member):
                raise PolicyError(
                    source,
                    f"[roles] {role} lists {member!r}, which is not an email; "
                    "list people by email address",
                )
        roles[role] = frozenset(member.lower() for member in members)
    return roles


def _read_known_roles(raw: object, source: str) -> frozenset[str]:
    if not isinstance(raw, list) or not all(isinstance(r, str) and r.strip() for r in raw):
        raise PolicyError(
            source, 'known_roles must be a list of role names, like known_roles = ["auditor"]'
        )
    for role in raw:
        if role.startswith(_ROLE_PREFIX):
            raise PolicyError(
                source,
                f"known_roles lists {role!r}; write the bare role name "
                f"{role[len(_ROLE_PREFIX) :]!r}",
            )
    return frozenset(raw)


def _read_rule(
    raw: dict[str, Any],
    index: int,
    roles: Mapping[str, frozenset[str]],
    known: frozenset[str],
    source: str,
) -> Rule:
    name = raw.get("name")
    label = f"rule {name!r}" if isinstance(name, str) and name.strip() else f"[[rules]] #{index}"

    def fail(problem: str) -> PolicyError:
        return PolicyError(source, problem, rule=label)

    for key in raw:
        if key not in _RULE_KEYS:
            raise fail(
                f"unknown key `{key}`{_suggest(key, _RULE_KEYS)}; "
                f"a rule's keys are {', '.join(_RULE_KEYS)}"
            )
    if not isinstance(name, str) or not name.strip():
        raise fail('has no name; add name = "…" (a short, unique name the trail records)')
    tool, interrupt = raw.get("tool"), raw.get("interrupt")
    if (tool is None) == (interrupt is None):
        raise fail(
            "needs exactly one of `tool` (a tool's name) and `interrupt` (a generic "
            f"interrupt's definition id); it has {'both' if tool is not None else 'neither'}"
        )
    for key, value in (("tool", tool), ("interrupt", interrupt)):
        if value is not None and (not isinstance(value, str) or not value):
            raise fail(f"`{key}` must be a non-empty string")
    when = _read_when(raw.get("when"), fail)
    decide, reason = raw.get("decide"), raw.get("reason")
    approvers_raw = raw.get("approvers")
    if (decide is None) == (approvers_raw is None):
        raise fail(
            'needs either `decide` ("approve" or "reject": the policy decides) or '
            '`approvers` (who may, e.g. ["role:finance"]); it has '
            f"{'both' if decide is not None else 'neither'}"
        )
    if decide is not None:
        if decide not in ("approve", "reject"):
            raise fail(f'`decide` is {decide!r}; write decide = "approve" or decide = "reject"')
        if interrupt is not None:
            raise fail(
                "`decide` cannot answer an `interrupt` rule: a question needs a person's "
                "value; name `approvers` instead"
            )
        for key in ("not_requester", "quorum", "editable"):
            if key in raw:
                raise fail(f"`{key}` applies only with `approvers`; remove it, or `decide`")
        for key in (*_DURATION_KEYS, "escalate_to"):
            if key in raw:
                raise fail(
                    f"`{key}` applies only with `approvers`: a rule that decides alone asks "
                    "nobody, so nothing waits, expires or escalates; remove it"
                )
    if decide == "reject":
        if not isinstance(reason, str) or not reason.strip():
            raise fail('`decide = "reject"` needs a `reason` the model reads; add reason = "…"')
    elif reason is not None:
        raise fail('`reason` goes only with decide = "reject"; remove it')
    approvers = () if approvers_raw is None else _read_approvers(approvers_raw, roles, known, fail)
    not_requester = raw.get("not_requester", False)
    if not isinstance(not_requester, bool):
        raise fail("`not_requester` must be true or false")
    quorum = raw.get("quorum", 1)
    if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 1:
        raise fail(f"`quorum` is {quorum!r}; it must be a whole number, 1 or more")
    # Named by email alone, the approvers are all there will be; a role's members may come
    # from accounts and a proxy's groups too (`Policy.short_quorums` warns at start).
    if approvers and not any(a.startswith(_ROLE_PREFIX) for a in approvers):
        if quorum > len(approvers):
            raise fail(
                f"`quorum` is {quorum} but only {_people(len(approvers))} could approve "
                f"({', '.join(sorted(approvers))}); lower the quorum or add approvers"
            )
    editable = _read_editable(raw, tool, quorum, fail)
    timing = _read_timing(raw, roles, known, fail)
    return Rule(
        name=name,
        tool=tool,
        interrupt=interrupt,
        when=when,
        decide=decide,
        reason=reason,
        approvers=approvers,
        not_requester=not_requester,
        quorum=quorum,
        editable=editable,
        **timing,
    )


def _read_editable(
    raw: dict[str, Any], tool: str | None, quorum: int, fail: _Fail
) -> tuple[str, ...] | None:
    """A rule's `editable`: the names of the arguments an approver may change (`None` when
    it is not given: any)."""
    if "editable" not in raw:
        return None
    value = raw["editable"]
    if tool is None:
        raise fail("`editable` applies only to a `tool` rule: a question's answer is not edited")
    if quorum > 1:
        raise fail(
            "`editable` applies only with a quorum of 1: under a quorum each approver approves "
            "the arguments as shown, and an edit is refused; remove it"
        )
    if not isinstance(value, list) or not all(
        isinstance(name, str) and name.strip() for name in value
    ):
        raise fail(
            f"`editable` is {value!r}; write the names of the arguments an approver may "
            'change, e.g. editable = ["amount"], or editable = [] for none'
        )
    repeated = sorted({name for name in value if value.count(name) > 1})
    if repeated:
        raise fail(f"`editable` names {', '.join(repeated)} more than once")
    return tuple(value)


def _read_timing(
    raw: dict[str, Any],
    roles: Mapping[str, frozenset[str]],
    known: frozenset[str],
    fail: _Fail,
) -> dict[str, Any]:
    """A rule's `expires_after`, `remind_after`, `escalate_after` and `escalate_to`, checked
    against each other (`decide` is known to be absent when any is given)."""
    spans: dict[str, datetime.timedelta | None] = {}
    for key in _DURATION_KEYS:
        value = raw.get(key)
        if value is None:
            spans[key] = None
            continue
        if not isinstance(value, str):
            raise fail(f"`{key}` is {value!r}; write it as a string: {_DURATION_FORM}")
        try:
            spans[key] = parse_duration(value)
        except ValueError as error:
            raise fail(f"`{key}`: {error}") from None
    if ("escalate_after" in raw) != ("escalate_to" in raw):
        has, lacks = (
            ("escalate_after", "escalate_to")
            if "escalate_after" in raw
            else ("escalate_to", "escalate_after")
        )
        raise fail(
            f'`{has}` needs `{lacks}` too: escalation says when (escalate_after = "2h") and '
            'to whom (escalate_to = ["role:admin"])'
        )
    escalate_to = (
        _read_approvers(raw["escalate_to"], roles, known, fail, key="escalate_to")
        if "escalate_to" in raw
        else ()
    )
    expires = spans["expires_after"]
    for key in ("remind_after", "escalate_after"):
        span = spans[key]
        if span is not None and expires is not None and span >= expires:
            raise fail(
                f"`{key}` ({describe_duration(span)}) is not shorter than `expires_after` "
                f"({describe_duration(expires)}): the request would expire first; shorten "
                f"`{key}` or lengthen `expires_after`"
            )
    return {
        "expires_after": expires,
        "remind_after": spans["remind_after"],
        "escalate_after": spans["escalate_after"],
        "escalate_to": escalate_to,
    }


def _read_approvers(
    raw: object,
    roles: Mapping[str, frozenset[str]],
    known: frozenset[str],
    fail: _Fail,
    *,
    key: str = "approvers",
) -> tuple[str, ...]:
    """The people of `approvers` (or `escalate_to`, which `key` names in errors)."""
    what = "approver" if key == "approvers" else f"`{key}` entry"
    if not isinstance(raw, list) or not raw:
        example = "role:finance" if key == "approvers" else "role:admin"
        raise fail(f'`{key}` must be a non-empty list, like {key} = ["{example}"]')
    approvers: list[str] = []
    for approver in raw:
        if not isinstance(approver, str):
            raise fail(f'{what} {approver!r} must be a string: "role:NAME" or an email')
        if approver.startswith(_ROLE_PREFIX):
            role = approver[len(_ROLE_PREFIX) :]
            if role not in roles and role not in known:
                raise fail(
                    f"{what} {approver!r} names the unknown role {role!r}"
                    f"{_suggest(role, [*roles, *known])}; define it in [roles], or, if its "
                    "members come only from a sign-in proxy's groups (or accounts' roles), "
                    "list it in known_roles = [...]"
                )
            normal = approver
        elif _EMAIL.match(approver):
            normal = approver.lower()
        else:
            hint = f'; did you mean "role:{approver}"?' if approver in {*roles, *known} else ""
            raise fail(f'{what} {approver!r} is neither "role:NAME" nor an email{hint}')
        if normal not in approvers:
            approvers.append(normal)
    return tuple(approvers)


def _read_when(raw: object, fail: _Fail) -> dict[str, object] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise fail(
            "`when` must be a table (a JSON Schema over the arguments), like "
            "when = { properties = { amount = { maximum = 50 } } }"
        )
    _check_keywords(raw, "when", fail)
    try:
        _schema_validator(raw)
    except jsonschema.SchemaError as error:
        at = ".".join(["when", *(str(p) for p in error.path)])
        keyword = next((p for p in reversed(error.path) if isinstance(p, str)), None)
        fix = f"fix the `{keyword}` keyword" if keyword else "fix it"
        raise fail(f"`when` is not a valid JSON Schema: at {at}, {error.message}; {fix}") from None
    return raw


def _check_keywords(schema: object, at: str, fail: _Fail) -> None:
    """Refuse what JSON Schema would silently ignore or cannot do offline: unknown keywords
    (a typo there makes `when` match everything), remote `$ref`s and TOML dates."""
    if isinstance(schema, (datetime.date, datetime.time)):
        raise fail(f"`{at}` is a TOML date or time, which JSON has not; write it as a string")
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            _check_keywords(item, f"{at}[{i}]", fail)
        return
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        here = f"{at}.{key}"
        if key not in _SCHEMA_KEYWORDS and not key.startswith("x-"):
            fix = _suggest(key, _SCHEMA_KEYWORDS) or (
                f" (to test the argument {key!r}, put it under `properties`)"
            )
            raise fail(
                f"`{here}` is not a JSON Schema keyword{fix}, and an unknown keyword would be "
                "ignored (matching more than you meant); fix it"
            )
        if key in ("$ref", "$dynamicRef", "$recursiveRef"):
            if not isinstance(value, str) or not value.startswith("#"):
                raise fail(f"`{here}` must point inside the schema (start with #)")
        elif key in _SUBSCHEMA or key in _SUBSCHEMA_LISTS:
            _check_keywords(value, here, fail)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                _check_keywords(sub, f"{here}.{name}", fail)
        elif key in ("const", "enum", "default", "examples"):
            _check_values(value, here, fail)


def _check_values(value: object, at: str, fail: _Fail) -> None:
    if isinstance(value, (datetime.date, datetime.time)):
        raise fail(f"`{at}` holds a TOML date or time, which JSON has not; write it as a string")
    if isinstance(value, list):
        for item in value:
            _check_values(item, at, fail)
    elif isinstance(value, dict):
        for item in value.values():
            _check_values(item, at, fail)

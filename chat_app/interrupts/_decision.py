"""One answer to one interrupt: `Decision`, how it reads from and writes to a resume entry,
and what is wrong with it for the interrupt it answers.

Owns `Decision`, `DecisionTarget`, `DecisionProblem`, `read_decision`, `edited_args_of` and
`check_decision` (`docs/protocol.md` §3.2, §3.4 and §4.5). The engine's continuation check,
the client's interrupt manager, the audit trail, the desk and the page all go through these,
so the rules of the answer envelope (`approved`, `editedArgs`, `payload`, a cancellation, a
generic value) are written once.

A check returns problems instead of raising: the engine collects every item's problems
before refusing a batch, and the client turns one into the item's error. The two sides word
a problem differently, as TanStack AI's server and client do (fixtures captured from the
real packages pin both): the server names the interrupt and the decision ("Approval
approval_c1 requires a payload for the approve decision."), the client speaks of the branch
("This approval branch requires a payload."). The client also checks only what it can know
before sending (a schema it holds and can use); the server, which holds the tools, is the
authority.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ._bindings import ABSENT
from ._errors import ItemInterruptErrorCode
from ._validation import SchemaProblem, UnusableSchemaError, schema_is_usable, schema_problem

__all__ = [
    "APPROVED_BOOLEAN_REQUIRED",
    "Decision",
    "DecisionKind",
    "DecisionOutcome",
    "DecisionProblem",
    "DecisionTarget",
    "InterruptKind",
    "Side",
    "check_decision",
    "edited_args_of",
    "read_decision",
]

DecisionKind: TypeAlias = Literal["approve", "reject", "cancel", "answer"]
#: How the trail and the page name a decision.
DecisionOutcome: TypeAlias = Literal["approved", "rejected", "cancelled", "answered"]
#: What a decision answers: a tool approval, a client tool's execution, a generic question.
InterruptKind: TypeAlias = Literal["approval", "client-tool", "generic"]
#: Who checks: a client before sending, or the server before anything runs.
Side: TypeAlias = Literal["client", "server"]

#: A raw JSON Schema, as a tool or definition holds it.
Schema: TypeAlias = Mapping[str, object]

_ENVELOPE_FIELDS = frozenset({"approved", "editedArgs", "payload"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """The answer to one interrupt.

    - `approve`: a tool approval granted, with the approve branch's `payload` when its
      schema asks for one, and `edited_args` when the person changed the arguments;
    - `reject`: refused, with the reject branch's `payload` (a reason the model reads);
    - `cancel`: abandoned without an answer;
    - `answer`: a generic interrupt's value, or a client tool's output, in `payload`.

    `ABSENT` marks what was not given (`None` is a value).
    """

    interrupt_id: str
    kind: DecisionKind
    payload: Any = ABSENT
    edited_args: Any = ABSENT

    @classmethod
    def approval(
        cls, interrupt_id: str, approved: bool, *, payload: Any = ABSENT, edited_args: Any = ABSENT
    ) -> Decision:
        return cls(
            interrupt_id=interrupt_id,
            kind="approve" if approved else "reject",
            payload=payload,
            edited_args=edited_args,
        )

    @classmethod
    def cancel(cls, interrupt_id: str) -> Decision:
        return cls(interrupt_id=interrupt_id, kind="cancel")

    @classmethod
    def answer(cls, interrupt_id: str, value: Any = ABSENT) -> Decision:
        return cls(interrupt_id=interrupt_id, kind="answer", payload=value)

    @property
    def approved(self) -> bool | None:
        """For a tool approval, whether it was granted; `None` for anything else."""
        if self.kind == "approve":
            return True
        if self.kind == "reject":
            return False
        return None

    @property
    def edited(self) -> bool:
        return self.edited_args is not ABSENT

    @property
    def outcome(self) -> DecisionOutcome:
        return _OUTCOMES[self.kind]

    def envelope(self) -> dict[str, Any]:
        """An approval's resume payload: `{approved, editedArgs?, payload?}`."""
        envelope: dict[str, Any] = {"approved": self.kind == "approve"}
        if self.edited_args is not ABSENT:
            envelope["editedArgs"] = self.edited_args
        if self.payload is not ABSENT:
            envelope["payload"] = self.payload
        return envelope

    def resume_entry(self) -> dict[str, Any]:
        """The AG-UI `ResumeEntry` carrying this decision, as wire JSON (camelCase)."""
        entry: dict[str, Any] = {"interruptId": self.interrupt_id}
        if self.kind == "cancel":
            entry["status"] = "cancelled"
            return entry
        entry["status"] = "resolved"
        if self.kind == "answer":
            if self.payload is not ABSENT:
                entry["payload"] = self.payload
        else:
            entry["payload"] = self.envelope()
        return entry


_OUTCOMES: dict[DecisionKind, DecisionOutcome] = {
    "approve": "approved",
    "reject": "rejected",
    "cancel": "cancelled",
    "answer": "answered",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class DecisionTarget:
    """What a decision is checked against: the schemas of the interrupt it answers.

    For a client, a schema is `None` when the client does not hold the tool or definition.
    """

    kind: InterruptKind
    #: Approvals: the tool's input schema, which edited arguments must match.
    input_schema: Schema | None = None
    #: Approvals: the payload schema of each branch (`None`: that branch takes no payload).
    approve_schema: Schema | None = None
    reject_schema: Schema | None = None
    #: Generic interrupts: the response schema; client tools: the output schema.
    response_schema: Schema | None = None
    #: Client tools: the tool's name, for the server's message.
    tool_name: str = ""

    def branch_schema(self, approved: bool) -> Schema | None:
        return self.approve_schema if approved else self.reject_schema


@dataclass(frozen=True, kw_only=True, slots=True)
class DecisionProblem:
    """Why a decision cannot be taken, as an item error carries it (code, message, path)."""

    code: ItemInterruptErrorCode
    message: str
    path: tuple[str | int, ...] | None = None
    #: Who is at fault: the answer ("client") or the server's own definition ("server").
    source: Side = "client"


#: A client asked to stage an approval that is neither granted nor refused.
APPROVED_BOOLEAN_REQUIRED = DecisionProblem(
    code="invalid-payload", message="Tool approval resolutions require an approved boolean."
)


def edited_args_of(entry: Any) -> Any:
    """The arguments an approval's resume `entry` changed its call to; `None` when it changed
    none (or is no approval)."""
    decision = read_decision(entry, "approval")
    if isinstance(decision, DecisionProblem) or not decision.edited:
        return None
    return decision.edited_args


def read_decision(entry: Any, kind: InterruptKind) -> Decision | DecisionProblem:
    """The decision a resume entry carries, or why it carries none.

    `entry` is an `ag_ui` `ResumeEntry` or its wire JSON. An approval's payload is a boolean
    or an envelope `{approved, editedArgs?, payload?}` with nothing else in it.
    """
    interrupt_id, status, payload = _entry_fields(entry)
    if status == "cancelled":
        if payload is not ABSENT:
            return DecisionProblem(
                code="invalid-payload",
                message=f"Cancelled interrupt {interrupt_id} must not include a payload.",
            )
        return Decision.cancel(interrupt_id)
    if kind != "approval":
        return Decision.answer(interrupt_id, payload)
    if isinstance(payload, bool):
        return Decision.approval(interrupt_id, payload)
    if not isinstance(payload, Mapping) or not isinstance(payload.get("approved"), bool):
        return DecisionProblem(
            code="invalid-payload",
            message=f"Approval {interrupt_id} must be a boolean or decision envelope.",
        )
    extra = sorted(set(payload) - _ENVELOPE_FIELDS)
    if extra:
        return DecisionProblem(
            code="invalid-payload",
            message=f"Approval {interrupt_id} envelope is invalid: unexpected field {extra[0]}.",
            path=(extra[0],),
        )
    return Decision.approval(
        interrupt_id,
        bool(payload["approved"]),
        payload=payload.get("payload", ABSENT),
        edited_args=payload.get("editedArgs", ABSENT),
    )


def _entry_fields(entry: Any) -> tuple[str, str, Any]:
    if isinstance(entry, Mapping):
        return str(entry.get("interruptId")), str(entry.get("status")), entry.get("payload", ABSENT)
    # An `ag_ui` model: a payload sent as `null` is a payload; one left out is not.
    payload = entry.payload if "payload" in entry.model_fields_set else ABSENT
    return entry.interrupt_id, entry.status, payload


def check_decision(
    decision: Decision, target: DecisionTarget, *, side: Side = "server"
) -> list[DecisionProblem]:
    """What is wrong with `decision` as the answer to `target` (empty when nothing is).

    On the server a schema that cannot validate anything is the item's
    `invalid-response-schema`; a client skips it and leaves the verdict to the server.
    """
    if decision.kind == "cancel":
        return []
    try:
        if target.kind == "approval":
            return _approval_problems(decision, target, side)
        if target.kind == "client-tool":
            return _output_problems(decision, target, side)
        return _response_problems(decision, target, side)
    except UnusableSchemaError as error:
        return [
            DecisionProblem(
                code="invalid-response-schema",
                message=f"Interrupt {decision.interrupt_id} could not be validated: {error}",
                source="server",
            )
        ]


def _problem(schema: Schema | None, value: Any, side: Side) -> SchemaProblem | None:
    if schema is None or (side == "client" and not schema_is_usable(schema)):
        return None
    return schema_problem(schema, value)


def _approval_problems(
    decision: Decision, target: DecisionTarget, side: Side
) -> list[DecisionProblem]:
    interrupt_id = decision.interrupt_id
    approved = decision.kind == "approve"
    if decision.kind not in ("approve", "reject"):
        return [
            DecisionProblem(
                code="invalid-payload",
                message=f"Approval {interrupt_id} must be a boolean or decision envelope.",
            )
        ]
    if decision.edited:
        if not approved:
            return [
                DecisionProblem(
                    code="invalid-edited-args",
                    message="Rejected tool approvals cannot edit tool arguments.",
                )
            ]
        if target.input_schema is None and side == "server":
            return [
                DecisionProblem(
                    code="invalid-edited-args",
                    message=f"Approval {interrupt_id} cannot edit arguments without an input "
                    "schema.",
                )
            ]
        problem = _problem(target.input_schema, decision.edited_args, side)
        if problem is not None:
            return [
                _worded(
                    problem, "invalid-edited-args", side,
                    prefix=f"Approval {interrupt_id} edited arguments are invalid: ",
                    at=("editedArgs",),
                )
            ]  # fmt: skip
    branch = target.branch_schema(approved)
    which = "approve" if approved else "reject"
    if branch is None:
        if decision.payload is ABSENT:
            return []
        if side == "client":
            message = "This approval branch does not accept a payload."
            return [DecisionProblem(code="invalid-payload", message=message)]
        return [
            DecisionProblem(
                code="invalid-payload",
                message=f"Approval {interrupt_id} does not accept a payload for the {which} "
                "decision.",
                path=("payload",),
            )
        ]
    if decision.payload is ABSENT:
        message = (
            "This approval branch requires a payload."
            if side == "client"
            else f"Approval {interrupt_id} requires a payload for the {which} decision."
        )
        return [DecisionProblem(code="invalid-payload", message=message)]
    problem = _problem(branch, decision.payload, side)
    if problem is None:
        return []
    return [
        _worded(
            problem, "invalid-payload", side,
            prefix=f"Approval {interrupt_id} payload is invalid: ", at=("payload",),
        )
    ]  # fmt: skip


def _output_problems(
    decision: Decision, target: DecisionTarget, side: Side
) -> list[DecisionProblem]:
    schema = target.response_schema
    if schema is None:
        return []
    given = decision.payload is not ABSENT
    problem = _problem(schema, decision.payload if given else None, side)
    if side == "client":
        return [_as_is(problem, "invalid-tool-output")] if problem is not None else []
    if problem is None and given:
        return []
    message = problem.message if problem is not None else "an output is required"
    return [
        DecisionProblem(
            code="invalid-tool-output",
            message=f"Tool {target.tool_name} output is invalid: {message}",
            path=problem.path if problem is not None else None,
        )
    ]


def _response_problems(
    decision: Decision, target: DecisionTarget, side: Side
) -> list[DecisionProblem]:
    schema = target.response_schema
    if schema is None:
        return []
    interrupt_id = decision.interrupt_id
    if decision.payload is ABSENT and side == "server":
        return [
            DecisionProblem(
                code="invalid-payload",
                message=f"Interrupt {interrupt_id} payload is invalid: a response is required.",
            )
        ]
    problem = _problem(schema, decision.payload, side)
    if problem is None:
        return []
    prefix = f"Interrupt {interrupt_id} payload is invalid: "
    return [_worded(problem, "invalid-payload", side, prefix=prefix)]


def _as_is(problem: SchemaProblem, code: ItemInterruptErrorCode) -> DecisionProblem:
    """A client reports the schema's own words, at the value's own path."""
    return DecisionProblem(code=code, message=problem.message, path=problem.path or None)


def _worded(
    problem: SchemaProblem,
    code: ItemInterruptErrorCode,
    side: Side,
    *,
    prefix: str,
    at: tuple[str, ...] = (),
) -> DecisionProblem:
    """A schema's problem with a value: the client's words, or the server's, which name the
    interrupt (`prefix`) and give the path from the resume payload (`at`)."""
    if side == "client":
        return _as_is(problem, code)
    return DecisionProblem(
        code=code, message=prefix + problem.message, path=(*at, *problem.path) or None
    )

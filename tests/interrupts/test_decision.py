"""The Decision value: one reading and one writing of an answer, and one set of checks that
the server and the client word each in their own way."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import ResumeEntry

from chat_app.interrupts import (
    ABSENT,
    Decision,
    DecisionProblem,
    DecisionTarget,
    InterruptKind,
    check_decision,
    read_decision,
)

REASON = {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}
CENTS = {"type": "object", "properties": {"cents": {"type": "integer"}}, "required": ["cents"]}
APPROVAL = DecisionTarget(kind="approval", input_schema=CENTS, reject_schema=REASON)


@pytest.mark.parametrize(
    ("decision", "kind"),
    [
        (Decision.approval("approval_c1", True), "approval"),
        (Decision.approval("approval_c1", True, edited_args={"cents": 5}), "approval"),
        (Decision.approval("approval_c1", False, payload={"reason": "no"}), "approval"),
        (Decision.cancel("approval_c1"), "approval"),
        (Decision.answer("ship", {"speed": "express"}), "generic"),
        (Decision.answer("ship", None), "generic"),
        (Decision.cancel("ship"), "generic"),
        (Decision.answer("client_tool_c2", {"now": "12:00"}), "client-tool"),
    ],
)
def test_a_decision_reads_back_from_its_resume_entry_as_json_and_as_a_model(
    decision: Decision, kind: InterruptKind
) -> None:
    entry = decision.resume_entry()
    assert read_decision(entry, kind) == decision
    assert read_decision(ResumeEntry.model_validate(entry), kind) == decision


def test_an_answer_without_a_payload_stays_without_one() -> None:
    entry = {"interruptId": "ship", "status": "resolved"}
    decision = read_decision(entry, "generic")
    assert isinstance(decision, Decision) and decision.payload is ABSENT
    assert decision.resume_entry() == entry


def test_a_bare_boolean_is_an_approval_and_is_written_back_as_an_envelope() -> None:
    entry = {"interruptId": "approval_c1", "status": "resolved", "payload": False}
    decision = read_decision(entry, "approval")
    assert decision == Decision.approval("approval_c1", False)
    assert isinstance(decision, Decision)
    assert (decision.approved, decision.outcome, decision.edited) == (False, "rejected", False)
    assert decision.resume_entry()["payload"] == {"approved": False}


@pytest.mark.parametrize(
    ("entry", "message", "path"),
    [
        (
            {"interruptId": "approval_c1", "status": "cancelled", "payload": {}},
            "Cancelled interrupt approval_c1 must not include a payload.",
            None,
        ),
        (
            {"interruptId": "approval_c1", "status": "resolved", "payload": "yes"},
            "Approval approval_c1 must be a boolean or decision envelope.",
            None,
        ),
        (
            {"interruptId": "approval_c1", "status": "resolved", "payload": {"approved": True,
                                                                             "note": "x"}},
            "Approval approval_c1 envelope is invalid: unexpected field note.",
            ("note",),
        ),
    ],
)
def test_an_entry_that_carries_no_decision_says_why(
    entry: dict[str, Any], message: str, path: tuple[str, ...] | None
) -> None:
    assert read_decision(entry, "approval") == DecisionProblem(
        code="invalid-payload", message=message, path=path
    )


def test_the_server_and_the_client_word_the_same_rule_each_their_way() -> None:
    missing = Decision.approval("approval_c1", False)
    assert check_decision(missing, APPROVAL) == [
        DecisionProblem(
            code="invalid-payload",
            message="Approval approval_c1 requires a payload for the reject decision.",
        )
    ]
    assert check_decision(missing, APPROVAL, side="client") == [
        DecisionProblem(code="invalid-payload", message="This approval branch requires a payload.")
    ]
    wrong = Decision.approval("approval_c1", True, edited_args={"cents": "nine"})
    (server,) = check_decision(wrong, APPROVAL)
    (client,) = check_decision(wrong, APPROVAL, side="client")
    assert (server.code, client.code) == ("invalid-edited-args", "invalid-edited-args")
    assert server.message == f"Approval approval_c1 edited arguments are invalid: {client.message}"
    assert (server.path, client.path) == (("editedArgs", "cents"), ("cents",))


def test_a_client_checks_only_what_it_can_know() -> None:
    unknown_tool = DecisionTarget(kind="approval")
    edited = Decision.approval("approval_c1", True, edited_args={"cents": 1})
    assert check_decision(edited, unknown_tool, side="client") == []
    assert [p.code for p in check_decision(edited, unknown_tool)] == ["invalid-edited-args"]
    answer = Decision.answer("ship", "x")
    # A schema that is no schema, or whose `$ref` points at nothing (in it, or in another
    # document, which is never fetched): the server says so; a client leaves it to it.
    for schema in (
        {"type": "no-such-type"},
        {"$ref": "#/$defs/missing"},
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
    ):
        unusable = DecisionTarget(kind="generic", response_schema=schema)
        assert check_decision(answer, unusable, side="client") == []
        (problem,) = check_decision(answer, unusable)
        assert (problem.code, problem.source) == ("invalid-response-schema", "server")
    # As jsonschema follows them: within the schema, to a draft's meta-schema it holds, and
    # before 2019-09 not beside a `$ref` (whose siblings those drafts do not read).
    for schema, value in (
        ({"$ref": "#/$defs/speed", "$defs": {"speed": {"enum": ["x"]}}}, "x"),
        ({"$ref": "https://json-schema.org/draft/2020-12/schema"}, {"type": "string"}),
        ({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {}},
          "$ref": "#/definitions/s", "properties": {"ignored": {"$ref": "#/nowhere"}}}, "x"),
    ):  # fmt: skip
        found = DecisionTarget(kind="generic", response_schema=schema)
        assert check_decision(Decision.answer("ship", value), found) == [], schema


@pytest.mark.parametrize(
    ("decision", "target", "codes"),
    [
        (Decision.approval("a", True), APPROVAL, []),
        (Decision.approval("a", False, payload={"reason": "no"}), APPROVAL, []),
        (Decision.approval("a", True, payload={"x": 1}), APPROVAL, ["invalid-payload"]),
        (Decision.approval("a", False, edited_args={"cents": 1}, payload={"reason": "n"}),
         APPROVAL, ["invalid-edited-args"]),
        (Decision.cancel("a"), APPROVAL, []),
        (Decision.answer("a", {"approved": True}), APPROVAL, ["invalid-payload"]),
        (Decision.answer("s"), DecisionTarget(kind="generic", response_schema=REASON),
         ["invalid-payload"]),
        (Decision.answer("s", {"reason": 3}), DecisionTarget(kind="generic",
                                                             response_schema=REASON),
         ["invalid-payload"]),
        (Decision.answer("s", 3), DecisionTarget(kind="generic"), []),
        (Decision.answer("c"), DecisionTarget(kind="client-tool", response_schema=REASON,
                                              tool_name="clock"), ["invalid-tool-output"]),
    ],
)  # fmt: skip
def test_each_rule_of_an_answer_is_a_problem_with_its_code(
    decision: Decision, target: DecisionTarget, codes: list[str]
) -> None:
    assert [problem.code for problem in check_decision(decision, target)] == codes

"""Checking a person's answer before it is staged (contract §4.5).

Owns `check_approval`, `check_generic` and `check_client_tool_output`. Every schema is a raw
JSON Schema and is validated with `jsonschema` (TanStack's client skips raw schemas; we do
not). A schema that is not itself valid JSON Schema (another dialect) is not used. Returns
the payload to stage, or the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chat_app.interrupts import (
    ABSENT,
    ItemInterruptErrorCode,
    schema_is_usable,
    schema_problem,
)

from ._tools import ClientInterruptDefinition, ClientTool

__all__ = ["Invalid", "Valid", "check_approval", "check_client_tool_output", "check_generic"]


@dataclass(frozen=True, slots=True)
class Valid:
    payload: object


@dataclass(frozen=True, kw_only=True, slots=True)
class Invalid:
    code: ItemInterruptErrorCode
    message: str
    path: tuple[str | int, ...] | None = None


def _check(
    schema: Mapping[str, object] | None, value: object, code: ItemInterruptErrorCode
) -> Invalid | None:
    if schema is None or not schema_is_usable(schema):
        return None
    problem = schema_problem(schema, value)
    if problem is None:
        return None
    return Invalid(code=code, message=problem.message, path=problem.path or None)


def check_generic(
    definition: ClientInterruptDefinition | None, response_schema: object, response: object
) -> Valid | Invalid:
    schema = definition.response_schema if definition is not None else response_schema
    problem = _check(schema if isinstance(schema, Mapping) else None, response, "invalid-payload")
    return problem or Valid(response)


def check_client_tool_output(tool: ClientTool | None, output: object) -> Valid | Invalid:
    problem = _check(tool.output_schema if tool else None, output, "invalid-tool-output")
    return problem or Valid(output)


def check_approval(tool: ClientTool | None, candidate: object) -> Valid | Invalid:
    """`{approved, editedArgs?, payload?}` → the staged envelope, as `validateApprovalCandidate`."""
    if not isinstance(candidate, Mapping) or not isinstance(candidate.get("approved"), bool):
        return Invalid(
            code="invalid-payload", message="Tool approval resolutions require an approved boolean."
        )
    approved = bool(candidate["approved"])
    edited_args = candidate.get("editedArgs", ABSENT)
    if not approved and edited_args is not ABSENT:
        return Invalid(
            code="invalid-edited-args",
            message="Rejected tool approvals cannot edit tool arguments.",
        )
    if edited_args is not ABSENT:
        problem = _check(tool.input_schema if tool else None, edited_args, "invalid-edited-args")
        if problem is not None:
            return problem
    schema = tool.branch_schema(approved) if tool is not None else None
    payload = candidate.get("payload", ABSENT)
    if schema is None and payload is not ABSENT:
        return Invalid(
            code="invalid-payload", message="This approval branch does not accept a payload."
        )
    if schema is not None and payload is ABSENT:
        return Invalid(code="invalid-payload", message="This approval branch requires a payload.")
    if schema is not None:
        problem = _check(schema, payload, "invalid-payload")
        if problem is not None:
            return problem
    envelope: dict[str, object] = {"approved": approved}
    if edited_args is not ABSENT:
        envelope["editedArgs"] = edited_args
    if schema is not None:
        envelope["payload"] = payload
    return Valid(envelope)

"""The edit form's reach: of a tool call's arguments, those the rule in force lets an
approver change (`EditLimit`), the form cut down to them, what it says of the rest, and the
arguments its answer approves. Pure Python, no Reflex.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from chat_app.client import GenericInterrupt, InterruptItem, ToolApprovalInterrupt
from chat_app.interrupts import POLICY_METADATA_KEY
from chat_app.trust.identity import spelled_out
from chat_app.trust.policy import all_of, editable_shown


def form_schema(
    item: InterruptItem, form: str, limits: EditLimit | None = None
) -> tuple[Mapping[str, Any] | None, Any]:
    """The schema of one of a decision's forms, and the value its fields start from. The
    edit form holds only the arguments `limits` (its rule's) lets an approver change."""
    if isinstance(item, ToolApprovalInterrupt):
        schemas = {
            "approve": item.approve_schema,
            "reject": item.reject_schema,
            "edit": _editable_schema(item.input_schema, limits),
        }
        return schemas.get(form), item.original_args if form == "edit" else None
    if isinstance(item, GenericInterrupt):
        return item.response_schema, None
    return None, None


#: The rule that judges an edit of an item, and the arguments it lets an approver change.
EditLimit = tuple[str, tuple[str, ...]]
#: An item's `EditLimit`; `None` when any argument may change.
EditLimits = Callable[[InterruptItem], EditLimit | None]

#: Keywords that tie properties to each other or count them: a form cut down to some of
#: the properties could not meet them, so a schema with one is shown whole.
_WHOLE_SCHEMA_KEYWORDS = (
    "$ref", "allOf", "anyOf", "oneOf", "not", "if", "dependencies", "dependentSchemas",
    "dependentRequired", "patternProperties", "propertyNames", "minProperties",
    "maxProperties", "unevaluatedProperties",
)  # fmt: skip


def pause_edit_limits(item: InterruptItem) -> EditLimit | None:
    """The `EditLimit` the pause's policy metadata gave (`editable`), for a page that knows
    no policy of its own (`chat_app.ui.session.edit_limits` reads the rule in force)."""
    editable = editable_shown(item.metadata)
    if editable is None:
        return None
    shown = (item.metadata or {}).get(POLICY_METADATA_KEY)
    return str(shown.get("rule") or "") if isinstance(shown, Mapping) else "", editable


def _editable_schema(
    schema: Mapping[str, Any] | None, limits: EditLimit | None
) -> Mapping[str, Any] | None:
    """`schema` with only the properties `limits` lets be changed (`None` when none may
    be). A schema not made of plain properties stays whole: the server refuses what the
    rule does not allow, and the card says why."""
    if limits is None or schema is None:
        return schema
    if not limits[1]:
        return None
    properties = schema.get("properties")
    if (schema.get("type") != "object" or not isinstance(properties, Mapping)
            or any(key in schema for key in _WHOLE_SCHEMA_KEYWORDS)):  # fmt: skip
        return schema
    editable = limits[1]
    if not any(name in properties for name in editable):
        return None
    required = schema.get("required")
    return {
        **schema,
        "properties": {name: sub for name, sub in properties.items() if name in editable},
        **({"required": [name for name in required if name in editable]}
           if isinstance(required, list) else {}),
    }  # fmt: skip


def edited_arguments(item: InterruptItem, value: Any, limits: EditLimit | None) -> Any:
    """The arguments an edit form's `value` approves: the fields the form holds in place of
    the call's own, which stand for every other argument (the form leaves out those the
    rule, `limits`, does not let be changed)."""
    if limits is None or not isinstance(item, ToolApprovalInterrupt):
        return value
    original = item.original_args
    held = _editable_schema(item.input_schema, limits)
    if held is None or held is item.input_schema:
        return value  # the form held every argument: the server says what it refuses
    if not isinstance(value, Mapping) or not isinstance(original, Mapping):
        return value
    fields = held.get("properties") or {}
    merged: dict[str, Any] = {}
    for name in dict.fromkeys([*original, *value]):
        if name in fields:
            if name in value:
                merged[name] = value[name]
        elif name in original:
            merged[name] = original[name]
    return merged


def edit_note(item: InterruptItem, limits: EditLimit | None) -> str:
    """What the edit form says of the arguments it leaves out, by their fields' titles:
    "Rule large-transfers lets an approver change only Amount."; "" when any may be
    changed."""
    if limits is None:
        return ""
    rule, editable = limits
    by = f"Rule {spelled_out(rule)}" if rule else "The policy"
    if not editable:
        return f"{by} lets nobody change the arguments."
    schema = item.input_schema if isinstance(item, ToolApprovalInterrupt) else None
    properties = (schema or {}).get("properties")
    titled = properties if isinstance(properties, Mapping) else {}

    def title(name: str) -> str:
        field = titled.get(name)
        given = field.get("title") if isinstance(field, Mapping) else None
        return spelled_out(given if isinstance(given, str) and given else name)

    return f"{by} lets an approver change only {all_of([title(n) for n in editable])}."

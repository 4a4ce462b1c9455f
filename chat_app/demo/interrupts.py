"""The demo's generic interrupts and the middleware that asks them.

`ship order N` pauses before the model for a shipping form; `plan release` pauses for a plan
review with a display payload; `deploy` adds a foreign, unbound pause from a simulated
workflow engine beside the deploy approval.
"""

from __future__ import annotations

import json
import re
from typing import Any

from chat_app.agent import (
    Middleware,
    Resolutions,
    RunContext,
    define_interrupt,
)
from chat_app.agent.middleware import HookResult
from chat_app.interrupts import ToolResume

SHIPPING = define_interrupt(
    "shipping-speed",
    response={
        "type": "object",
        "title": "Shipping",
        "properties": {
            "speed": {
                "type": "string",
                "title": "Shipping speed",
                "enum": ["standard", "express", "overnight"],
                "default": "standard",
            },
            "giftWrap": {
                "type": "boolean",
                "title": "Gift wrap",
                "description": "Wrap the parcel as a gift.",
                "default": False,
            },
        },
        "required": ["speed", "giftWrap"],
        "additionalProperties": False,
        # Shown in this order; the wire sorts `properties` by name.
        "x-order": ["speed", "giftWrap"],
    },
)

RELEASE_PLAN = define_interrupt(
    "release-plan",
    payload={
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "changes": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["title", "changes"],
    },
    response={
        "type": "object",
        "properties": {
            "approved": {"type": "boolean", "title": "Approve this plan"},
            "note": {"type": "string", "title": "Note", "maxLength": 500},
        },
        "required": ["approved"],
        "additionalProperties": False,
    },
)

_SHIP = re.compile(r"\bship order\s+#?(\w+)", re.IGNORECASE)
_PLAN = re.compile(r"\bplan release\b", re.IGNORECASE)


def last_user_text(ctx: RunContext) -> str:
    for message in reversed(ctx.messages):
        if message.role == "user":
            return message.content if isinstance(message.content, str) else ""
    return ""


def _answered_since_user(ctx: RunContext) -> bool:
    for message in reversed(ctx.messages):
        if message.role == "user":
            return False
        if message.role == "assistant":
            return True
    return False


class DemoInterrupts(Middleware):
    """Asks the demo's generic questions and hands the answers to the model."""

    async def before_model(self, ctx: RunContext) -> HookResult:
        if ctx.is_continuation or ctx.iteration > 0 or _answered_since_user(ctx):
            return None
        text = last_user_text(ctx)
        if match := _SHIP.search(text):
            order = match.group(1)
            return [
                SHIPPING.request(
                    key=f"order-{order}",
                    reason="shipping_speed",
                    message=f"How should order {order} ship?",
                )
            ]
        if _PLAN.search(text):
            return [
                RELEASE_PLAN.request(
                    key="release-2026.12",
                    reason="plan_review",
                    message="Review the release plan before it goes out.",
                    payload={
                        "title": "Release 2026.12",
                        "changes": [
                            "Faster approvals in the ops desk",
                            "Audit export as JSON lines",
                            "Fix: drafts survive a reload",
                        ],
                    },
                )
            ]
        return None

    async def before_tools(self, ctx: RunContext) -> HookResult:
        last = ctx.messages[-1]
        names = [call.function.name for call in (getattr(last, "tool_calls", None) or [])]
        if "deploy" in names:
            ctx.foreign_interrupts.append(
                {
                    "id": f"workflow-freeze-{ctx.run_id}",
                    "reason": "workflow:change_freeze",
                    "message": "Change-freeze sign-off is pending in the release workflow engine.",
                    "metadata": {"source": "release-workflow"},
                }
            )
        return None

    async def on_interrupt_resolution(
        self, ctx: RunContext, resolutions: Resolutions
    ) -> ToolResume | None:
        for item in resolutions.all():
            note: dict[str, Any] = {
                "interrupt": item.request.definition.id,
                "key": item.request.key,
                "status": item.status,
            }
            if item.status == "resolved":
                note["response"] = item.response
            ctx.tell_model(json.dumps(note))
        return "continue"

"""The ops desk's tools: money, refunds, projects, email, invoices, deploys, keys, and two
client tools."""

from __future__ import annotations

import secrets
from typing import Any

from chat_app.agent import Tool, tool

#: The most a transfer, a refund or an invoice moves in the demo (its schemas say so, and
#: an approver's edit is held to it).
MAX_AMOUNT = 1_000_000


def _id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def _transfer(args: dict[str, Any]) -> dict[str, Any]:
    return {"receipt": _id("rcpt"), "recipient": args["recipient"], "amount": args["amount"]}


def _delete_project(args: dict[str, Any]) -> dict[str, Any]:
    return {"deleted": args["name"]}


def _send_email(args: dict[str, Any]) -> dict[str, Any]:
    return {"messageId": _id("msg"), "to": args["to"], "subject": args["subject"]}


def _pay_invoice(args: dict[str, Any]) -> dict[str, Any]:
    return {"paid": args["invoice"], "amount": args["amount"], "confirmation": _id("pay")}


def _deploy(args: dict[str, Any]) -> dict[str, Any]:
    return {"deployment": _id("dep"), "service": args["service"], "version": args["version"]}


def _refund(args: dict[str, Any]) -> dict[str, Any]:
    return {"refund": _id("rfd"), "order": args["order"], "amount": args["amount"]}


def _rotate_keys(args: dict[str, Any]) -> dict[str, Any]:
    return {"rotated": args["environment"], "keyId": _id("key")}


def _ship_order(args: dict[str, Any]) -> dict[str, Any]:
    return {"order": args["order"], "speed": args["speed"], "giftWrap": args["giftWrap"],
            "tracking": _id("trk")}  # fmt: skip


TRANSFER = tool(
    "transfer",
    description="Send money to a person.",
    input={
        "type": "object",
        "properties": {
            "recipient": {"type": "string", "minLength": 1, "title": "Recipient"},
            "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_AMOUNT,
                       "title": "Amount"},
        },
        "required": ["recipient", "amount"],
        "additionalProperties": False,
    },
    needs_approval=True,
    approval={
        "reject": {
            "type": "object",
            "properties": {
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "title": "Reason",
                    "description": "Why the transfer is refused; the agent reads this.",
                }
            },
            "required": ["reason"],
            "additionalProperties": False,
        }
    },
    execute=_transfer,
)

DELETE_PROJECT = tool(
    "delete_project",
    description="Delete a project and everything in it.",
    input={
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1, "title": "Project"}},
        "required": ["name"],
        "additionalProperties": False,
    },
    needs_approval=True,
    execute=_delete_project,
)

SEND_EMAIL = tool(
    "send_email",
    description="Send an email.",
    input={
        "type": "object",
        "properties": {
            "to": {"type": "string", "format": "email", "title": "To"},
            "subject": {"type": "string", "minLength": 1, "maxLength": 120, "title": "Subject"},
            "body": {"type": "string", "title": "Body"},
        },
        "required": ["to", "subject", "body"],
        "additionalProperties": False,
    },
    needs_approval=True,
    execute=_send_email,
)

PAY_INVOICE = tool(
    "pay_invoice",
    description="Pay one supplier invoice.",
    input={
        "type": "object",
        "properties": {
            "invoice": {"type": "string", "title": "Invoice"},
            "supplier": {"type": "string", "title": "Supplier"},
            "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_AMOUNT,
                       "title": "Amount"},
        },
        "required": ["invoice", "supplier", "amount"],
        "additionalProperties": False,
    },
    needs_approval=True,
    execute=_pay_invoice,
)

DEPLOY = tool(
    "deploy",
    description="Deploy a service version to production.",
    input={
        "type": "object",
        "properties": {
            "service": {"type": "string", "title": "Service"},
            "version": {"type": "string", "title": "Version"},
        },
        "required": ["service", "version"],
        "additionalProperties": False,
    },
    needs_approval=True,
    execute=_deploy,
)

REFUND = tool(
    "refund",
    description="Refund an order, in full or in part.",
    input={
        "type": "object",
        "properties": {
            "order": {"type": "string", "minLength": 1, "title": "Order"},
            "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_AMOUNT,
                       "title": "Amount"},
        },
        "required": ["order", "amount"],
        "additionalProperties": False,
    },
    needs_approval=True,
    execute=_refund,
)

ROTATE_KEYS = tool(
    "rotate_keys",
    description="Rotate the signing keys of an environment (old keys stop working).",
    input={
        "type": "object",
        "properties": {
            "environment": {
                "type": "string",
                "enum": ["production", "staging"],
                "title": "Environment",
            }
        },
        "required": ["environment"],
        "additionalProperties": False,
    },
    needs_approval=True,
    execute=_rotate_keys,
)

SHIP_ORDER = tool(
    "ship_order",
    description="Ship an order with the chosen speed.",
    input={
        "type": "object",
        "properties": {
            "order": {"type": "string"},
            "speed": {"type": "string", "enum": ["standard", "express", "overnight"]},
            "giftWrap": {"type": "boolean"},
        },
        "required": ["order", "speed", "giftWrap"],
        "additionalProperties": False,
    },
    execute=_ship_order,
)

GET_LOCAL_TIME = tool(
    "get_local_time",
    description="Read the user's local clock and time zone (runs in the client).",
    input={"type": "object", "properties": {}, "additionalProperties": False},
    output={
        "type": "object",
        "properties": {"time": {"type": "string"}, "timeZone": {"type": "string"}},
        "required": ["time", "timeZone"],
    },
)

GET_LOCATION = tool(
    "get_location",
    description="Read the user's location from their browser (runs in the client, after approval).",
    input={"type": "object", "properties": {}, "additionalProperties": False},
    # A position, or `{"error": …}`: a client tool that fails answers its error
    # (`docs/protocol.md` §4.9), which is checked against this schema like any output.
    output={
        "type": "object",
        "properties": {
            "latitude": {"type": "number", "minimum": -90, "maximum": 90},
            "longitude": {"type": "number", "minimum": -180, "maximum": 180},
            "accuracy": {"type": "number", "minimum": 0, "description": "Metres."},
            "label": {"type": "string"},
            "error": {"type": "string", "description": "Why no position was read."},
        },
        "oneOf": [{"required": ["latitude", "longitude"]}, {"required": ["error"]}],
    },
    needs_approval=True,
)

DEMO_TOOLS: list[Tool] = [
    TRANSFER, DELETE_PROJECT, SEND_EMAIL, PAY_INVOICE, DEPLOY, SHIP_ORDER,
    GET_LOCAL_TIME, GET_LOCATION, REFUND, ROTATE_KEYS,
]  # fmt: skip

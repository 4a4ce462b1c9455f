"""The scripted model of the demo: phrases in, tool calls and replies out. Deterministic."""

from __future__ import annotations

import json
import re
from typing import Any

from ag_ui.core import ToolMessage

from chat_app.agent import ModelRequest, ScriptedCall, ScriptedTurn, last_user_text
from chat_app.interrupts import DEFAULT_DENIED_RESULT, is_expired_result
from chat_app.trust.policy import all_of

from .tools import MAX_AMOUNT

HELP = (
    "I'm the ops desk demo agent. Try one of these:\n\n"
    "- **transfer 25 to Ada** — a payment that needs your approval (rejecting asks for a reason)\n"
    "- **delete project apollo** — a plain yes/no approval\n"
    "- **email ada@example.com about Launch** — an email whose fields you can edit first\n"
    "- **ship order 42** — a form asking how to ship\n"
    "- **plan release** — review a plan and approve it with a note\n"
    "- **pay invoices** — three approvals in one batch\n"
    "- **what time is it** — your browser answers, no decision needed\n"
    "- **share my location** — asks you first, then your browser answers\n"
    "- **deploy** — an approval next to a pause owned by another system\n"
    "- **transfer 5000 to Ada** — a large payment: finance approves it, not you\n"
    "- **refund 20 to order 42** — small enough for the policy to approve alone\n"
    "- **rotate production keys** — two people from ops must approve"
)

INVOICES = [
    {"invoice": "INV-1001", "supplier": "Acme Paper", "amount": 120.5},
    {"invoice": "INV-1002", "supplier": "Globex Cloud", "amount": 980},
    {"invoice": "INV-1003", "supplier": "Initech Coffee", "amount": 64.25},
]

_TRANSFER = re.compile(r"\btransfer\s+\$?(\d+(?:\.\d+)?)\s+to\s+(\w[\w .'-]*)", re.IGNORECASE)
_DELETE = re.compile(r"\bdelete project\s+(\S+)", re.IGNORECASE)
_EMAIL = re.compile(r"\bemail\s+(\S+@\S+)\s+about\s+(.+)", re.IGNORECASE)
_REFUND = re.compile(
    r"\brefund\s+\$?(\d+(?:\.\d+)?)\s+(?:to|for|on)\s+order\s+(\w+)", re.IGNORECASE
)
_ROTATE = re.compile(r"\brotate\s+(production|staging)\s+keys\b", re.IGNORECASE)


def demo_script(request: ModelRequest) -> ScriptedTurn:
    """Decide the next turn from the latest user message and what happened since."""
    results = _results_since_user(request)
    if results:
        return ScriptedTurn(text=" ".join(_said(results)))
    if request.notes:
        return _after_generic(request.notes)
    return _first_turn(last_user_text(request).strip())


#: What the demo says to a sum past `MAX_AMOUNT`, rather than a call its schema refuses.
TOO_MUCH = f"The demo moves at most {MAX_AMOUNT:,} at a time: ask for less."


def _first_turn(text: str) -> ScriptedTurn:
    lowered = text.lower()
    for pattern in (_TRANSFER, _REFUND):
        if (asked := pattern.search(text)) and float(asked.group(1)) > MAX_AMOUNT:
            return ScriptedTurn(text=TOO_MUCH)
    if match := _TRANSFER.search(text):
        amount = float(match.group(1))
        recipient = match.group(2).strip()
        return _call(
            f"I'll send {_money(amount)} to {recipient} once it is approved.",
            "transfer",
            {"recipient": recipient, "amount": int(amount) if amount.is_integer() else amount},
        )
    if match := _REFUND.search(text):
        amount = float(match.group(1))
        return _call(
            f"Refunding {_money(amount)} to order {match.group(2)}.",
            "refund",
            {"order": match.group(2), "amount": int(amount) if amount.is_integer() else amount},
        )
    if match := _ROTATE.search(text):
        environment = match.group(1).lower()
        return _call(
            f"I'll rotate the {environment} keys once it is approved.",
            "rotate_keys",
            {"environment": environment},
        )
    if match := _DELETE.search(text):
        return _call(
            f"Deleting project {match.group(1)} needs your go-ahead.",
            "delete_project",
            {"name": match.group(1)},
        )
    if match := _EMAIL.search(text):
        to, topic = match.group(1), match.group(2).strip().rstrip(".")
        return _call(
            f"Here's a draft to {to}. Edit it if you like, then approve.",
            "send_email",
            {
                "to": to,
                "subject": topic,
                "body": f"Hi,\n\nA quick note about {topic}.\n\nBest,\nThe ops desk",
            },
        )
    if "pay invoices" in lowered:
        return ScriptedTurn(
            text="Three invoices are due. Each payment needs your approval.",
            calls=[ScriptedCall(name="pay_invoice", arguments=invoice) for invoice in INVOICES],
        )
    if "what time" in lowered:
        return _call("Let me check your clock.", "get_local_time", {})
    if "location" in lowered:
        return _call("I'd like to read your location.", "get_location", {})
    if re.search(r"\bdeploy\b", lowered):
        return _call(
            "Deploying checkout 2.4.1 to production.",
            "deploy",
            {"service": "checkout", "version": "2.4.1"},
        )
    return ScriptedTurn(text=HELP)


def _call(text: str, name: str, arguments: dict[str, Any]) -> ScriptedTurn:
    return ScriptedTurn(text=text, calls=[ScriptedCall(name=name, arguments=arguments)])


def _money(amount: float) -> str:
    return f"{amount:,.2f}".removesuffix(".00")


#: A tool result since the last user message: `(tool name, content, outcome, label)`.
Result = tuple[str, Any, str, str]


def _results_since_user(request: ModelRequest) -> list[Result]:
    """Each tool result since the last user message: `(tool name, content, outcome, label)`,
    the outcome `ok`, `error` (refused, cancelled, or the tool's error as its content) or
    `failed` (a client tool that ran and has no answer: no content, only the message's
    `error`, which becomes the content); the label the call's first text argument
    ("INV-1002"), which tells calls of one tool apart."""
    names: dict[str, str] = {}
    labels: dict[str, str] = {}
    results: list[Result] = []
    messages = request.messages
    start = len(messages)  # read back to the last user message only: a long history is long
    while start > 0 and messages[start - 1].role != "user":
        start -= 1
    for message in messages[start:]:
        if message.role == "assistant":
            for call in message.tool_calls or []:
                names[call.id] = call.function.name
                labels[call.id] = _first_text(call.function.arguments)
        elif isinstance(message, ToolMessage):
            try:
                content = json.loads(str(message.content))
            except json.JSONDecodeError:
                content = message.content
            outcome = "ok" if message.error is None else "error"
            if content is None and message.error is not None:
                content, outcome = message.error, "failed"
            call_id = message.tool_call_id
            results.append((names.get(call_id, "tool"), content, outcome, labels.get(call_id, "")))
    return results


def _first_text(arguments: str) -> str:
    try:
        values = json.loads(arguments)
    except json.JSONDecodeError:
        return ""
    if not isinstance(values, dict):
        return ""
    return next((value for value in values.values() if isinstance(value, str)), "")


def _said(results: list[Result]) -> list[str]:
    """A sentence for each result; calls of one tool that came out the same (three invoices
    rejected without a reason) in one sentence naming each, not the same sentence again."""
    said: list[str] = []
    group: list[Result] = []

    def close() -> None:
        name, content, outcome, _ = group[0]
        labels = [label for *_, label in group]
        if len(group) > 1 and all(labels) and len(set(labels)) == len(labels):
            together = _describe(name, content, outcome, all_of(labels))
            if together != _describe(name, content, outcome):  # the sentence names them
                said.append(together)
                return
        said.extend(_describe(name, content, outcome) for name, content, outcome, _ in group)

    for result in results:
        name, content, outcome, _ = result
        if group and _describe(*group[0][:3]) != _describe(name, content, outcome):
            close()
            group = []
        group.append(result)
    if group:
        close()
    return said


def _sentence(text: str) -> str:
    """`text` as the end of a one-line sentence: its spaces and line breaks made single
    spaces, with a full stop unless it has its own."""
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _describe(name: str, content: Any, outcome: str, among: str = "") -> str:
    """What the model says of one result, or of several alike, `among` naming them."""
    data = content if isinstance(content, dict) else {}
    of = f" for {among}" if among else ""
    if outcome == "failed":  # it ran, in the client, and has no answer: no decision was refused
        what = "read your location" if name == "get_location" else f"run {name.replace('_', ' ')}"
        return f"I couldn't {what}: {_sentence(str(content))}"
    if is_expired_result(data) and data.get("approvedBy"):  # a quorum not reached in time
        how = str(data["error"]).removeprefix("Expired: ")
        return f"The {name.replace('_', ' ')}{of} expired before enough people approved: {how}"
    if is_expired_result(data):  # nobody decided: not a refusal, so never "denied"
        return (
            f"Nobody decided on the {name.replace('_', ' ')}{of} in time: the request expired "
            "unanswered, so it did not run."
        )
    if data.get("error") == "Tool execution cancelled":
        return f"Cancelled: {name.replace('_', ' ')} did not run{of}."
    if data == DEFAULT_DENIED_RESULT:  # rejected with one click: no reason was given
        return f"Understood — {name.replace('_', ' ')} was not run{of}; no reason was given."
    if outcome == "error" or "error" in data:
        reason = _sentence(str(data.get("reason") or data.get("error") or "no reason given"))
        return f"Understood — {name.replace('_', ' ')} was not run{of}. Reason: {reason}"
    if name == "transfer":
        amount = _money(float(data["amount"]))
        return f"Sent {amount} to {data['recipient']}. Receipt id: {data['receipt']}."
    if name == "refund":
        amount = _money(float(data["amount"]))
        return f"Refunded {amount} to order {data['order']} (refund {data['refund']})."
    if name == "rotate_keys":
        return f"Rotated the {data['rotated']} keys; the new key is {data['keyId']}."
    if name == "delete_project":
        return f"Project {data['deleted']} is deleted."
    if name == "send_email":
        return f'Email "{data["subject"]}" sent to {data["to"]} (id {data["messageId"]}).'
    if name == "pay_invoice":
        amount = _money(float(data["amount"]))
        return f"Paid {data['paid']} ({amount}), confirmation {data['confirmation']}."
    if name == "deploy":
        return f"Deployed {data['service']} {data['version']} as {data['deployment']}."
    if name == "ship_order":
        wrap = ", gift-wrapped" if data.get("giftWrap") else ""
        order, speed, tracking = data["order"], data["speed"], data["tracking"]
        return f"Order {order} ships {speed}{wrap}. Tracking number: {tracking}."
    if name == "get_local_time":
        return f"It's {data.get('time')} where you are ({data.get('timeZone')})."
    if name == "get_location":
        label = data.get("label") or f"{data.get('latitude')}, {data.get('longitude')}"
        accuracy = data.get("accuracy")
        number = isinstance(accuracy, int | float) and not isinstance(accuracy, bool)
        within = f" (±{accuracy:.0f} m)" if number else ""
        return f"Got it: you're at {label}{within}."
    return f"{name} returned {json.dumps(content)}."


def _after_generic(notes: Any) -> ScriptedTurn:
    note = json.loads(notes[-1])
    response = note.get("response") or {}
    if note["interrupt"] == "shipping-speed":
        order = note["key"].removeprefix("order-")
        if note["status"] == "expired":
            return ScriptedTurn(
                text=f"Nobody answered in time, so order {order} stays where it is."
            )
        if note["status"] == "cancelled":
            return ScriptedTurn(text=f"Okay, order {order} stays where it is.")
        return ScriptedTurn(
            text=f"Shipping order {order} {response['speed']}.",
            calls=[
                ScriptedCall(
                    name="ship_order",
                    arguments={
                        "order": order,
                        "speed": response["speed"],
                        "giftWrap": bool(response.get("giftWrap")),
                    },
                )
            ],
        )
    if note["status"] == "expired":
        return ScriptedTurn(text="The release plan review expired unanswered; nothing changes.")
    if note["status"] == "cancelled":
        return ScriptedTurn(text="The release plan review was cancelled; nothing changes.")
    verdict = "approved" if response.get("approved") else "sent back"
    extra = f" Note: {response['note']}" if response.get("note") else ""
    return ScriptedTurn(text=f"Release plan {verdict}.{extra}")

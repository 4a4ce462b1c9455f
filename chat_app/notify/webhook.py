"""The webhook channel: a signed JSON POST, or a Slack incoming-webhook message.

A JSON receiver authenticates each request by its signature (`verify`); Slack authenticates
by its secret URL, so there the signature is sent only if a secret is set.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

import httpx

from chat_app.interrupts.http_answers import server_message, trim

from .notice import (
    DeliveryError,
    Notice,
    iso_utc,
    together_intro,
    together_subject,
)
from .settings import NotifySettings

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "json_body",
    "post",
    "sign",
    "slack_body",
    "verify",
]

TIMESTAMP_HEADER = "X-Chat-App-Timestamp"
SIGNATURE_HEADER = "X-Chat-App-Signature"
#: The delivery's key (its decision's random id, the event, the channel), the same on every
#: attempt: a notice is sent at least once (a worker that dies sending it leaves it to be
#: sent again), and a receiver drops a repeat by it.
DELIVERY_HEADER = "X-Chat-App-Delivery"
USER_AGENT = "chat_app-notify"
_SCHEME = "sha256="
#: Enough of a refusing receiver's answer to see why, not so much that one row's error
#: fills the admin page.
_ERROR_BODY_LIMIT = 300


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """`sha256=<hex>`: HMAC-SHA256 under `secret` of `timestamp`, a dot, and the body's exact
    bytes. The timestamp is inside the MAC so that it cannot be moved forward on a captured
    request."""
    mac = hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return _SCHEME + mac.hexdigest()


def verify(
    secret: bytes,
    timestamp: str,
    body: bytes,
    signature: str,
    *,
    now: float,
    tolerance_seconds: float = 300,
) -> bool:
    """Whether a request came from this app, for a receiver to call before acting on it.

    A receiver reads the raw body (before any JSON parsing: the bytes are signed, not the
    object), the `X-Chat-App-Timestamp` header (Unix seconds) and the
    `X-Chat-App-Signature` header (`sha256=<hex>`), then::

        if not verify(secret, timestamp, body, signature, now=time.time()):
            return 401

    False when the signature does not match (compared in constant time, so timing reveals
    nothing of the right one), or when the timestamp is more than `tolerance_seconds` from
    `now` in either direction: a captured request replayed later is refused. Inside the
    window a replay still verifies; a receiver that must act once keys on the body's
    `deliveryId`, the same on every attempt of one notice (which may come twice after a
    crash mid-send) and signed with the body, unlike the `X-Chat-App-Delivery` header that
    repeats it. Not on `decisionId` and `event`: a decision filed again for other people (a
    policy change) is a second "decision-needed", for them.
    """
    try:
        sent_at = int(timestamp)
    except ValueError:
        return False
    if abs(now - sent_at) > tolerance_seconds:
        return False
    expected = sign(secret, timestamp, body).encode("ascii")
    return hmac.compare_digest(expected, signature.encode("utf-8", "replace"))


def json_body(notice: Notice, delivery_id: str = "") -> bytes:
    """The JSON format's body: camelCase fields, times ISO 8601 UTC (or null). `deliveryId`,
    the outbox's key of this notice for its receiver (the same on every attempt; null when
    sent outside the outbox), is in the body so that the signature covers it."""
    payload: dict[str, Any] = {
        "deliveryId": delivery_id or None,
        "event": notice.event,
        "decisionId": notice.decision_id,
        "threadId": notice.thread_id,
        "kind": notice.kind,
        ("tool" if notice.kind == "tool" else "question"): notice.name,
        "summary": notice.summary,
        "args": notice.args,
        "requester": {"email": notice.requester_email, "name": notice.requester_name},
        "rule": notice.rule,
        "link": notice.link,
        "expiresAt": iso_utc(notice.expires_at) if notice.expires_at else None,
        "waitingSince": iso_utc(notice.waiting_since),
        "note": notice.note,
        "recipients": [{"email": r.email, "name": r.name} for r in notice.recipients],
        "quorum": {"needed": notice.quorum, "approvedBy": list(notice.approved_by)}
        if notice.quorum > 1 else None,
    }
    if notice.event == "decided":
        payload |= {"outcome": notice.outcome, "decidedBy": notice.decided_by or None,
                    "decidedByEmail": notice.decided_by_email or None,
                    "reason": notice.reason}  # fmt: skip
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _mrkdwn(text: str) -> str:
    """Text as Slack shows it literally: `&`, `<`, `>` are its markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(notices: Notice | Sequence[Notice]) -> bytes:
    """A Slack incoming-webhook message: `text` (notifications and clients without blocks),
    then `blocks`: what is asked and by whom, and a button that opens it. Several notices of
    one conversation and event (a batch's) are one message: who asks once, then a section for
    each, and one button."""
    notices = [notices] if isinstance(notices, Notice) else list(notices)
    first = notices[0]
    together = len(notices) > 1
    sections = []
    if together:
        intro = together_intro(notices, to_requester=False)
        sections.append(_section([_mrkdwn(intro)]))
    for notice in notices:
        lines = [f"*{_mrkdwn(notice.subject())}*"]
        if notice.kind == "question" and notice.summary:
            lines.append(_mrkdwn(notice.summary))
        if not together:
            lines.append(f"Asked by {_mrkdwn(notice.requester.display)}")
        details = []
        if notice.rule:
            details.append(f"rule {_mrkdwn(notice.rule)}")
        if notice.approvals and notice.event != "decided":
            details.append(f"approvals {_mrkdwn(notice.approvals)}")
        if notice.expires_at and notice.event != "decided":
            details.append(f"expires {notice.expires_in_words}")
        if details:
            lines.append(" · ".join(details))
        if notice.note:
            lines.append(_mrkdwn(notice.note))
        sections.append(_section(lines))
    kinds = {notice.kind for notice in notices}
    if first.event == "decided":
        button = "Open the conversation"
    elif kinds == {"tool"}:
        button = "Open the approval" if not together else "Open the approvals"
    else:
        button = "Answer it" if not together else "Open them"
    payload = {
        "text": f"{_mrkdwn(together_subject(notices))} <{first.link}|{button}>",
        "blocks": [
            *sections,
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": button},
                        "url": first.link,
                        "style": "primary",
                    }
                ],
            },
        ],
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _section(lines: list[str]) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}}


async def post(
    client: httpx.AsyncClient,
    settings: NotifySettings,
    notices: Notice | Sequence[Notice],
    *,
    now: float,
    delivery_id: str = "",
) -> None:
    """Send the notice (several, to Slack: `slack_body`) to the configured webhook, signed at
    `now` (Unix seconds), as the outbox's delivery `delivery_id` (the first's, of several).

    Raises:
        DeliveryError: no webhook is configured, it could not be reached, or it answered
            other than 2xx. The message never shows the URL (a Slack URL is its secret).
        ValueError: several notices for the JSON format, which posts each alone.
    """
    if not settings.webhook_url:
        raise DeliveryError("no webhook is configured (CHAT_APP_WEBHOOK_URL)")
    if settings.webhook_format == "slack":
        body = slack_body(notices)
    elif isinstance(notices, Notice) or len(notices) == 1:
        body = json_body(notices if isinstance(notices, Notice) else notices[0], delivery_id)
    else:
        raise ValueError("the JSON webhook posts one notice at a time")
    timestamp = str(int(now))
    headers = {
        "Content-Type": "application/json", "User-Agent": USER_AGENT, TIMESTAMP_HEADER: timestamp,
    }  # fmt: skip
    if delivery_id:
        headers[DELIVERY_HEADER] = delivery_id
    if settings.webhook_secret:
        headers[SIGNATURE_HEADER] = sign(settings.webhook_secret, timestamp, body)
    try:
        response = await client.post(
            settings.webhook_url, content=body, headers=headers, timeout=settings.timeout_seconds
        )
    except httpx.TimeoutException:
        raise DeliveryError(
            f"the webhook did not answer within {settings.timeout_seconds:g} s"
        ) from None
    except httpx.HTTPError as error:
        raise DeliveryError(
            f"the webhook could not be reached: {type(error).__name__}: {error}"
        ) from None
    if not 200 <= response.status_code < 300:
        # As a person reads it: a JSON error's message, an HTML page's title, not its markup.
        said = server_message(response.content, response.headers.get("content-type", ""))
        text = trim(said, _ERROR_BODY_LIMIT)
        raise DeliveryError(
            f"the webhook answered {response.status_code} {response.reason_phrase}"
            + (f": {text}" if text else "")
        )

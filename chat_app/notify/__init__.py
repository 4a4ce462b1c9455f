"""Telling people that a decision needs them, and whoever asked how it ended: by webhook
(signed JSON, or Slack) and email.

The desk builds a `Notice` and queues it in the `Outbox` (the app's database); a `Deliverer`
in every worker sends what is due and retries what failed, so a receiver that is down never
holds up a decision and a restart loses nothing. `NotifySettings.from_env` reads where
notices go. `webhook.verify` is what a receiver checks a request with. Imports `trust` (the
database, audit entries) and the wire layer's types.
"""

from .deliverer import Deliverer
from .notice import OUTCOME_HEADINGS, DeliveryError, Event, Notice, NoticeKind, Recipient
from .outbox import (
    Delivery,
    DeliveryStatus,
    Outbox,
    OutboxError,
    delivery_key,
    webhook_addressees,
)
from .settings import (
    MAX_BACKOFF_SECONDS,
    NotifyConfigError,
    NotifySettings,
    SmtpServer,
    WebhookFormat,
)
from .webhook import sign, verify

__all__ = [
    "Deliverer",
    "Delivery",
    "DeliveryError",
    "DeliveryStatus",
    "Event",
    "MAX_BACKOFF_SECONDS",
    "Notice",
    "NoticeKind",
    "NotifyConfigError",
    "NotifySettings",
    "OUTCOME_HEADINGS",
    "Outbox",
    "OutboxError",
    "Recipient",
    "SmtpServer",
    "WebhookFormat",
    "delivery_key",
    "sign",
    "verify",
    "webhook_addressees",
]

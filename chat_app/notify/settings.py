"""Where notices go and how hard to try: `NotifySettings`, read from the environment.

Every variable is optional: with none set, nothing is configured (`channels` is empty) and the
outbox stores nothing. A value that is set but wrong stops the start with `NotifyConfigError`,
whose message begins with the variable's name and says what it takes, because a typo here
otherwise shows up days later as nobody being told. Secrets (the webhook key, an SMTP
password) never appear in a message or a `repr`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import getaddresses
from typing import Literal
from urllib.parse import SplitResult, unquote, urlsplit

__all__ = [
    "MAX_BACKOFF_SECONDS",
    "NotifyConfigError",
    "NotifySettings",
    "SmtpServer",
    "WebhookFormat",
]

WebhookFormat = Literal["json", "slack"]
Channel = Literal["webhook", "email"]

#: However many attempts have failed, the next one is at most this far away: a receiver that
#: comes back after a long outage hears within a quarter of an hour.
MAX_BACKOFF_SECONDS = 900.0

WEBHOOK_URL = "CHAT_APP_WEBHOOK_URL"
WEBHOOK_FORMAT = "CHAT_APP_WEBHOOK_FORMAT"
WEBHOOK_SECRET = "CHAT_APP_WEBHOOK_SECRET"
SMTP_URL = "CHAT_APP_SMTP_URL"
MAIL_FROM = "CHAT_APP_MAIL_FROM"
PUBLIC_URL = "CHAT_APP_PUBLIC_URL"
ATTEMPTS = "CHAT_APP_NOTIFY_ATTEMPTS"
BACKOFF = "CHAT_APP_NOTIFY_BACKOFF_SECONDS"
TIMEOUT = "CHAT_APP_NOTIFY_TIMEOUT_SECONDS"

_SMTP_HELP = "use smtp://user:pass@host:587 (STARTTLS) or smtps://host:465 (TLS)."
_STARTTLS_PORT = 587
_TLS_PORT = 465


class NotifyConfigError(ValueError):
    """A notification variable is set to something unusable; the message starts with its
    name."""


@dataclass(frozen=True, slots=True)
class SmtpServer:
    """The mail server, from `CHAT_APP_SMTP_URL`."""

    host: str
    port: int
    #: `smtps://`: TLS from the first byte. Otherwise STARTTLS: required when there are
    #: credentials (a password must never cross the wire in clear), else used when offered.
    implicit_tls: bool
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def require_starttls(self) -> bool:
        return not self.implicit_tls and self.username is not None


@dataclass(frozen=True, slots=True)
class NotifySettings:
    """Who is told, through what, and how often to try. The defaults configure nothing."""

    webhook_url: str | None = None
    webhook_format: WebhookFormat = "json"
    #: The HMAC key for `X-Chat-App-Signature` (`webhook.sign`).
    webhook_secret: bytes | None = field(default=None, repr=False)
    smtp: SmtpServer | None = None
    #: `From:` of the emails: an address, or `Name <address>`.
    mail_from: str | None = None
    #: Links in notices start here (no trailing slash).
    public_url: str = "http://localhost:8000"
    #: `public_url` was set (`CHAT_APP_PUBLIC_URL`), not the default.
    public_url_set: bool = False
    #: Tries per delivery, the first included; after the last it is `failed`.
    attempts: int = 8
    #: The wait after the first failed attempt; it doubles after each further one.
    backoff_seconds: float = 5.0
    #: One HTTP request or SMTP conversation may take this long.
    timeout_seconds: float = 10.0
    #: A notice that goes out with others of its conversation (an email, a Slack message)
    #: waits this long after it is queued, for the rest of its batch, which a look of the
    #: timers queues one decision at a time: they then go as one message.
    gather_seconds: float = 2.0

    @property
    def gathered(self) -> tuple[Channel, ...]:
        """The channels whose notices of one conversation and event go as one message (to
        each person): email, and the webhook when it is Slack's (a channel is one reader)."""
        return ("email", "webhook") if self.webhook_format == "slack" else ("email",)

    @property
    def channels(self) -> tuple[Channel, ...]:
        """The configured channels, in a fixed order."""
        found: list[Channel] = []
        if self.webhook_url:
            found.append("webhook")
        if self.smtp is not None and self.mail_from:
            found.append("email")
        return tuple(found)

    @property
    def webhook_shown(self) -> str:
        """The webhook as logs and the trail name it: its scheme, host and port alone,
        `https://hooks.slack.com/…` (a Slack URL's path is its key; a user, password or query
        may be one too); "" without one."""
        return _host_only(self.webhook_url) if self.webhook_url else ""

    def describe(self) -> str:
        """One line for the log at start: each channel and where it goes (no secret: a
        webhook by its host alone, SMTP by host and port), and where links lead; `none`."""
        said = []
        if "webhook" in self.channels:
            signed = ", signed" if self.webhook_secret else ""
            said.append(f"webhook to {self.webhook_shown} ({self.webhook_format}{signed})")
        if "email" in self.channels and self.smtp is not None:
            tls = (
                "TLS"
                if self.smtp.implicit_tls
                else "STARTTLS"
                if self.smtp.require_starttls
                else "STARTTLS when offered"
            )
            said.append(
                f"email from {self.mail_from} via {self.smtp.host}:{self.smtp.port} ({tls})"
            )
        if not said:
            return "none"
        return "; ".join(said) + f"; links lead to {self.public_url}"

    def link(self, thread_id: str) -> str:
        """Where a person opens the conversation a notice is about."""
        return f"{self.public_url}/c/{thread_id}"

    def backoff(self, failed_attempts: int) -> float:
        """Seconds to wait after the `failed_attempts`-th failed attempt (1 for the first)."""
        exponent = max(failed_attempts, 1) - 1
        # Capped before the power can overflow a float.
        if exponent >= 64:
            return MAX_BACKOFF_SECONDS
        return min(self.backoff_seconds * 2.0**exponent, MAX_BACKOFF_SECONDS)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str], *, default_public_url: str = "http://localhost:8000"
    ) -> NotifySettings:
        """The settings the variables name; an empty variable counts as unset.

        Raises:
            NotifyConfigError: a value is unusable, or one needs another that is missing.
        """

        def get(name: str) -> str | None:
            value = environ.get(name, "").strip()
            return value or None

        webhook_url = get(WEBHOOK_URL)
        if webhook_url is not None:
            _http_url(
                WEBHOOK_URL,
                webhook_url,
                example="https://hooks.example.com/chat-app",
                secret_path=True,
            )
        webhook_format = _webhook_format(get(WEBHOOK_FORMAT))
        secret = get(WEBHOOK_SECRET)
        for name in (WEBHOOK_SECRET, WEBHOOK_FORMAT):
            if webhook_url is None and get(name) is not None:  # half set up, as for email
                raise NotifyConfigError(
                    f"{name} is set but {WEBHOOK_URL} is not: notices go to the webhook at that "
                    f"address; set {WEBHOOK_URL} (e.g. https://hooks.example.com/chat-app), or "
                    f"unset {name} to send none."
                )
        if webhook_url is not None and webhook_format == "json" and secret is None:
            raise NotifyConfigError(
                f"{WEBHOOK_SECRET} is required with {WEBHOOK_FORMAT}=json: set a long random "
                "string; receivers check each request's X-Chat-App-Signature with it."
            )
        smtp_url = get(SMTP_URL)
        smtp = _smtp_server(smtp_url) if smtp_url is not None else None
        mail_from = get(MAIL_FROM)
        if mail_from is not None:
            _mail_from(mail_from)
            if smtp is None:  # email half set up is a mistake to say, not a silence
                raise NotifyConfigError(
                    f"{MAIL_FROM} is set but {SMTP_URL} is not: email goes out through an SMTP "
                    f"server; set {SMTP_URL} (e.g. smtp://user:pass@mail.example.com:587), or "
                    f"unset {MAIL_FROM} to send no email."
                )
        elif smtp is not None:
            raise NotifyConfigError(
                f"{MAIL_FROM} is required with {SMTP_URL}: use an address such as "
                "approvals@example.com or 'Approvals <approvals@example.com>'."
            )
        given = get(PUBLIC_URL)
        public_url = given or default_public_url
        _http_url(PUBLIC_URL, public_url, example="https://chat.example.com")
        _base_url(PUBLIC_URL, public_url)
        return cls(
            webhook_url=webhook_url,
            webhook_format=webhook_format,
            webhook_secret=secret.encode() if secret is not None else None,
            smtp=smtp,
            mail_from=mail_from,
            public_url=public_url.rstrip("/"),
            public_url_set=bool(given),
            attempts=_attempts(get(ATTEMPTS)),
            backoff_seconds=_positive_seconds(BACKOFF, get(BACKOFF), default=5.0),
            timeout_seconds=_positive_seconds(TIMEOUT, get(TIMEOUT), default=10.0),
        )


def _hidden(value: str) -> str:
    """`value` as a message may show it: whatever follows `user:` before an `@` is a
    password, replaced by `***` (also in a value too broken to parse as a URL)."""
    head, at, tail = value.rpartition("@")
    if not at:
        return value
    slashes = head.find("//")
    colon = head.find(":", slashes + 2 if slashes >= 0 else 0)
    if colon < 0:
        return value
    return f"{head[: colon + 1]}***@{tail}"


def _split(name: str, value: str, problem: str, *, shown: str | None = None) -> SplitResult:
    """`value` split as a URL; one that is not, or whose port is not a port, refused with a
    message showing `shown` (`value` by default)."""
    quoted = repr(_hidden(value if shown is None else shown))
    try:
        parts = urlsplit(value)
    except ValueError:
        raise NotifyConfigError(f"{name}={quoted} {problem}") from None
    try:
        parts.port  # noqa: B018 - a port that is not a number raises only when read
    except ValueError:
        raise NotifyConfigError(
            f"{name}={quoted} has a port that is not a number from 1 to 65535."
        ) from None
    return parts


def _http_url(name: str, value: str, *, example: str, secret_path: bool = False) -> None:
    """Refuse what is not an http(s) URL with a host. With `secret_path` (a webhook: a Slack
    URL's path is its key) a message shows only what comes before the path."""
    problem = f"is not an http(s) URL with a host: use e.g. {example}."
    shown = _host_only(value) if secret_path else value
    parts = _split(name, value, problem, shown=shown)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise NotifyConfigError(f"{name}={_hidden(shown)!r} {problem}")


def _base_url(name: str, value: str) -> None:
    """Refuse an address links cannot be made from (`/c/<thread>` goes after its path): one
    with a query or a fragment, or with a user or password, which every email would carry."""
    parts = urlsplit(value)
    if parts.username is not None or parts.password is not None:
        raise NotifyConfigError(
            f"{name} holds a user or password, which every notice's link would show: give "
            "the address people open, e.g. https://chat.example.com."
        )
    if parts.query or parts.fragment or value.rstrip().endswith(("?", "#")):
        raise NotifyConfigError(
            f"{name}={value!r} has a query or a fragment; links are made by adding /c/<id> to "
            "the address: give it without ?… or #…, e.g. https://chat.example.com/ops."
        )


def _host_only(value: str) -> str:
    """`value`'s scheme, host and port, `https://hooks.slack.com/…`: a webhook's path is its
    key in Slack's, and a user, password, query or fragment may be one too. Read as text, so
    a value too broken to parse as a URL is shown alike."""
    start = value.find("//")
    start = start + 2 if start >= 0 else 0
    ends = [at for at in (value.find(mark, start) for mark in "/?#") if at >= 0]
    end = min(ends, default=len(value))
    _user, at, authority = value[start:end].rpartition("@")
    # "…" only where something was left out: a value with no path shows as it was typed.
    return f"{value[:start]}{authority}{'/…' if value[end:] or at else ''}"


def _webhook_format(value: str | None) -> WebhookFormat:
    if value is None:
        return "json"
    lowered = value.lower()
    if lowered == "json":
        return "json"
    if lowered == "slack":
        return "slack"
    raise NotifyConfigError(
        f"{WEBHOOK_FORMAT}={value!r} is not a webhook format: use json (signed JSON, "
        "the default) or slack (a Slack incoming webhook)."
    )


def _smtp_server(value: str) -> SmtpServer:
    problem = f"is not an SMTP URL: {_SMTP_HELP}"
    parts = _split(SMTP_URL, value, problem)
    scheme = parts.scheme.lower()
    if (
        scheme not in ("smtp", "smtps")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise NotifyConfigError(f"{SMTP_URL}={_hidden(value)!r} {problem}")
    port = parts.port
    if port == 0:
        raise NotifyConfigError(
            f"{SMTP_URL}={_hidden(value)!r} has port 0: use the server's port, "
            "587 for STARTTLS or 465 for TLS."
        )
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    if (username is None) != (password is None):
        raise NotifyConfigError(
            f"{SMTP_URL}={_hidden(value)!r} gives a user without a password or a password "
            "without a user: give both (smtp://user:pass@host:587; percent-encode @ : / in "
            "them) or neither."
        )
    implicit_tls = scheme == "smtps"
    return SmtpServer(
        host=parts.hostname,
        port=port or (_TLS_PORT if implicit_tls else _STARTTLS_PORT),
        implicit_tls=implicit_tls,
        username=username,
        password=password,
    )


def _mail_from(value: str) -> None:
    found = getaddresses([value])
    address = found[0][1] if len(found) == 1 else ""
    local, at, domain = address.rpartition("@")
    if (
        not at
        or not local
        or "." not in domain
        or any(c.isspace() for c in address)
        or "\n" in value
        or "\r" in value
    ):
        raise NotifyConfigError(
            f"{MAIL_FROM}={value!r} is not an email address: use e.g. approvals@example.com "
            "or 'Approvals <approvals@example.com>'."
        )


def _attempts(value: str | None) -> int:
    if value is None:
        return 8
    try:
        attempts = int(value)
    except ValueError:
        attempts = 0
    if attempts < 1:
        raise NotifyConfigError(
            f"{ATTEMPTS}={value!r} is not a whole number of at least 1: it is how many times "
            "a notice is tried (default 8)."
        )
    return attempts


def _positive_seconds(name: str, value: str | None, *, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise NotifyConfigError(
            f"{name}={value!r} is not a number of seconds above 0 (default {default:g})."
        )
    return seconds

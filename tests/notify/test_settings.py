"""`NotifySettings.from_env`: what each variable takes, and that a wrong value names its
variable (and never shows a secret)."""

from __future__ import annotations

import pytest

from chat_app.notify import MAX_BACKOFF_SECONDS, NotifyConfigError, NotifySettings, SmtpServer

WEBHOOK = {"CHAT_APP_WEBHOOK_URL": "https://hooks.example.com/in", "CHAT_APP_WEBHOOK_SECRET": "k"}
SMTP = {"CHAT_APP_SMTP_URL": "smtp://mail.example.com", "CHAT_APP_MAIL_FROM": "a@example.com"}


def test_nothing_set_configures_no_channel_and_the_defaults() -> None:
    settings = NotifySettings.from_env({})
    assert settings.channels == ()
    assert settings.public_url == "http://localhost:8000"
    assert (settings.attempts, settings.backoff_seconds, settings.timeout_seconds) == (8, 5, 10)
    assert settings.link("t1") == "http://localhost:8000/c/t1"
    empty = NotifySettings.from_env({"CHAT_APP_WEBHOOK_URL": " ", "CHAT_APP_SMTP_URL": ""})
    assert empty.channels == ()
    other = NotifySettings.from_env({}, default_public_url="http://127.0.0.1:9000")
    assert other.link("t1") == "http://127.0.0.1:9000/c/t1"


def test_every_variable_read() -> None:
    settings = NotifySettings.from_env(
        {
            "CHAT_APP_WEBHOOK_URL": "https://hooks.example.com/in",
            "CHAT_APP_WEBHOOK_FORMAT": "JSON",
            "CHAT_APP_WEBHOOK_SECRET": "s3cret",
            "CHAT_APP_SMTP_URL": "smtp://ops%40example.com:p%3Ass%2Fw@mail.example.com:2525",
            "CHAT_APP_MAIL_FROM": "Approvals <approvals@example.com>",
            "CHAT_APP_PUBLIC_URL": "https://chat.example.com/app/",
            "CHAT_APP_NOTIFY_ATTEMPTS": "3",
            "CHAT_APP_NOTIFY_BACKOFF_SECONDS": "0.5",
            "CHAT_APP_NOTIFY_TIMEOUT_SECONDS": "2.5",
        }
    )
    assert settings.channels == ("webhook", "email")
    assert settings.webhook_url == "https://hooks.example.com/in"
    assert settings.webhook_format == "json"
    assert settings.webhook_secret == b"s3cret"
    assert settings.smtp == SmtpServer(
        host="mail.example.com",
        port=2525,
        implicit_tls=False,
        username="ops@example.com",
        password="p:ss/w",
    )
    assert settings.smtp.require_starttls
    assert settings.mail_from == "Approvals <approvals@example.com>"
    assert settings.link("t9") == "https://chat.example.com/app/c/t9"
    assert (settings.attempts, settings.backoff_seconds, settings.timeout_seconds) == (3, 0.5, 2.5)
    shown = repr(settings)
    assert "p:ss/w" not in shown and "s3cret" not in shown


def test_smtp_ports_and_tls() -> None:
    plain = NotifySettings.from_env({**SMTP}).smtp
    assert plain == SmtpServer(host="mail.example.com", port=587, implicit_tls=False)
    assert not plain.require_starttls  # no password to protect: STARTTLS when offered
    tls = NotifySettings.from_env({**SMTP, "CHAT_APP_SMTP_URL": "smtps://u:p@mail.example.com"})
    assert tls.smtp is not None
    assert (tls.smtp.port, tls.smtp.implicit_tls, tls.smtp.require_starttls) == (465, True, False)


def test_slack_needs_no_secret_json_does() -> None:
    slack = NotifySettings.from_env(
        {"CHAT_APP_WEBHOOK_URL": "https://hooks.slack.com/x", "CHAT_APP_WEBHOOK_FORMAT": "slack"}
    )
    assert (slack.channels, slack.webhook_format, slack.webhook_secret) == (
        ("webhook",),
        "slack",
        None,
    )
    with pytest.raises(NotifyConfigError, match=r"^CHAT_APP_WEBHOOK_SECRET is required"):
        NotifySettings.from_env({"CHAT_APP_WEBHOOK_URL": "https://hooks.example.com/x"})


def test_the_backoff_doubles_and_is_capped() -> None:
    settings = NotifySettings(backoff_seconds=5)
    assert [settings.backoff(n) for n in (1, 2, 3, 4)] == [5, 10, 20, 40]
    assert settings.backoff(9) == 900 == settings.backoff(10_000) == MAX_BACKOFF_SECONDS


BAD = [
    ({"CHAT_APP_WEBHOOK_URL": "hooks.example.com/in"}, "CHAT_APP_WEBHOOK_URL", "http(s) URL"),
    ({"CHAT_APP_WEBHOOK_URL": "ftp://x/in"}, "CHAT_APP_WEBHOOK_URL", "http(s) URL"),
    ({"CHAT_APP_WEBHOOK_URL": "https:///in"}, "CHAT_APP_WEBHOOK_URL", "with a host"),
    ({**WEBHOOK, "CHAT_APP_WEBHOOK_FORMAT": "xml"}, "CHAT_APP_WEBHOOK_FORMAT", "json"),
    ({"CHAT_APP_SMTP_URL": "smtp//x"}, "CHAT_APP_SMTP_URL", "smtps://host:465"),
    ({"CHAT_APP_SMTP_URL": "http://mail.example.com"}, "CHAT_APP_SMTP_URL", "not an SMTP URL"),
    ({"CHAT_APP_SMTP_URL": "smtp://mail.example.com:x1"}, "CHAT_APP_SMTP_URL", "1 to 65535"),
    ({"CHAT_APP_SMTP_URL": "smtp://b:s3cret@m:99999"}, "CHAT_APP_SMTP_URL", "port that is not"),
    ({"CHAT_APP_WEBHOOK_URL": "https://h:70000/k"}, "CHAT_APP_WEBHOOK_URL", "1 to 65535"),
    ({"CHAT_APP_SMTP_URL": "smtp://mail.example.com:0"}, "CHAT_APP_SMTP_URL", "port 0"),
    ({"CHAT_APP_SMTP_URL": "smtp://u@mail.example.com"}, "CHAT_APP_SMTP_URL", "give both"),
    ({"CHAT_APP_SMTP_URL": "smtp://mail.example.com"}, "CHAT_APP_MAIL_FROM", "is required"),
    ({"CHAT_APP_MAIL_FROM": "approvals@example.com"}, "CHAT_APP_MAIL_FROM", "SMTP_URL is not"),
    ({**SMTP, "CHAT_APP_MAIL_FROM": "approvals"}, "CHAT_APP_MAIL_FROM", "email address"),
    ({**SMTP, "CHAT_APP_MAIL_FROM": "a@x.com, b@x.com"}, "CHAT_APP_MAIL_FROM", "email address"),
    ({"CHAT_APP_PUBLIC_URL": "chat.example.com"}, "CHAT_APP_PUBLIC_URL", "http(s) URL"),
    # Links are the address and /c/<id>: a query or fragment would swallow that.
    ({"CHAT_APP_PUBLIC_URL": "https://c.example.com?tenant=a"}, "CHAT_APP_PUBLIC_URL", "query"),
    ({"CHAT_APP_PUBLIC_URL": "https://c.example.com/#x"}, "CHAT_APP_PUBLIC_URL", "fragment"),
    ({"CHAT_APP_PUBLIC_URL": "https://c.example.com/?"}, "CHAT_APP_PUBLIC_URL", "without ?"),
    ({"CHAT_APP_PUBLIC_URL": "https://u:pw@c.example.com"}, "CHAT_APP_PUBLIC_URL", "password"),
    # Half a webhook is said, as half of email is.
    ({"CHAT_APP_WEBHOOK_SECRET": "s3cret"}, "CHAT_APP_WEBHOOK_SECRET", "WEBHOOK_URL is not"),
    ({"CHAT_APP_WEBHOOK_FORMAT": "slack"}, "CHAT_APP_WEBHOOK_FORMAT", "WEBHOOK_URL is not"),
    ({"CHAT_APP_NOTIFY_ATTEMPTS": "0"}, "CHAT_APP_NOTIFY_ATTEMPTS", "at least 1"),
    ({"CHAT_APP_NOTIFY_ATTEMPTS": "two"}, "CHAT_APP_NOTIFY_ATTEMPTS", "whole number"),
    ({"CHAT_APP_NOTIFY_BACKOFF_SECONDS": "0"}, "CHAT_APP_NOTIFY_BACKOFF_SECONDS", "above 0"),
    ({"CHAT_APP_NOTIFY_BACKOFF_SECONDS": "nan"}, "CHAT_APP_NOTIFY_BACKOFF_SECONDS", "seconds"),
    ({"CHAT_APP_NOTIFY_TIMEOUT_SECONDS": "-1"}, "CHAT_APP_NOTIFY_TIMEOUT_SECONDS", "above 0"),
    ({"CHAT_APP_NOTIFY_TIMEOUT_SECONDS": "soon"}, "CHAT_APP_NOTIFY_TIMEOUT_SECONDS", "seconds"),
]


@pytest.mark.parametrize(("environ", "variable", "says"), BAD, ids=lambda v: str(v)[:40])
def test_a_bad_value_names_its_variable_and_what_it_takes(
    environ: dict[str, str], variable: str, says: str
) -> None:
    with pytest.raises(NotifyConfigError) as raised:
        NotifySettings.from_env(environ)
    message = str(raised.value)
    assert message.startswith(variable), message
    assert says in message, message


def test_the_smtp_example_message() -> None:
    with pytest.raises(NotifyConfigError) as raised:
        NotifySettings.from_env({"CHAT_APP_SMTP_URL": "smtp//x"})
    assert str(raised.value) == (
        "CHAT_APP_SMTP_URL='smtp//x' is not an SMTP URL: use smtp://user:pass@host:587 "
        "(STARTTLS) or smtps://host:465 (TLS)."
    )


@pytest.mark.parametrize(
    "value",
    [
        "smtp//ops:hunter2@mail",
        "smtp://ops:hunter2@mail.example.com:port",
        "smtp://ops:hunter2@mail.example.com/path",
        "imap://ops:hunter2@mail.example.com",
        "ops:hunter2@mail.example.com",
        "smtp://ops:hun//ter2@mail.example.com:99999",
    ],
)
def test_a_password_is_never_shown(value: str) -> None:
    with pytest.raises(NotifyConfigError) as raised:
        NotifySettings.from_env({"CHAT_APP_SMTP_URL": value, "CHAT_APP_MAIL_FROM": "a@b.co"})
    message = str(raised.value)
    assert message.startswith("CHAT_APP_SMTP_URL=")
    assert "hunter2" not in message and "ter2" not in message, message
    assert "***" in message


def test_a_secret_is_never_shown() -> None:
    with pytest.raises(NotifyConfigError) as raised:
        NotifySettings.from_env(
            {"CHAT_APP_WEBHOOK_URL": "https://u:topsecret@/x", "CHAT_APP_WEBHOOK_SECRET": "k"}
        )
    assert "topsecret" not in str(raised.value)


def test_a_bad_webhook_url_is_shown_without_its_path() -> None:
    """A Slack webhook's path is its key: a start that stops on it must not print it."""
    with pytest.raises(NotifyConfigError) as refused:
        NotifySettings.from_env(
            {"CHAT_APP_WEBHOOK_URL": "ftp://hooks.slack.com/services/T0/B0/s3cr3tkey"}
        )
    message = str(refused.value)
    assert message.startswith("CHAT_APP_WEBHOOK_URL=")
    assert "s3cr3tkey" not in message and "hooks.slack.com/…" in message
    # A key in the query, with no path before it, or a user's password: not shown either.
    for url in ("ftp://hooks.example.com?token=s3cr3tkey", "ftp://bot:s3cr3tkey@hooks.example.com"):
        with pytest.raises(NotifyConfigError) as refused:
            NotifySettings.from_env({"CHAT_APP_WEBHOOK_URL": url})
        assert "s3cr3tkey" not in str(refused.value), url
        assert "'ftp://hooks.example.com/…'" in str(refused.value), url


def test_a_refused_webhook_url_is_shown_as_typed_when_nothing_of_it_is_hidden() -> None:
    """No "/…" added to what was typed when nothing followed the host ('notaurl/…' read as
    if a path had been left out)."""
    for typed in ("notaurl", "http://"):
        with pytest.raises(NotifyConfigError) as refused:
            NotifySettings.from_env({"CHAT_APP_WEBHOOK_URL": typed})
        assert str(refused.value).startswith(f"CHAT_APP_WEBHOOK_URL={typed!r} is not an http")


def test_a_refused_url_hides_its_password_and_a_webhooks_path() -> None:
    with pytest.raises(NotifyConfigError) as smtp:
        NotifySettings.from_env({"CHAT_APP_SMTP_URL": "smtp://bob:s3cret@mail:99999"})
    assert "s3cret" not in str(smtp.value) and "bob:***@mail:99999" in str(smtp.value)
    with pytest.raises(NotifyConfigError) as hook:
        NotifySettings.from_env({"CHAT_APP_WEBHOOK_URL": "https://hooks.example.com:0x/T0/key"})
    assert "key" not in str(hook.value) and "https://hooks.example.com:0x/…" in str(hook.value)


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/T0/B1/key",
        "https://bot:s3cretTok@hooks.example.com/T0/key",
        "https://hooks.example.com?token=s3cretTok",
        "https://hooks.example.com:8443/in#s3cretTok",
    ],
)
def test_a_webhook_is_named_by_its_host_alone(url: str) -> None:
    """Logs and the audit trail name the webhook without anything that may be its key."""
    shown = NotifySettings(webhook_url=url).webhook_shown
    assert shown.startswith("https://hooks.example.com") and shown.endswith("/…")
    assert "s3cret" not in shown and "key" not in shown and "T0" not in shown


def test_the_start_says_where_notices_go_and_no_secret() -> None:
    settings = NotifySettings.from_env(
        {
            "CHAT_APP_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B1/s3cretKey",
            "CHAT_APP_WEBHOOK_FORMAT": "slack",
            "CHAT_APP_SMTP_URL": "smtp://ops:hunter2@mail.example.com:2525",
            "CHAT_APP_MAIL_FROM": "Ops desk <desk@example.com>",
            "CHAT_APP_PUBLIC_URL": "https://desk.example.com",
        }
    )
    assert settings.describe() == (
        "webhook to https://hooks.slack.com/… (slack); email from Ops desk "
        "<desk@example.com> via mail.example.com:2525 (STARTTLS); links lead to "
        "https://desk.example.com"
    )
    assert NotifySettings().describe() == "none"

"""The email channel: one message per recipient, plain text with an HTML alternative, sent
over SMTP with aiosmtplib. Notices of one conversation that go out together (the decisions of
one batch, their reminders, how they ended) are one message (`render_together`).

Everything a notice says comes from the agent's arguments and people's names, so the HTML is
escaped throughout and the headers are kept to one line.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formataddr, formatdate, getaddresses, make_msgid

import aiosmtplib

from .notice import (
    DeliveryError,
    Notice,
    Recipient,
    in_words_utc,
    one_line,
    together_intro,
    together_subject,
)
from .settings import NotifySettings

__all__ = ["render", "render_together", "send"]


def _facts(notice: Notice) -> list[tuple[str, str]]:
    """What the message states, in order, as (label, value); both channels of the message
    show the same."""
    decided = notice.event == "decided"
    facts = [
        ("Tool" if notice.kind == "tool" else "Question", notice.name),
        ("Arguments" if notice.kind == "tool" else "Details", notice.summary),
        ("Asked by", notice.requester.display),
        ("Rule", notice.rule or ""),
        ("Approvals", "" if decided else notice.approvals),
        ("Expires", "" if decided else notice.expires_in_words),
        ("Asked at" if decided else "Waiting since", in_words_utc(notice.waiting_since)),
    ]
    return [(label, value) for label, value in facts if value]


def _action(notices: Sequence[Notice]) -> str:
    kinds = {notice.kind for notice in notices}
    if notices[0].event == "decided":
        return "Open the conversation"
    if kinds == {"tool"}:
        return "Open it to approve or reject"
    return "Open it to answer" if kinds == {"question"} else "Open it to decide"


def _text(notice: Notice, recipient: Recipient) -> str:
    lines = [f"Hello {recipient.name}," if recipient.name else "Hello,", ""]
    lines.append(notice.subject())
    if notice.note:
        lines.append(notice.note)
    lines.append("")
    width = max(len(label) for label, _ in _facts(notice)) + 1
    lines += [f"{label + ':':<{width}} {value}" for label, value in _facts(notice)]
    lines += ["", f"{_action([notice])}: {notice.link}", ""]
    return "\n".join(lines)


def _html(notice: Notice, recipient: Recipient) -> str:
    e = html.escape
    greeting = f"Hello {e(recipient.name)}," if recipient.name else "Hello,"
    note = f"<p>{e(notice.note)}</p>" if notice.note else ""
    rows = "".join(
        f'<tr><th align="left" style="padding-right:12px">{e(label)}</th><td>{e(value)}</td></tr>'
        for label, value in _facts(notice)
    )
    link = e(notice.link, quote=True)
    return (
        "<!doctype html><html><body>"
        f"<p>{greeting}</p><p><strong>{e(notice.subject())}</strong></p>{note}"
        f"<table>{rows}</table>"
        f'<p><a href="{link}">{e(_action([notice]))}</a></p>'
        f'<p style="color:#666">Or paste this address into your browser: {e(notice.link)}</p>'
        "</body></html>\n"
    )


def _item_facts(notice: Notice) -> list[tuple[str, str]]:
    """An item's facts in a message of several, less what its heading line says (the tool
    or question, a tool's arguments) and who asked (said once, above them all)."""
    said = {"Asked by", "Tool", "Question"} | ({"Arguments"} if notice.kind == "tool" else set())
    return [(label, value) for label, value in _facts(notice) if label not in said]


def _asked(notices: Sequence[Notice], recipient: Recipient) -> bool:
    """Whether `recipient` asked for what `notices` tell of (told how it ended, or asked to
    decide their own requests, where no rule asks anyone else)."""
    first = notices[0]
    return first.event == "decided" or recipient.email.lower() == first.requester_email.lower()


def _together_text(notices: Sequence[Notice], recipient: Recipient) -> str:
    lines = [
        f"Hello {recipient.name}," if recipient.name else "Hello,",
        "",
        together_intro(notices, to_requester=_asked(notices, recipient)),
    ]
    width = max((len(label) for n in notices for label, _ in _item_facts(n)), default=0) + 1
    for number, notice in enumerate(notices, 1):
        lines += ["", f"{number}. {notice.subject()}"]
        if notice.note:
            lines.append(f"   {notice.note}")
        lines += [f"   {label + ':':<{width}} {value}" for label, value in _item_facts(notice)]
    lines += ["", f"{_action(notices)}: {notices[0].link}", ""]
    return "\n".join(lines)


def _together_html(notices: Sequence[Notice], recipient: Recipient) -> str:
    e = html.escape
    greeting = f"Hello {e(recipient.name)}," if recipient.name else "Hello,"
    items = []
    for notice in notices:
        note = f"<br>{e(notice.note)}" if notice.note else ""
        rows = "".join(
            f'<tr><th align="left" style="padding-right:12px">{e(label)}</th>'
            f"<td>{e(value)}</td></tr>"
            for label, value in _item_facts(notice)
        )
        items.append(f"<li><p><strong>{e(notice.subject())}</strong>{note}</p>"
                     f"<table>{rows}</table></li>")  # fmt: skip
    link = e(notices[0].link, quote=True)
    intro = together_intro(notices, to_requester=_asked(notices, recipient))
    return (
        "<!doctype html><html><body>"
        f"<p>{greeting}</p><p>{e(intro)}</p><ol>{''.join(items)}</ol>"
        f'<p><a href="{link}">{e(_action(notices))}</a></p>'
        f'<p style="color:#666">Or paste this address into your browser: {e(notices[0].link)}</p>'
        "</body></html>\n"
    )


def render_together(
    notices: Sequence[Notice], recipient: Recipient, *, mail_from: str
) -> EmailMessage:
    """One message for one recipient telling them of several notices of one conversation,
    of one event (what `Deliverer` sends together): each with its facts, and the
    conversation's link once. A single notice is `render`'s message."""
    if not notices:
        raise ValueError("render_together: no notices")
    if len(notices) == 1:
        return render(notices[0], recipient, mail_from=mail_from)
    text, html_text = _together_text(notices, recipient), _together_html(notices, recipient)
    return _message(together_subject(notices), recipient, mail_from, text, html_text)


def render(notice: Notice, recipient: Recipient, *, mail_from: str) -> EmailMessage:
    """The message for one recipient: plain text, and the same as HTML."""
    return _message(notice.subject(), recipient, mail_from, _text(notice, recipient),
                    _html(notice, recipient))  # fmt: skip


def _message(
    subject: str, recipient: Recipient, mail_from: str, text: str, html_text: str
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = mail_from
    message["To"] = formataddr((one_line(recipient.name), recipient.email.strip()))
    message["Subject"] = subject
    message["Date"] = formatdate(usegmt=True)
    # Without a domain, make_msgid asks DNS for this host's name, which can stall a send.
    sender = getaddresses([mail_from])[0][1]
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or "localhost")
    # RFC 3834: out-of-office replies are not sent back to a robot.
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(text)
    message.add_alternative(html_text, subtype="html")
    return message


async def send(settings: NotifySettings, message: EmailMessage) -> None:
    """Hand `message` to the configured SMTP server.

    Raises:
        DeliveryError: no server is configured, or it could not be reached, refused the
            login or the message, or took longer than the timeout.
    """
    server = settings.smtp
    if server is None:
        raise DeliveryError("no SMTP server is configured (CHAT_APP_SMTP_URL)")
    try:
        await aiosmtplib.send(
            message,
            hostname=server.host,
            port=server.port,
            username=server.username,
            password=server.password,
            use_tls=server.implicit_tls,
            # True: refuse to go on without TLS (a password must not cross in clear);
            # None: upgrade when the server offers it.
            start_tls=False if server.implicit_tls else (True if server.require_starttls else None),
            timeout=settings.timeout_seconds,
        )
    except (aiosmtplib.SMTPException, OSError) as error:
        raise DeliveryError(
            f"SMTP {server.host}:{server.port}: {type(error).__name__}: {error}"
        ) from None

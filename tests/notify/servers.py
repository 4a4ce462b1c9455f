"""Real receivers for notices, on loopback: an HTTP server for webhooks and an SMTP server.

    with webhook_receiver(fail_first=3) as receiver:   # 500 three times, then 200
        ... settings = NotifySettings(webhook_url=receiver.url, ...)
        [request] = receiver.accepted

    with smtp_server() as smtp:
        ... settings = NotifySettings(smtp=smtp.server, mail_from=...)
        [mail] = smtp.messages

Both record what reached them before they answer, so by the time a send has returned the
record is there: tests read it without waiting.
"""

from __future__ import annotations

import email
import email.policy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from chat_app.notify import SmtpServer
from tests.live_server import free_port

__all__ = [
    "Mail",
    "Received",
    "SmtpReceiver",
    "WebhookReceiver",
    "closed_url",
    "smtp_server",
    "webhook_receiver",
]


@dataclass(frozen=True)
class Received:
    """One HTTP request and the status it was answered with."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    """Answers `fail_status` to the first `fail_first` requests, 200 after; while `hold()`
    is in force it takes each request and answers nothing until `let_go()`."""

    url: str
    fail_first: int = 0
    fail_status: int = 500
    #: What a refusal says, and as what (`Content-Type`; none by default).
    fail_body: bytes = b"receiver says no\n(on purpose)"
    fail_type: str = ""
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    answering: threading.Event = field(default_factory=threading.Event)

    def hold(self) -> None:
        self.answering.clear()

    def let_go(self) -> None:
        self.answering.set()

    @property
    def accepted(self) -> list[Received]:
        with self.lock:
            return [request for request in self.received if 200 <= request.status < 300]

    def _status_for_next(self) -> int:
        return self.fail_status if len(self.received) < self.fail_first else 200


@contextmanager
def webhook_receiver(
    fail_first: int = 0, *, fail_status: int = 500, **refusal: Any
) -> Iterator[WebhookReceiver]:
    """An HTTP server on a free loopback port that records every request (`refusal`:
    `fail_body`, `fail_type`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    receiver = WebhookReceiver(
        url=f"http://127.0.0.1:{port}/hook", fail_first=fail_first, fail_status=fail_status,
        **refusal,
    )

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with receiver.lock:
                status = receiver._status_for_next()
                receiver.received.append(
                    Received("POST", self.path, dict(self.headers.items()), body, status)
                )
            receiver.answering.wait(timeout=60)
            answer = b"ok" if status == 200 else receiver.fail_body
            self.send_response(status)
            if status != 200 and receiver.fail_type:
                self.send_header("Content-Type", receiver.fail_type)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test's output is not the place for access logs

    server.RequestHandlerClass = Handler
    receiver.let_go()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.let_go()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def closed_url() -> str:
    """A webhook URL where nothing listens (connections are refused)."""
    return f"http://127.0.0.1:{free_port()}/hook"


@dataclass(frozen=True)
class Mail:
    """One message as the SMTP server took it."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    message: EmailMessage

    def part(self, content_type: str) -> str:
        """The decoded body of the message's `text/plain` or `text/html` part."""
        found = self.message.get_body(preferencelist=(content_type.split("/")[1],))
        assert found is not None and found.get_content_type() == content_type, content_type
        return str(found.get_content())


@dataclass
class SmtpReceiver:
    host: str
    port: int
    messages: list[Mail] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"smtp://{self.host}:{self.port}"

    @property
    def server(self) -> SmtpServer:
        """The settings' view of this server: plain SMTP, no login (STARTTLS is not
        offered, so none is used)."""
        return SmtpServer(host=self.host, port=self.port, implicit_tls=False)


class _Recorder:
    def __init__(self, receiver: SmtpReceiver) -> None:
        self.receiver = receiver

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or b""
        parsed = email.message_from_bytes(content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.receiver.messages.append(
            Mail(str(envelope.mail_from), tuple(envelope.rcpt_tos), parsed)
        )
        return "250 OK"


@contextmanager
def smtp_server() -> Iterator[SmtpReceiver]:
    """aiosmtpd on a free loopback port (in its own thread), recording each message."""
    receiver = SmtpReceiver(host="127.0.0.1", port=free_port())
    controller = Controller(_Recorder(receiver), hostname=receiver.host, port=receiver.port)
    controller.start()
    try:
        yield receiver
    finally:
        controller.stop()

"""Signed session cookies: who signed in, how, and when; nothing else.

A cookie carries an email, the sign-in method (`password` or `demo`) and the issue time, signed
with the app's secret (`itsdangerous`, HMAC-SHA256, under its own salt so a session can never
pass for an interrupt seal). It never carries roles: the authenticator reads those again on
every request (an account's from the directory, a demo person's from `DEMO_PEOPLE`). The
payload is signed, not encrypted: the email is readable by whoever holds the cookie.

Imports `identity` only.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from typing import Literal, NamedTuple, get_args

from itsdangerous import BadData, Signer, URLSafeSerializer

from .identity import AuthMethod, Identity

__all__ = ["SESSION_COOKIE", "Session", "SessionProblem", "SessionSigner"]

#: The cookie's name.
SESSION_COOKIE = "chat_app_session"

#: Why a cookie was not accepted: past its lifetime, or not one this server signed (forged,
#: truncated, signed with another secret, or not a session at all).
SessionProblem = Literal["expired", "invalid"]

_SALT = "chat_app.session"
_NOTE_SALT = "chat_app.sign-in-note"
_METHODS: frozenset[str] = frozenset(get_args(AuthMethod))
#: A cookie issued this far in the future is not ours (clocks of several workers may differ).
_CLOCK_SKEW_SECONDS = 60.0
#: How long a sealed sign-in message is shown (`SessionSigner.seal_note`): a redirect is
#: followed at once; ten minutes cover a slow network and a page left to load.
NOTE_SECONDS = 600.0


class Session(NamedTuple):
    """What a valid cookie says: who, how they were verified, and when it was issued."""

    email: str
    method: AuthMethod
    #: Unix seconds: a float to the millisecond, or an `int` from an earlier version that
    #: issued whole seconds.
    issued: float


def to_millisecond(seconds: float) -> float:
    """Unix `seconds` cut to the millisecond, as sessions are issued and compared."""
    return math.floor(seconds * 1000) / 1000


class SessionSigner:
    """Issues and reads session cookie values.

    signer = SessionSigner(load_secret(data_dir), ttl_seconds=12 * 3600)
    value = signer.issue(identity)       # the cookie's value
    signer.read(value)                   # ("ada@example.com", "password"), or None
    signer.check(value)                  # Session(email, method, issued), or why not
    """

    def __init__(
        self, secret: bytes, ttl_seconds: float, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._serializer = URLSafeSerializer(
            secret, salt=_SALT, signer_kwargs={"digest_method": hashlib.sha256}
        )
        self._notes = Signer(secret, salt=_NOTE_SALT, digest_method=hashlib.sha256)

    def seal_note(self, text: str) -> str:
        """A seal over `text`, a message for the sign-in page's address (`?error=…&seal=…`),
        good for `NOTE_SECONDS`. The page shows a message only with its seal: its address is
        anyone's to write, and a line shown unsealed could be anyone's ("Sign in at
        https://elsewhere to reset it."), in the app's own red box; and a sealed one is not
        said again long after (a link carrying "try again in 30 seconds" for a week)."""
        made = int(self._clock())
        return f"{made}.{self._notes.get_signature(f'{made}:{text}'.encode()).decode()}"

    def note_sealed(self, text: str, seal: str) -> bool:
        """Whether `seal` is this server's seal over `text` (`seal_note`), and still good."""
        made, _, signature = seal.partition(".")
        if not made.isdigit() or not signature:
            return False
        age = self._clock() - int(made)
        if not -_CLOCK_SKEW_SECONDS <= age <= NOTE_SECONDS:
            return False
        return self._notes.verify_signature(f"{made}:{text}".encode(), signature.encode())

    def issue(self, identity: Identity) -> str:
        """A cookie value naming `identity` (its email and method), issued now, to the
        millisecond: a sign-out ends the sessions issued before it, and only those."""
        if identity.anonymous:
            raise ValueError("An anonymous visitor has no session.")
        issued = to_millisecond(self._clock())
        return self._serializer.dumps([identity.email, identity.method, issued])

    def read(self, value: str) -> tuple[str, AuthMethod] | None:
        """`(email, method)` from a cookie this server issued and that has not expired;
        `None` for an expired, forged or malformed one."""
        checked = self.check(value)
        return None if isinstance(checked, str) else (checked.email, checked.method)

    def check(self, value: str) -> Session | SessionProblem:
        """The session a cookie holds, or why it was refused (`"expired"` or `"invalid"`)."""
        try:
            payload = self._serializer.loads(value)
        except BadData:
            return "invalid"
        if not (
            isinstance(payload, list)
            and len(payload) == 3
            and isinstance(payload[0], str)
            and payload[0]
            and payload[1] in _METHODS
            and isinstance(payload[2], int | float)
            and not isinstance(payload[2], bool)
        ):
            return "invalid"
        email, method, issued = payload
        now = self._clock()
        if issued > now + _CLOCK_SKEW_SECONDS:
            return "invalid"
        if now - issued >= self.ttl_seconds:
            return "expired"
        # As sent: a whole number is an earlier version's (whole seconds); a new one's is a
        # float, even on a whole second (JSON keeps `.0`).
        return Session(email, method, issued)

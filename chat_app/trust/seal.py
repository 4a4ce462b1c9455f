"""Sealed interrupts: what the server proposed, authenticated with its secret (HMAC-SHA256).

Owns `Sealer` and `load_secret`. A stateless server rebuilds a paused batch from the history
the client sends back, so a client could approve a tool call the agent never proposed or
change its arguments. Sealing closes that without a database and without new fields: the
seal rides in values every client echoes back unchanged.

* A tool call's id is assigned by the server once the model has finished the call:
  `tc` + 8 hex nonce + 8 hex expiry (unix seconds) + 6 characters of requester tag + 16
  base64url characters of HMAC(thread, nonce, expiry, requester tag, tool name, canonical
  arguments). 40 characters of `[A-Za-z0-9_-]`: OpenAI's limit for a tool call id, and what
  every model provider accepts back.
* A generic interrupt's `key` becomes `<key>.<requester tag><seal>`, the seal covering the
  requester tag, the thread, the paused run, the interrupt id and everything its continuation
  metadata carries (definition, batch index, reason, message, expiry, schema hashes, display
  payload).

The requester tag is a keyed hash of the email of whoever the run that paused was for (36
bits: two people share one with odds of one in 2^36), so a stateless server can tell, from
the echoed id alone and unforgeably, whether the person answering is the one who asked.

A conversation the approval desk keeps (its own runs, and the app's tabs, whose conversations
it stores) is sealed apart (`Sealer.for_desk`): the same secret, with the desk named in every
tool and generic seal. The stateless `POST /api/chat` checks seals as a client's, so the
desk's pauses fail there (`"desk"`): they are decided through the desk, which records who
decided and shows it to everyone, not by whoever replays the history elsewhere. Requester tags
are the same for both.

What it does not protect: replays (the same sealed answer sent twice) need the ledger; the
secret must stay on the server; a person who can read the page can of course answer it.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import hmac
import math
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from chat_app.interrupts import canonical_interrupt_json

#: "desk": not this sealer's, but sealed for a conversation the desk keeps (the stateless
#: route must send it there); "stale": not sealed here at all, or changed.
SealCheck = Literal["ok", "stale", "expired", "desk"]
#: What a seal for a conversation the desk keeps names besides the usual parts.
_DESK = ("desk",)

DEFAULT_TTL_SECONDS = 24 * 3600
#: A folder the app makes for its secret, database or ledger: its owner's alone, as files in
#: it are made with the umask's permissions (SQLite's often readable by anyone). A folder that
#: exists keeps the permissions its operator gave it.
PRIVATE_FOLDER = 0o700


def make_private_folder(path: Path) -> None:
    """`path` made (with its parents) if missing, the last as a `PRIVATE_FOLDER`."""
    path.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
SECRET_ENV = "CHAT_APP_SECRET"
_TOOL_CALL_ID = re.compile(r"tc([0-9a-f]{8})([0-9a-f]{8})([A-Za-z0-9_-]{6})([A-Za-z0-9_-]{16})")
_KEY_SEAL = re.compile(r"(.+)\.([A-Za-z0-9_-]{6})([A-Za-z0-9_-]{22})")
_TAG_LENGTH = 6


def load_secret(data_dir: Path) -> bytes:
    """`CHAT_APP_SECRET`, or a random secret generated once and kept in `data_dir`."""
    if value := os.environ.get(SECRET_ENV):
        return value.encode()
    path = data_dir / "secret"
    if path.exists():
        return path.read_bytes().strip()
    make_private_folder(data_dir)
    secret = secrets.token_urlsafe(32).encode()
    # Created exclusively and private: a second worker starting at the same moment reads it.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as handle:
        handle.write(secret)
    return secret


def iso_from_epoch(seconds: float) -> str:
    """`2030-01-01T00:00:00.000Z`, as `datetime.fromtimestamp` rounds (to the nearest
    microsecond, half to even), formatted once per second: every record and seal asks."""
    fraction, whole = math.modf(seconds)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    elif micro < 0:
        whole, micro = whole - 1, micro + 1_000_000
    return f"{_iso_second(int(whole))}{micro // 1000:03d}Z"


@functools.lru_cache(maxsize=256)
def _iso_second(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")


@dataclass(frozen=True, kw_only=True)
class SealedCall:
    id: str
    expires_at: str


class Sealer:
    """Seals and checks what the server proposes.

    Example::

        sealer = Sealer(load_secret(Path(".data")), ttl_seconds=3600)
        agent = Agent(model=model, tools=tools, sealer=sealer)
    """

    def __init__(
        self,
        secret: bytes,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if len(secret) < 16:
            raise ValueError("A sealing secret needs at least 16 bytes.")
        # Keyed once: copying a keyed HMAC skips hashing the padded key on every seal.
        self._keyed = hmac.new(secret, digestmod=hashlib.sha256)
        self._tags: dict[str, str] = {}
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        #: The parts a tool or generic seal names besides the usual (`_DESK`, or none).
        self._domain: tuple[str, ...] = ()
        self._for_desk: Sealer | None = None

    def for_desk(self) -> Sealer:
        """This sealer for a conversation the approval desk keeps (the same secret, TTL,
        clock and requester tags; its seals are the desk's)."""
        if self._domain:
            return self
        if self._for_desk is None:
            view = copy.copy(self)
            view._domain, view._for_desk = _DESK, view
            self._for_desk = view
        return self._for_desk

    def _mac(self, parts: list[object], length: int) -> str:
        mac = self._keyed.copy()
        mac.update(canonical_interrupt_json(parts).encode())
        return base64.urlsafe_b64encode(mac.digest()).decode()[:length]

    def expiry(self, ttl_seconds: float | None = None) -> int:
        """When something sealed now expires, in unix seconds: after `ttl_seconds` (a policy
        rule's `expires_after`), or the sealer's own TTL when `None`."""
        return int(self._clock() + (self.ttl_seconds if ttl_seconds is None else ttl_seconds))

    # --- requesters -------------------------------------------------------------------

    def requester_tag(self, email: str) -> str:
        """The tag a sealed id carries for `email` ("" for the anonymous visitor).

        Kept per email (a few people ask and answer; at most 4,096 are kept): every run seals
        with one and every answer is checked against one, and the HMAC costs 4.4 µs where the
        look-up costs 0.1 µs (measured: 50 answers, `bench_continuation.py`).
        """
        tag = self._tags.get(email)
        if tag is None:
            tag = self._mac(["requester", email.lower()], _TAG_LENGTH)
            if len(self._tags) >= 4096:
                self._tags.clear()
            self._tags[email] = tag
        return tag

    @staticmethod
    def tag_of(sealed: str) -> str | None:
        """The requester tag a sealed tool call id or generic key carries (`None`: not sealed).

        Only meaningful once `check_tool_call` / `check_key` said "ok" (the MAC covers the tag).
        """
        match = _TOOL_CALL_ID.fullmatch(sealed)
        if match is not None:
            return match.group(3)
        key = _KEY_SEAL.fullmatch(sealed)
        return key.group(2) if key is not None else None

    def asked_by(self, sealed: str, email: str) -> bool:
        """Whether the sealed tool call id or generic key was proposed for `email`'s request."""
        return self.is_tag_of(self.tag_of(sealed), email)

    def is_tag_of(self, tag: object, email: str) -> bool:
        """Whether `tag` (from a sealed id, or a pause's metadata) is `email`'s."""
        return isinstance(tag, str) and hmac.compare_digest(tag, self.requester_tag(email))

    # --- tool calls ---------------------------------------------------------------------

    def seal_tool_call(
        self,
        thread_id: str,
        name: str,
        args: object,
        *,
        tag: str | None = None,
        ttl_seconds: float | None = None,
    ) -> SealedCall:
        """A sealed id for a call proposed for the requester `tag` names (`requester_tag`;
        `None`: the anonymous visitor's), expiring after `ttl_seconds` (`None`: the sealer's
        TTL)."""
        nonce = secrets.token_hex(4)
        expires = self.expiry(ttl_seconds)
        tag = self.requester_tag("") if tag is None else tag
        mac = self._mac(["tool", *self._domain, thread_id, nonce, expires, tag, name, args], 16)
        return SealedCall(
            id=f"tc{nonce}{expires:08x}{tag}{mac}", expires_at=iso_from_epoch(expires)
        )

    def check_tool_call(self, thread_id: str, call_id: str, name: str, args: object) -> SealCheck:
        match = _TOOL_CALL_ID.fullmatch(call_id)
        if match is None:
            return "stale"
        nonce, expires_hex, tag, mac = match.groups()
        expires = int(expires_hex, 16)

        def sealed_as(domain: tuple[str, ...]) -> bool:
            expected = self._mac(["tool", *domain, thread_id, nonce, expires, tag, name, args], 16)
            return hmac.compare_digest(mac, expected)

        kind = self._whose(sealed_as)
        if kind != "ok":
            return kind
        return "expired" if expires <= self._clock() else "ok"

    def _whose(self, sealed_as: Callable[[tuple[str, ...]], bool]) -> SealCheck:
        """Whether a seal is ours to decide, given `sealed_as(domain)` (its MAC matches with
        `domain` named): ours; a client's, which the desk decides too (made before
        conversations were sealed apart); the desk's, which a client is told to decide there
        ("desk"); or nobody's ("stale")."""
        if sealed_as(self._domain):
            return "ok"
        if not sealed_as(() if self._domain else _DESK):
            return "stale"
        return "ok" if self._domain else "desk"

    def tool_call_expires(self, call_id: str) -> int | None:
        """When a call sealed by any sealer expires, in unix seconds (read from its id)."""
        match = _TOOL_CALL_ID.fullmatch(call_id)
        return int(match.group(2), 16) if match else None

    def tool_call_expiry(self, call_id: str) -> str | None:
        """`tool_call_expires` as the wire's `expiresAt` (ISO 8601, UTC)."""
        expires = self.tool_call_expires(call_id)
        return None if expires is None else iso_from_epoch(expires)

    # --- generic interrupts -------------------------------------------------------------

    @staticmethod
    def _generic_parts(
        domain: tuple[str, ...],
        tag: str,
        thread_id: str,
        run_id: str,
        interrupt_id: str,
        fields: dict[str, object],
    ) -> list[object]:
        return ["generic", *domain, tag, thread_id, run_id, interrupt_id, fields]

    def seal_key(
        self,
        key: str,
        *,
        thread_id: str,
        run_id: str,
        interrupt_id: str,
        fields: dict[str, object],
        tag: str | None = None,
    ) -> str:
        """`key` with a seal over everything the continuation metadata will carry, and the
        requester `tag` (`None`: the anonymous visitor's)."""
        tag = self.requester_tag("") if tag is None else tag
        parts = self._generic_parts(self._domain, tag, thread_id, run_id, interrupt_id, fields)
        return f"{key}.{tag}{self._mac(parts, 22)}"

    def check_key(
        self,
        sealed_key: str,
        *,
        thread_id: str,
        run_id: str,
        interrupt_id: str,
        fields: dict[str, object],
    ) -> SealCheck:
        match = _KEY_SEAL.fullmatch(sealed_key)
        if match is None:
            return "stale"

        def sealed_as(domain: tuple[str, ...]) -> bool:
            parts = self._generic_parts(domain, match.group(2), thread_id, run_id, interrupt_id,
                                        fields)  # fmt: skip
            return hmac.compare_digest(match.group(3), self._mac(parts, 22))

        return self._whose(sealed_as)

    @staticmethod
    def unsealed_key(sealed_key: str) -> str:
        match = _KEY_SEAL.fullmatch(sealed_key)
        return match.group(1) if match else sealed_key

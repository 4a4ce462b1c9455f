"""Who someone is, as the server verified it: `Identity`, the demo people, and the directory
protocol that password accounts and API tokens answer to.

An identity never comes from a request body. The HTTP layer builds one from a signed session
cookie, a trusted sign-in proxy's headers or an API token, and hands it to the engine, which
records it with every decision (who, and how they were verified).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

__all__ = [
    "ANONYMOUS",
    "API_TOKEN_PREFIX",
    "AUDIT_ROLES",
    "DEMO_PEOPLE",
    "MAX_EMAIL",
    "AuthMethod",
    "Directory",
    "Identity",
    "SessionEnd",
    "is_control",
    "is_email",
    "spelled_out",
]

#: Bidirectional embeddings, overrides and isolates: in a name they make it display as
#: another ("Eve\u202eadA" reads "EveAda"). Marks (U+200E, U+200F) and joiners stay: they
#: are part of how some names and emoji are written.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def spelled_out(text: str) -> str:
    """`text` with each bidirectional embedding, override and isolate written out as its
    code point ("[U+202E]"), so that it reads in the order it is stored. For what a person
    decides on (a tool's arguments, an answer, an inbox line), where "pay Eve\u202eadA"
    would read "pay EveAda"."""
    # Nine searches in C: a streamed reply is looked at again at each token.
    if not any(control in text for control in _BIDI_CONTROLS):
        return text
    return "".join(f"[U+{ord(c):04X}]" if c in _BIDI_CONTROLS else c for c in text)


def is_control(character: str) -> bool:
    """Whether `character` has no place in a person's name: a control character (a line
    break would split a log line or a mail header, an escape recolour a terminal) or a
    bidirectional override."""
    return character in _BIDI_CONTROLS or unicodedata.category(character) == "Cc"


#: How this app's API tokens begin: a bearer token without it is someone else's (a sign-in
#: proxy's own), not ours to read.
API_TOKEN_PREFIX = "cat_"

#: One address: something, "@", something, no spaces (a list, "a@x, b@y", is not one), and
#: nothing `is_control` keeps out of names: an email is shown, logged and recorded as who
#: decided, where a terminal escape or a right-to-left override would make it read as another.
#: (Control characters are Unicode's category Cc: U+0000-U+001F and U+007F-U+009F.)
_ADDRESS_PART = rf"[^@\s\x00-\x1f\x7f-\x9f{''.join(sorted(_BIDI_CONTROLS))}]+"
_EMAIL = re.compile(f"{_ADDRESS_PART}@{_ADDRESS_PART}")
#: The longest address accepted (RFC 3696's bound).
MAX_EMAIL = 320


def is_email(value: str) -> bool:
    """Whether `value` is one email address (as accounts and a sign-in proxy's header must be)."""
    return len(value) <= MAX_EMAIL and _EMAIL.fullmatch(value) is not None


#: The roles that may read the audit trail (`auditor` read-only, as the trail is).
AUDIT_ROLES = frozenset({"admin", "auditor"})

#: How an identity was verified (recorded with every decision).
AuthMethod: TypeAlias = Literal["demo", "password", "proxy", "token", "none"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Identity:
    """A verified person (or the anonymous visitor when sign-in is off)."""

    #: Lower-case email; "" for the anonymous visitor.
    email: str
    method: AuthMethod
    name: str = ""
    #: Roles the verifier vouches for (a proxy's groups, an account's roles, a demo
    #: person's); a policy's `[roles]` table may add more.
    roles: frozenset[str] = frozenset()
    #: For `token`: the token's name, so the trail says which script acted.
    token_name: str = ""

    @property
    def anonymous(self) -> bool:
        return not self.email

    @property
    def label(self) -> str:
        """How the page and the trail name this person."""
        if self.anonymous:
            return "anonymous"
        return f"{self.name} <{self.email}>" if self.name else self.email

    def with_roles(self, roles: frozenset[str]) -> Identity:
        return Identity(
            email=self.email,
            method=self.method,
            name=self.name,
            roles=self.roles | roles,
            token_name=self.token_name,
        )


ANONYMOUS = Identity(email="", method="none", name="Anonymous")

#: The people of `CHAT_APP_AUTH=demo`, each labelled as a demo account on the page.
DEMO_PEOPLE: tuple[Identity, ...] = (
    Identity(email="rita@example.com", method="demo", name="Rita"),
    Identity(email="ada@example.com", method="demo", name="Ada", roles=frozenset({"finance"})),
    Identity(email="sam@example.com", method="demo", name="Sam", roles=frozenset({"ops"})),
    Identity(
        email="olive@example.com", method="demo", name="Olive", roles=frozenset({"ops", "admin"})
    ),
    # A third of ops: the demo's two-of-ops rule can be met when Sam or Olive asks.
    Identity(email="theo@example.com", method="demo", name="Theo", roles=frozenset({"ops"})),
)


#: Why a session of an account no longer counts.
SessionEnd: TypeAlias = Literal["removed", "replaced", "signed-out", "password-changed"]


class Directory(Protocol):
    """Where password accounts and API tokens are kept (`chat_app.trust.accounts`)."""

    def check_password(self, email: str, password: str) -> Identity | None:
        """The account's identity when `password` is its password; `None` otherwise (the same
        answer for an unknown email and a wrong password)."""
        ...

    def session_account(self, email: str, issued: float) -> Identity | SessionEnd:
        """The account of a session issued at `issued` (unix seconds), as it is now; why the
        session no longer counts otherwise: the account was removed (`replaced`: and made
        again), or its person signed out since."""
        ...

    def sign_out(self, email: str) -> None:
        """End every session of the account issued until now (signing out, in any tab)."""
        ...

    def identity_for_token(self, token: str) -> Identity | None:
        """The owner of an API token that exists and is not revoked; `None` otherwise."""
        ...

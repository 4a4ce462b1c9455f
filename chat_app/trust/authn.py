"""Who is asking: one request's headers and client address in, an `Identity` or an
`AuthFailure` out.

Pure (no HTTP framework), so the HTTP routes and the Reflex UI (with its websocket's headers
and client address) decide alike. What is believed depends on the sign-in mode:

| mode | identity from |
| --- | --- |
| `none` | nobody: every request is `ANONYMOUS` |
| `demo` | the session cookie naming a demo person; without one, the first demo person (Rita) |
| `password` | the session cookie, with the account read again (a removed account fails) |
| `proxy` | the proxy's user, groups (as roles) and name headers, only from a trusted address |

In every mode but `none`, `Authorization: Bearer <token>` names an API token's owner instead.

Imports `identity` and `sessions` only.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal, TypeAlias, get_args

from .identity import (
    ANONYMOUS,
    API_TOKEN_PREFIX,
    DEMO_PEOPLE,
    AuthMethod,
    Directory,
    Identity,
    is_control,
    is_email,
)
from .sessions import SESSION_COOKIE, SessionSigner

__all__ = [
    "AUTH_MODES",
    "BROWSER_CARRIED",
    "DEFAULT_TRUSTED_PROXIES",
    "DEFAULT_USER_HEADER",
    "AuthConfig",
    "AuthFailure",
    "AuthMode",
    "Authenticator",
    "IPNetwork",
    "cookie_value",
    "names_api_token",
    "parse_networks",
    "safe_next",
]

#: How people sign in (`CHAT_APP_AUTH`).
AuthMode: TypeAlias = Literal["demo", "password", "proxy", "none"]
AUTH_MODES: tuple[AuthMode, ...] = get_args(AuthMode)

IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_TRUSTED_PROXIES: tuple[IPNetwork, ...] = (
    ipaddress.ip_network("127.0.0.1/32"),
    ipaddress.ip_network("::1/128"),
)

DEFAULT_USER_HEADER = "X-Forwarded-Email"

#: The header this app names a person with when it signs them in to another of its servers
#: as their sign-in proxy (`forwarded_identity`).
FORWARDED_NAME_HEADER = "X-Forwarded-Name"

SIGN_IN_FIRST = "Sign in first."
SESSION_EXPIRED = "Your session expired; sign in again."
SESSION_INVALID = "This session is not valid; sign in again."
SIGNED_OUT = (
    "You signed out (in this tab, another, or on another device); sign in again, or reload "
    "this page if you already have."
)
ACCOUNT_REMOVED = "This account no longer exists; ask an admin."
PASSWORD_CHANGED = (
    "This account's password was changed since you signed in; sign in with the new one."
)
ACCOUNT_REPLACED = (
    "This account was removed and made again since you signed in; sign in again with its "
    "password now."
)
TOKEN_INVALID = "The API token is not valid or was revoked."
TOKEN_SCHEME = "Send the API token as Authorization: Bearer <token>."
NOT_OUR_TOKEN = (
    f"This is not an API token of this app (they start with {API_TOKEN_PREFIX}); "
    "`python -m chat_app tokens create` makes one."
)
NOT_FROM_PROXY = "Requests must come through the sign-in proxy."
#: Refusals of a browser's everyday life (nobody signed in yet, a session that ended), which
#: the log leaves out; the others (a bad token, headers from outside the proxy) it names.
ROUTINE_REFUSALS = frozenset({
    SIGN_IN_FIRST, SESSION_EXPIRED, SESSION_INVALID, SIGNED_OUT, ACCOUNT_REMOVED,
    PASSWORD_CHANGED, ACCOUNT_REPLACED,
})  # fmt: skip

#: Identities that ride on what a browser sends by itself with every request to this host
#: (a session cookie; a sign-in proxy's, on its own cookie): only this site's pages may use
#: them (`server/origin.py`). An API token is sent by the script that holds it.
BROWSER_CARRIED: frozenset[AuthMethod] = frozenset({"demo", "password", "proxy"})
#: Google IAP prefixes the email it vouches for with its issuer.
_IAP_PREFIX = "accounts.google.com:"


def forwarded_identity(identity: Identity) -> dict[str, str | bytes]:
    """The headers that sign `identity` in to a server taking this app as its sign-in proxy
    (`CHAT_APP_AUTH=proxy`, this app's address among its `CHAT_APP_TRUSTED_PROXIES`, and
    `CHAT_APP_NAME_HEADER=X-Forwarded-Name` for the name, sent as UTF-8); none for nobody,
    whom that server then refuses. Roles are that server's own to give."""
    if identity.anonymous or not identity.email:
        return {}
    headers: dict[str, str | bytes] = {DEFAULT_USER_HEADER: identity.email}
    if name := _one_line(identity.name):
        headers[FORWARDED_NAME_HEADER] = name.encode("utf-8")
    return headers


@dataclass(frozen=True, slots=True)
class AuthFailure:
    """Why a request has no identity; `message` is what the person reads, with `status`
    (401: who it is was not shown; 403: it was, but not in a way this request may use; 503:
    the accounts database did not answer, so nobody could tell, `code` "unavailable")."""

    message: str
    status: int = 401
    code: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class AuthConfig:
    """How this deployment signs people in (`chat_app.config.auth_from_env` reads it)."""

    mode: AuthMode = "none"
    #: The header a sign-in proxy sets to the signed-in email (`proxy` mode).
    user_header: str = DEFAULT_USER_HEADER
    #: The header a sign-in proxy sets to the person's groups, comma-separated; they are roles.
    groups_header: str | None = None
    #: The header a sign-in proxy sets to the person's display name (without it, pages and the
    #: trail name them by email alone).
    name_header: str | None = None
    #: Only requests from these addresses may carry the proxy's headers (and
    #: `X-Forwarded-Proto`).
    trusted_proxies: tuple[IPNetwork, ...] = DEFAULT_TRUSTED_PROXIES
    #: How long a session cookie lasts.
    session_ttl_seconds: float = 12 * 3600.0

    def __post_init__(self) -> None:
        if self.mode not in AUTH_MODES:
            raise ValueError(f"Unknown sign-in mode {self.mode!r}; use one of {AUTH_MODES}.")

    def describe(self) -> str:
        """One line for the server's log: which sign-in is on, and what that means."""
        if self.mode == "none":
            return "none — anyone who can reach this port can answer any pause"
        if self.mode == "proxy":
            sources = ", ".join(str(network) for network in self.trusted_proxies)
            groups = f", groups in {self.groups_header}" if self.groups_header else ""
            names = f", names in {self.name_header}" if self.name_header else ""
            return f"proxy ({self.user_header} from {sources}{groups}{names})"
        hours = f"{self.session_ttl_seconds / 3600:g} h"
        if self.mode == "password":
            return f"password (accounts in the app's database; sessions last {hours})"
        return f"demo (visitors are signed in as demo people; not for real use; {hours} sessions)"


class Authenticator:
    """Decides who a request comes from.

    auth = Authenticator(AuthConfig(mode="proxy"), signer=signer, directory=accounts)
    who = auth.authenticate(request.headers, request.client.host)
    if isinstance(who, AuthFailure): ...  # 401 with who.message
    """

    def __init__(
        self, config: AuthConfig, *, signer: SessionSigner, directory: Directory | None
    ) -> None:
        self.config = config
        self.signer = signer
        self.directory = directory
        self._user_header = config.user_header.lower()
        self._groups_header = (config.groups_header or "").lower()
        self._name_header = (config.name_header or "").lower()
        self._demo = {person.email: person for person in DEMO_PEOPLE}
        # Each request asks about its peer; parsing the address is a third of `authenticate`'s
        # cost, and a deployment's peers are a few proxies (the bound only caps a flood).
        self._trusted = lru_cache(maxsize=1024)(self._parses_as_trusted)

    @property
    def mode(self) -> AuthMode:
        return self.config.mode

    def authenticate(
        self, headers: Mapping[str, str], client_host: str | None
    ) -> Identity | AuthFailure:
        """The identity `headers` (any case) and the client's address prove, or why not."""
        mode = self.config.mode
        if mode == "none":
            return ANONYMOUS
        pairs = list(headers.items())
        lowered = {name.lower(): value for name, value in pairs}
        # Counted only when some name came twice (the mapping has fewer names than pairs).
        twice = len(lowered) != len(pairs)
        sent = Counter(n.lower() for n, _ in pairs) if twice else Counter()
        if (times := sent["authorization"]) > 1:  # the last would win: whose is it?
            return AuthFailure(f"Authorization came {times} times; send one.")
        authorization = lowered.get("authorization", "")
        scheme, _, credentials = authorization.strip().partition(" ")
        # Only our own tokens: a sign-in proxy may pass its own bearer token (a JWT) along,
        # which says nothing to us; the proxy's headers do.
        credentials = credentials.strip()
        bearer = scheme.lower() == "bearer"
        if bearer and credentials.startswith(API_TOKEN_PREFIX):
            return self._token(credentials)
        if names_api_token(authorization):  # ours, without "Bearer"
            return AuthFailure(TOKEN_SCHEME)
        if mode == "proxy":
            return self._proxy(lowered, client_host, sent)
        value = cookie_value(lowered.get("cookie", ""), SESSION_COOKIE)
        if value is None and bearer:
            # A bearer alone was meant for us: it is refused saying what our tokens look
            # like, not taken for nobody (or, in the demo, for its first person). Beside a
            # session it is someone else's header, and the session decides.
            return AuthFailure(NOT_OUR_TOKEN)
        if value is None:
            return DEMO_PEOPLE[0] if mode == "demo" else AuthFailure(SIGN_IN_FIRST)
        return self._session(value)

    def trusts(self, client_host: str | None) -> bool:
        """Whether `client_host` is one of the trusted proxies."""
        if not client_host:
            return False
        return self._trusted(client_host)

    def _parses_as_trusted(self, client_host: str) -> bool:
        try:
            address = ipaddress.ip_address(client_host.strip("[]"))
        except ValueError:  # a Unix socket's path, a test client's name
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.config.trusted_proxies)

    def demo_person(self, email: str) -> Identity | None:
        """The demo person with this email (any case), in `demo` mode."""
        if self.config.mode != "demo":
            return None
        return self._demo.get(email.strip().lower())

    def _token(self, token: str) -> Identity | AuthFailure:
        if not token or self.directory is None:
            return AuthFailure(TOKEN_INVALID)
        owner = self.directory.identity_for_token(token)
        if owner is None:
            return AuthFailure(TOKEN_INVALID)
        return owner if owner.method == "token" else replace(owner, method="token")

    def _proxy(
        self, headers: Mapping[str, str], client_host: str | None, sent: Mapping[str, int]
    ) -> Identity | AuthFailure:
        """`sent`: how many times each header came. A proxy that appends its headers to those
        the client sent, rather than replacing them, must not make the last one win (an
        identity, or the groups that are its roles). Where headers arrive joined (the app's
        websocket), a joined user header is no one email; the proxy must drop the client's
        copies, as sign-in proxies do."""
        if not self.trusts(client_host):
            return AuthFailure(NOT_FROM_PROXY)
        header = self.config.user_header
        email = headers.get(self._user_header, "").strip().lower().removeprefix(_IAP_PREFIX)
        if not email:
            return AuthFailure(f"The sign-in proxy sent no {header} header.")
        for name in (header, self.config.groups_header, self.config.name_header):
            if name and (times := sent.get(name.lower(), 0)) > 1:
                return AuthFailure(
                    f"The sign-in proxy sent {name} {times} times; it must send one."
                )
        if not is_email(email):
            return AuthFailure(f"The sign-in proxy's {header} is not one email address.")
        roles: frozenset[str] = frozenset()
        if self._groups_header:
            roles = frozenset(_split_groups(headers.get(self._groups_header, "")))
        name = _display_name(headers.get(self._name_header, "")) if self._name_header else ""
        return Identity(email=email, method="proxy", name=name, roles=roles)

    def _session(self, value: str) -> Identity | AuthFailure:
        checked = self.signer.check(value)
        if checked == "expired":
            return AuthFailure(SESSION_EXPIRED)
        if isinstance(checked, str) or checked.method != self.config.mode:
            return AuthFailure(SESSION_INVALID)
        if checked.method == "demo":
            person = self._demo.get(checked.email)
            return person if person is not None else AuthFailure(SESSION_INVALID)
        if self.directory is None:
            return AuthFailure(ACCOUNT_REMOVED)
        account = self.directory.session_account(checked.email, checked.issued)
        if account == "signed-out":
            return AuthFailure(SIGNED_OUT)
        if account == "password-changed":
            return AuthFailure(PASSWORD_CHANGED)
        if account == "removed":
            return AuthFailure(ACCOUNT_REMOVED)
        if account == "replaced":
            return AuthFailure(ACCOUNT_REPLACED)
        return account if account.method == "password" else replace(account, method="password")

    def sign_out(self, found: Identity) -> None:
        """End the sessions of `found` when they signed in with a password: every tab and
        browser holding one is signed out too, not only the one that asked (a demo person, a
        proxy's or a token's identity has no session of ours to end)."""
        if found.method == "password" and self.directory is not None:
            self.directory.sign_out(found.email)


def names_api_token(authorization: str) -> bool:
    """Whether an `Authorization` value holds one of our API tokens, with its `Bearer`
    scheme or without, whether or not the token is valid."""
    scheme, _, credentials = authorization.strip().partition(" ")
    return (credentials.strip() or scheme).startswith(API_TOKEN_PREFIX)


def cookie_value(header: str, name: str) -> str | None:
    """The value of cookie `name` in a `Cookie` header (the first, as browsers send the most
    specific path first); `None` when absent."""
    for part in header.split(";"):
        key, sep, value = part.partition("=")
        if sep and key.strip() == name:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return value
    return None


def parse_networks(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    """Addresses or CIDRs as networks (`10.0.0.1` is `10.0.0.1/32`); a `ValueError` names the
    first entry that is neither."""
    networks = []
    for entry in entries:
        text = entry.strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise ValueError(f"{text!r} is not an IP address or CIDR") from None
    return tuple(networks)


#: Longer names are cut: a header is the proxy's to fill, and a name is shown on every card.
MAX_NAME = 80


def _display_name(value: str) -> str:
    """A name as a proxy sent it: HTTP servers read header bytes as Latin-1, and proxies send
    UTF-8 (oauth2-proxy passes the identity provider's claim through), so bytes that are
    UTF-8 are read as such; control characters go, spaces are collapsed."""
    try:
        value = value.encode("latin-1").decode("utf-8")
    except UnicodeError:  # not UTF-8 (or already text beyond Latin-1): as it came
        pass
    return _one_line(value)


def _one_line(name: str) -> str:
    """`name` on one line, as a name: control characters and bidirectional overrides go
    (`is_control`); spaces are collapsed."""
    kept = "".join(" " if is_control(char) else char for char in name)
    return " ".join(kept.split())[:MAX_NAME].strip()


def _split_groups(value: str) -> Iterable[str]:
    for group in value.split(","):
        if group := group.strip().lower():
            yield group


def safe_next(target: str) -> str:
    """Where a sign-in may lead back to: `target` when it is a path on this site (`/…`, not
    `//host` or `/\\host`, printable ASCII as a browser sends it); `/` otherwise."""
    if (
        not target.startswith("/")
        or target.startswith("//")
        or any(not "!" <= char <= "~" or char == "\\" for char in target)
    ):
        return "/"
    return target

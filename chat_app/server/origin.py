"""Which pages may act with a visitor's session: this site's own.

A session cookie (or a sign-in proxy's, which rides on one) goes with every request the
visitor's browser makes to this host, including those a page on another port or a sibling
subdomain makes: SameSite counts those as the same site. So whatever a session may do, a
request that a browser says came from a page of another host may not: sign in or out, start
or answer a conversation, read the inbox, open the app's websocket. A script that uses an API
token carries its credential itself and may come from anywhere; scripts that send no
`Origin` (curl, a server) are not browsers acting for someone else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from starlette.requests import Request

__all__ = ["CROSS_SITE", "from_elsewhere", "same_host", "served_as"]

#: What a request a browser sent from another host's page reads (HTTP 403).
CROSS_SITE = (
    "Requests signed in with this site's session must come from its own pages; a script "
    "elsewhere signs in with an API token (Authorization: Bearer …)."
)

#: Methods a browser may send from any page without changing anything (links, images): only
#: their `Origin` counts, which a browser sends when a script reads the answer.
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def same_host(source: str, hosts: Iterable[str]) -> bool:
    """Whether `source` (an `Origin` or `Referer` value) names one of `hosts` (`host:port`,
    any case). The opaque origin "null" (a sandboxed frame, a file) names none."""
    if source == "null":
        return False
    host = urlsplit(source).netloc.lower()
    return bool(host) and host in {name.lower() for name in hosts if name}


def served_as(headers: Mapping[str, str]) -> set[str]:
    """The names this request reached the server by: `Host`, and behind a reverse proxy
    `X-Forwarded-Host` (a page's script cannot set either on a cross-site request, so it
    cannot lie with them)."""
    return {headers.get(name, "") for name in ("host", "x-forwarded-host")} - {""}


def from_elsewhere(request: Request) -> bool:
    """Whether the browser that sent `request` says a page of another host made it: its
    `Origin`, or for a method that changes things without one, its `Referer`."""
    headers = request.headers
    source = headers.get("origin")
    if source is None and request.method not in _SAFE:
        source = headers.get("referer")
    if not source:
        return False
    return not same_host(source, served_as(headers))

"""Which pages may act with a visitor's session: this site's own.

A session cookie (or a sign-in proxy's, which rides on one) goes with every request the
visitor's browser makes to this host, including those a page on another port or a sibling
subdomain makes: SameSite counts those as the same site. So whatever a session may do, a
request that a browser says came from another page than this site's may not: sign in or out,
start or answer a conversation, read the inbox, open the app's websocket. A script that uses
an API token carries its credential itself and may come from anywhere; scripts that send none
of these headers (curl, a server) are not browsers acting for someone else.

What the browser says, most reliable first:

* `Sec-Fetch-Site`, which every current browser sends and no page's script can set or
  change: only `same-origin` (this site's pages) and `none` (an address typed, a bookmark)
  are ours. It needs no knowledge of the names the site is served by, so a reverse proxy
  that rewrites `Host` changes nothing.
* Without it (an older browser): `Origin`, or for a method that changes things, `Referer`,
  compared with the host the request reached (`Host`, and `X-Forwarded-Host` only from a
  trusted proxy: a page's script may send that header to this server itself, and the app's
  CORS lets it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = ["CROSS_SITE", "from_elsewhere", "handshake_from_elsewhere"]

#: What a request a browser sent from another page reads (HTTP 403).
CROSS_SITE = (
    "Requests signed in with this site's session must come from its own pages; a script "
    "elsewhere signs in with an API token (Authorization: Bearer …)."
)

#: `Sec-Fetch-Site` values of requests this site's pages (or the person, typing an address)
#: made.
_OURS = frozenset({"same-origin", "none"})
#: Methods a browser may send from any page without changing anything (links, images): only
#: their `Origin` counts, which a browser sends when a script reads the answer.
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def _same_host(source: str, hosts: Iterable[str]) -> bool:
    """Whether `source` (an `Origin` or `Referer` value) names one of `hosts` (`host:port`,
    any case). The opaque origin "null" (a sandboxed frame, a file) names none."""
    if source == "null":
        return False
    host = urlsplit(source).netloc.lower()
    return bool(host) and host in {name.lower() for name in hosts if name}


def from_elsewhere(
    headers: Mapping[str, str], method: str, *, via_proxy: Callable[[], bool]
) -> bool:
    """Whether the browser that sent a request with `headers` (lower-case names) says a page
    other than this site's made it. `via_proxy()`: the request came from a trusted proxy,
    whose `X-Forwarded-Host` names the host the browser asked for (asked only when it
    matters: most requests say `Sec-Fetch-Site`, or nothing)."""
    site = headers.get("sec-fetch-site")
    if site:
        return site not in _OURS
    source = headers.get("origin")
    if source is None and method not in _SAFE:
        source = headers.get("referer")
    if not source:
        return False
    names = [headers.get("host", "")]
    if "x-forwarded-host" in headers and via_proxy():
        names.append(headers.get("x-forwarded-host", ""))
    return not _same_host(source, names)


#: The handshake headers `from_elsewhere` reads, by their WSGI-style environ keys.
_HANDSHAKE = {
    "sec-fetch-site": "HTTP_SEC_FETCH_SITE",
    "origin": "HTTP_ORIGIN",
    "host": "HTTP_HOST",
    "x-forwarded-host": "HTTP_X_FORWARDED_HOST",
}


def handshake_from_elsewhere(environ: Mapping[str, Any]) -> bool:
    """`from_elsewhere` for a websocket handshake (Engine.IO's environ). No page's script
    can set a handshake's headers, so a proxy's `X-Forwarded-Host` is believed."""
    headers = {name: str(environ[key]) for name, key in _HANDSHAKE.items() if environ.get(key)}
    return from_elsewhere(headers, "GET", via_proxy=lambda: True)

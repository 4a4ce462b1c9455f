"""Which requests a browser says came from this site's own pages (`server/origin.py`)."""

from __future__ import annotations

import pytest

from chat_app.server.origin import from_elsewhere, handshake_from_elsewhere

HERE = {"host": "desk.example:8000"}


@pytest.mark.parametrize(
    ("headers", "method", "via_proxy", "elsewhere"),
    [
        # What every current browser says, whatever the names: only its own pages and typed
        # addresses are ours; another port or subdomain is the same site, not ours.
        ({"sec-fetch-site": "same-origin", "origin": "https://pub.example"}, "POST", False, False),
        ({"sec-fetch-site": "none"}, "GET", False, False),
        ({"sec-fetch-site": "same-site", "origin": "http://desk.example:8000"}, "PUT", False, True),
        ({"sec-fetch-site": "cross-site"}, "GET", False, True),
        # An older browser: its Origin (or a post's Referer) against the host asked.
        ({"origin": "http://desk.example:8000"}, "POST", False, False),
        ({"origin": "http://desk.example:9998"}, "POST", False, True),
        ({"origin": "null"}, "POST", False, True),
        ({"referer": "http://desk.example:9998/page"}, "POST", False, True),
        ({"referer": "http://desk.example:9998/page"}, "GET", False, False),  # a link followed
        ({}, "POST", False, False),  # no browser's headers: a script acting for itself
        # A page's script may send X-Forwarded-Host itself: believed from a trusted proxy only.
        ({"origin": "http://desk.example:9998", "x-forwarded-host": "desk.example:9998"},
         "POST", False, True),
        ({"origin": "https://desk.example", "x-forwarded-host": "desk.example"},
         "POST", True, False),
    ],
)  # fmt: skip
def test_whose_page_a_request_came_from(
    headers: dict[str, str], method: str, via_proxy: bool, elsewhere: bool
) -> None:
    found = from_elsewhere(HERE | headers, method, via_proxy=lambda: via_proxy)
    assert found is elsewhere


def test_a_websocket_handshake_is_read_from_its_environ() -> None:
    """Engine.IO hands the handshake's headers over as an environ; a proxy's
    X-Forwarded-Host is believed there (no page can set a handshake's headers)."""
    here = {"HTTP_HOST": "127.0.0.1:8000", "HTTP_ORIGIN": "http://127.0.0.1:8000"}
    assert not handshake_from_elsewhere(here)
    assert handshake_from_elsewhere(here | {"HTTP_ORIGIN": "http://127.0.0.1:9998"})
    assert handshake_from_elsewhere(here | {"HTTP_SEC_FETCH_SITE": "same-site"})
    proxied = {"HTTP_HOST": "app:8000", "HTTP_X_FORWARDED_HOST": "desk.example",
               "HTTP_ORIGIN": "https://desk.example"}  # fmt: skip
    assert not handshake_from_elsewhere(proxied)
    assert not handshake_from_elsewhere({"HTTP_HOST": "app:8000"})  # no browser's headers

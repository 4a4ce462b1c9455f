"""Posting to the server's sign-in routes from the page.

Reflex's forms always prevent the browser's own submit, and these routes answer with a
cookie and a redirect, not an event: so the page posts them with `fetch` (same origin: the
browser keeps the `HttpOnly` cookie) and follows where the server sends it. What is typed, a
password included, goes straight to the route; it never passes through the page's state.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import ParamSpec

import reflex as rx
from reflex.event import EventSpec

_P = ParamSpec("_P")


def post_script(
    action: str,
    fields: dict[str, str],
    values: dict[str, str],
    *,
    here_as: str = "",
    query: dict[str, str] | None = None,
    then: str = "",
) -> str:
    """POST `action` with the current values of the inputs `fields` names (form field ->
    element id), the fixed `values`, the page's address parameters `query` names (form field
    -> parameter; read as the click happens, so a click before the page's state has loaded
    sends them too) and, as the field `here_as`, the page's own path (to come back to), then
    run the statement `then` (the server has answered: a cookie it set or cleared holds),
    and go where the server redirects: the JavaScript (`post_and_follow` is the event)."""
    reads = [
        f"{json.dumps(name)}: (document.getElementById({json.dumps(element)}) || {{}}).value"
        " || ''"
        for name, element in fields.items()
    ] + [
        f"{json.dumps(name)}: "
        f"new URLSearchParams(window.location.search).get({json.dumps(parameter)}) || ''"
        for name, parameter in (query or {}).items()
    ]
    if here_as:
        reads.append(f"{json.dumps(here_as)}: window.location.pathname + window.location.search")
    body = ", ".join([f"...{json.dumps(values)}", *reads])
    return (
        f"fetch({json.dumps(action)}, {{method: 'POST', credentials: 'same-origin', "
        f"body: new URLSearchParams({{{body}}})}})"
        f".then(r => {{ {then}; window.location.assign(r.url); }})"
    )


def _run(script: Callable[_P, str]) -> Callable[_P, EventSpec]:
    def event(*args: _P.args, **kwargs: _P.kwargs) -> EventSpec:
        return rx.call_script(script(*args, **kwargs))

    return event


#: `post_script` as the event that runs it.
post_and_follow = _run(post_script)

"""The request body: an AG-UI `RunAgentInput` exactly as `@tanstack/ai-client` writes it.

Owns `build_run_input` and `new_run_id` (`docs/protocol.md` §3.1).
"""

from __future__ import annotations

import secrets
import string
import time
from collections.abc import Mapping, Sequence

__all__ = ["build_run_input", "new_run_id"]

_ALPHABET = string.ascii_lowercase + string.digits


def new_run_id() -> str:
    """`run-<ms>-<6 random base-36 characters>`."""
    suffix = "".join(secrets.choice(_ALPHABET) for _ in range(6))
    return f"run-{int(time.time() * 1000)}-{suffix}"


def build_run_input(
    *,
    thread_id: str,
    run_id: str,
    messages: Sequence[Mapping[str, object]],
    tools: Sequence[Mapping[str, object]],
    parent_run_id: str | None = None,
    resume: Sequence[Mapping[str, object]] | None = None,
    state: object = None,
    context: Sequence[Mapping[str, object]] = (),
    forwarded_props: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """The POST body. A continuation adds `parentRunId` and `resume`; nothing else changes.

    A message given as a `dict` goes into the body as it is, not copied: the client sends the
    wire dicts it keeps (`WireMessages`), and copying each of a long history's took ~1 ms per
    2,000 messages on every request. A connection reads a body, never changes it."""
    body: dict[str, object] = {"threadId": thread_id, "runId": run_id}
    if parent_run_id is not None:
        body["parentRunId"] = parent_run_id
    if resume is not None:
        body["resume"] = [dict(entry) for entry in resume]
    props = dict(forwarded_props or {})
    body.update(
        {
            "state": state if state is not None else {},
            "messages": [m if type(m) is dict else dict(m) for m in messages],
            "tools": [dict(tool) for tool in tools],
            "context": [dict(item) for item in context],
            "forwardedProps": props,
            # TanStack's client mirrors forwardedProps here (deprecated, still sent).
            "data": dict(props),
        }
    )
    return body

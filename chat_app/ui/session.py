"""Live chat clients, one per browser tab, kept outside Reflex state.

Owns `Session`, `BrowserBridge`, `configure` and `session_for`. Reflex state must pickle, so
the `ChatClient` (with its connection and tasks) lives in a module-level registry keyed by
the tab's client token; the state keeps only the client's JSON, from which a session is
rebuilt after a restart. `configure` is called once by the app module with the backend:
the in-process agent by default, or an AG-UI endpoint over SSE.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chat_app.client import ChatClient, ClientState, ClientTool, Connection

from .views import ViewCache

ConnectionFactory = Callable[[], Connection]


@dataclass
class BrowserCall:
    id: str
    script: str
    future: asyncio.Future[Any]


@dataclass
class BrowserBridge:
    """Client tools written in JavaScript: the run waits while the page evaluates them."""

    pending: dict[str, BrowserCall] = field(default_factory=dict)
    unsent: list[BrowserCall] = field(default_factory=list)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    async def call(self, script: str) -> Any:
        """Evaluate `script` (a JS expression, maybe a promise) in the page; return its value."""
        call = BrowserCall(
            id=f"b{next(self._ids)}",
            script=script,
            future=asyncio.get_running_loop().create_future(),
        )
        self.pending[call.id] = call
        self.unsent.append(call)
        self.wakeup.set()
        try:
            return await asyncio.wait_for(call.future, timeout=30)
        finally:
            self.pending.pop(call.id, None)

    def take_unsent(self) -> list[BrowserCall]:
        calls, self.unsent = self.unsent, []
        return calls

    def settle(self, call_id: str, value: Any) -> None:
        call = self.pending.get(call_id)
        if call is not None and not call.future.done():
            call.future.set_result(value)


#: The JavaScript of `get_local_time`: the browser's clock and IANA time zone.
LOCAL_TIME_SCRIPT = (
    "({time: new Date().toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'}),"
    " timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone})"
)


def demo_location(_: Mapping[str, Any]) -> dict[str, Any]:
    """`get_location` runs in Python in the app (a browser may not grant geolocation)."""
    return {"latitude": 48.8566, "longitude": 2.3522, "accuracy": 50, "label": "Paris, France"}


@dataclass
class Session:
    client: ChatClient
    bridge: BrowserBridge
    changed: asyncio.Event
    task: asyncio.Task[None] | None = None
    #: The saved client state (the Reflex state's `_client_json`) this session last matched.
    saved: str = ""
    views: ViewCache = field(default_factory=ViewCache)

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()


@dataclass
class _Backend:
    connection: ConnectionFactory | None = None
    manifest: Callable[[], Mapping[str, Any]] | None = None
    #: The audit trail as `GET /api/audit` answers it (`{"chain": …, "records": […]}`).
    audit: Callable[[], Mapping[str, Any]] | None = None


_backend = _Backend()
_sessions: dict[str, Session] = {}


def configure(
    connection: ConnectionFactory,
    manifest: Callable[[], Mapping[str, Any]],
    audit: Callable[[], Mapping[str, Any]] | None = None,
) -> None:
    """Set where chats go, which tools the client knows, and where the audit trail is read."""
    _backend.connection = connection
    _backend.manifest = manifest
    _backend.audit = audit
    _sessions.clear()


def read_audit() -> Mapping[str, Any] | None:
    return _backend.audit() if _backend.audit is not None else None


def _tools(bridge: BrowserBridge) -> list[ClientTool]:
    assert _backend.manifest is not None, "call chat_app.ui.session.configure first"

    async def local_time(_: Mapping[str, Any]) -> Any:
        return await bridge.call(LOCAL_TIME_SCRIPT)

    functions = {"get_local_time": local_time, "get_location": demo_location}
    return ClientTool.from_manifest(_backend.manifest(), functions)


def actor_from(headers: Mapping[str, str]) -> str | None:
    """Who is at the keyboard, for the audit trail.

    `CHAT_APP_USER_HEADER` names a header your sign-in proxy sets (e.g. `X-Forwarded-Email`);
    `CHAT_APP_USER` is a fixed name for single-user deployments. Neither: anonymous.
    """
    header = os.environ.get("CHAT_APP_USER_HEADER", "").strip().lower()
    if header:
        for name, value in headers.items():
            if name.lower() == header and value:
                return value
    return os.environ.get("CHAT_APP_USER") or None


def session_for(token: str, saved: str = "", actor: str | None = None) -> Session:
    """The tab's live session, rebuilt from its saved client state when needed.

    The registry is per process and a tab's socket can move between workers, so a session
    made here earlier is kept only while it runs or still matches the saved state: another
    worker may have moved the conversation on since (then it is rebuilt from `saved`).
    """
    session = _sessions.get(token)
    if session is not None and (
        session.busy or saved in ("", session.saved) or saved == session.client.state.to_json()
    ):
        session.saved = saved or session.saved
        return session
    assert _backend.connection is not None, "call chat_app.ui.session.configure first"
    bridge = BrowserBridge()
    changed = asyncio.Event()
    tools = _tools(bridge)

    def on_change(_: ChatClient) -> None:
        changed.set()

    props = {"actor": actor} if actor else None
    if saved:
        client = ChatClient.restore(
            ClientState.from_json(saved),
            _backend.connection(),
            tools=tools,
            on_change=on_change,
            forwarded_props=props,
        )
    else:
        client = ChatClient(
            _backend.connection(), tools=tools, on_change=on_change, forwarded_props=props
        )
    session = Session(client=client, bridge=bridge, changed=changed, saved=saved)
    _sessions[token] = session
    return session


def forget(token: str) -> None:
    _sessions.pop(token, None)

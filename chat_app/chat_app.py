"""Reflex entry point: the app, its page, and the backend the chat talks to.

By default the chat runs the demo agent in this process; with `CHAT_APP_AGENT_URL` set to an
AG-UI endpoint (ours, a TanStack AI server, any AG-UI server) it talks to it over SSE. The
AG-UI routes (`POST /api/chat`, `GET /api/tools`) are served on the app's own port either way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx
import reflex as rx

from chat_app.agent import event_to_wire
from chat_app.client import Connection, InProcessConnection, SSEConnection
from chat_app.config import security_from_env
from chat_app.demo import build_demo_agent
from chat_app.server import create_app
from chat_app.trust import audit_report
from chat_app.ui import session
from chat_app.ui.audit_state import AuditState
from chat_app.ui.pages.audit import audit
from chat_app.ui.pages.index import index
from chat_app.ui.state import ChatState

security = security_from_env()
agent = build_demo_agent(sealer=security.sealer, ledger=security.ledger)
AGENT_URL = os.environ.get("CHAT_APP_AGENT_URL", "").strip()
#: Where the remote agent's other routes live (`…/api/chat` -> `…/api`).
API_BASE = AGENT_URL.rsplit("/", 1)[0]


def _connection() -> Connection:
    if AGENT_URL:
        return SSEConnection(AGENT_URL, timeout=120)
    return InProcessConnection(agent.run, encode=event_to_wire)


def _remote_json(url: str) -> Mapping[str, Any] | None:
    """The JSON a GET of `url` answers with 200, else None."""
    try:
        response = httpx.get(url, timeout=5)
        if response.status_code == 200:
            data: Mapping[str, Any] = response.json()
            return data
    except (httpx.HTTPError, ValueError):
        pass
    return None


def _manifest() -> Mapping[str, Any]:
    """The tools the client types approvals with: the remote server's manifest when it has
    one (`<agent url>/../tools`), else the demo agent's (TanStack servers have no manifest;
    the tool definitions must then match by name and schema)."""
    if AGENT_URL:
        tools_url = os.environ.get("CHAT_APP_TOOLS_URL") or API_BASE + "/tools"
        remote = _remote_json(tools_url)
        if remote is not None:
            return remote
    return {"tools": agent.tool_manifest()}


def _audit() -> Mapping[str, Any]:
    """The audit trail: the remote server's `GET /api/audit`, or this app's own ledger."""
    remote = _remote_json(API_BASE + "/audit") if AGENT_URL else None
    if remote is not None:
        return remote
    if AGENT_URL or agent.ledger is None:  # a server without a trail: nothing to show
        return {"chain": {"ok": True}, "records": []}
    return audit_report(agent.ledger.records())


session.configure(_connection, _manifest, _audit if security.ledger is not None else None)

app = rx.App(
    # POST /api/chat and GET /api/tools on the app's own port.
    api_transformer=create_app(agent),
    head_components=[rx.el.link(rel="icon", type="image/svg+xml", href="/favicon.svg")],
)
app.add_page(
    index, route="/", title="Ops desk · chat_app", image="/logo.svg", on_load=ChatState.on_load
)
app.add_page(audit, route="/audit", title="Audit · chat_app", on_load=AuditState.load)

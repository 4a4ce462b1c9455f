"""Reflex entry point: the app, its page, and the backend the chat talks to.

By default the chat runs the demo agent in this process; with `CHAT_APP_AGENT_URL` set to an
AG-UI endpoint (ours, a TanStack AI server, any AG-UI server) it talks to it over SSE. The
AG-UI routes (`POST /api/chat`, `GET /api/tools`) and sign-in (`/api/signin`, …) are served
on the app's own port either way. Sign-in is `CHAT_APP_AUTH` (default `demo`); who may decide
what is `CHAT_APP_POLICY` (default the demo's policy). A setting the app cannot use stops the
start with a message saying which and why.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Container, Mapping
from typing import Any

import httpx
import reflex as rx
from reflex.utils.exec import is_prod_mode

from chat_app.agent import event_to_wire
from chat_app.client import (
    Connection,
    InProcessConnection,
    SSEConnection,
    ToolManifest,
    fetch_manifest,
    read_manifest,
)
from chat_app.config import (
    authenticator_from_env,
    desk_from_env,
    fanout_problems,
    heartbeat_seconds,
    metrics_token,
    notifications_from_env,
    policy_from_env,
    policy_warnings,
    remote_agent_from_env,
    remote_agent_problems,
    security_from_env,
    settings_lines,
)
from chat_app.demo import POLICY_PATH, build_demo_agent, describe_model
from chat_app.desk import DeskStats, RunAs
from chat_app.notify import Outbox
from chat_app.notify.stats import DeliveryStats
from chat_app.observe import configure_logging, configure_tracing
from chat_app.server import HEARTBEAT_SECONDS, create_app
from chat_app.server.collector import tune_collector
from chat_app.server.metrics import MetricsSource
from chat_app.server.origin import handshake_from_elsewhere
from chat_app.server.run_input import KeptRunInputReader, read_run_input
from chat_app.trust import Identity, PolicyError, audit_report
from chat_app.trust.store import DatabaseUnavailable
from chat_app.ui import session
from chat_app.ui.audit_state import ROUTE as AUDIT_ROUTE
from chat_app.ui.audit_state import AuditState
from chat_app.ui.components.decisions import (
    CLOSE_ON_ESCAPE_SCRIPT,
    FOCUS_NEXT_DECISION_SCRIPT,
    MOVED_ON_SCRIPT,
    SENDING_SCRIPT,
    TYPING_KEEPS_FOCUS_SCRIPT,
)
from chat_app.ui.components.header import DEMO_SWITCH_SCRIPT
from chat_app.ui.components.listing import KEEP_PLACE_SCRIPT
from chat_app.ui.components.page import ROOT_HAS_SCRIPT, SKIP_LINK_SCRIPT
from chat_app.ui.components.schema_form import DRAFT_SCRIPT, PROPOSED_SCRIPT
from chat_app.ui.components.settled import WHOLE_ON_TAP_SCRIPT
from chat_app.ui.conversations_state import ConversationsState
from chat_app.ui.decided_state import DecidedState
from chat_app.ui.deliveries_state import DeliveriesState
from chat_app.ui.identity_state import SIGN_IN_ROUTE
from chat_app.ui.inbox_state import InboxState
from chat_app.ui.page_load import ForgetWhoLeft
from chat_app.ui.pages.audit import audit
from chat_app.ui.pages.conversations import conversations
from chat_app.ui.pages.decided import decided
from chat_app.ui.pages.deliveries import deliveries
from chat_app.ui.pages.inbox import inbox
from chat_app.ui.pages.index import index
from chat_app.ui.pages.signin import signin
from chat_app.ui.signin_state import SignInState
from chat_app.ui.state import ChatState

try:
    configure_logging(os.environ)
except ValueError as problem:
    sys.exit(f"chat_app: {problem}")
configure_tracing(os.environ)
tune_collector()  # before Reflex forks its workers: they inherit it
try:
    security = security_from_env()  # the TTL's value, the ledger's Redis
    authenticator = authenticator_from_env("demo")
    policy = policy_from_env(POLICY_PATH)
    remote = remote_agent_from_env(authenticator.mode)
    # A remote agent runs every call under its own policy, naming its own tools; the app's
    # routes them to people, and its own agent (a fallback manifest) applies none.
    agent = build_demo_agent(
        sealer=security.sealer, ledger=security.ledger, policy=policy if remote is None else None
    )
except (ValueError, DatabaseUnavailable, PolicyError) as problem:  # say which, and stop
    sys.exit(f"chat_app: {problem}")
for warning in [
    *remote_agent_problems(remote, authenticator.mode),
    *policy_warnings(
        policy,
        auth_mode=authenticator.mode,
        ttl_seconds=security.ttl_seconds,
        # A remote agent's tools are its own: what its policy names is its to judge.
        input_schemas=agent.input_schemas() if remote is None else None,
    ),
]:
    logging.getLogger("chat_app").warning("%s", warning)


def _desk_connection(run_as: RunAs) -> Connection:
    """A connection for a run the desk does on the server (a continuation an approver's
    answer starts, a conversation started over HTTP), acting for `run_as`."""
    if (far := remote) is not None:
        return SSEConnection(far.url, timeout=120, headers=lambda: far.sign_in(run_as.identity))

    def run(run_input: Any) -> Any:
        return agent.run(
            run_input,
            identity=run_as.identity,
            cosigners=run_as.cosigners,
            deciders=run_as.deciders,
            kept_by_desk=True,
        )

    return InProcessConnection(run, encode=event_to_wire, read=read_run_input)


_desk_tools: list[Any] = []


def _desk_tool_list() -> list[Any]:
    """The desk's clients type approvals with the page's manifest (read once); a client tool
    that needs a browser has none on the server and stays pending until a page runs it."""
    if not _desk_tools:
        _desk_tools.extend(_manifest().tools)
    return _desk_tools


def _connection(identity: Callable[[], Identity]) -> Connection:
    """A tab's connection: the agent runs as whoever is signed in at each run (a remote one
    as the app signs them in to it, if it does)."""
    if (far := remote) is not None:
        return SSEConnection(far.url, timeout=120, headers=lambda: far.sign_in(identity()))

    def run(run_input: Any) -> Any:
        # The desk stores the tab's conversation: its pauses are the desk's to decide.
        return agent.run(run_input, identity=identity(), kept_by_desk=True)

    # The tab's client sends its kept message dicts again with each request.
    return InProcessConnection(run, encode=event_to_wire, read=KeptRunInputReader())


def _remote_json(url: str, headers: Mapping[str, Any] | None = None) -> Mapping[str, Any] | None:
    """The JSON a GET of `url` answers with 200, else None."""
    try:
        response = httpx.get(url, timeout=5, headers=headers)
        if response.status_code == 200:
            data: Mapping[str, Any] = response.json()
            return data
    except (httpx.HTTPError, ValueError):
        pass
    return None


def _manifest() -> ToolManifest:
    """The tools the client types approvals with: the remote server's manifest when it has
    one (`<agent url>/../tools`, `{"tools": [...]}` or a bare list), else the demo agent's
    (the tool definitions must then match by name and schema). What went wrong reading it
    is kept in `problems`, which the page shows once."""
    local = read_manifest({"tools": agent.tool_manifest()})
    if remote is None:
        return local
    found = fetch_manifest(remote.tools_url)
    if found.found:
        return found
    fallback = "Tool approvals are typed with this app's own tool definitions instead."
    return ToolManifest(
        tools=local.tools, problems=tuple(f"{p} {fallback}" for p in found.problems)
    )


def _audit(viewer: Identity) -> Mapping[str, Any] | None:
    """The audit trail `viewer` reads: the remote server's `GET /api/audit` (as them, when
    the app signs people in to it), or this app's own ledger; `None` when there is none to
    read (the page says so, rather than "intact: 0 records")."""
    if remote is not None:
        return _remote_json(remote.api_base + "/audit", remote.sign_in(viewer))
    return audit_report(agent.ledger.records()) if agent.ledger is not None else None


try:
    desk = desk_from_env(
        _desk_connection, tools=_desk_tool_list, policy=policy, agent_reads_policy=remote is None,
        ledger=security.ledger,
    )  # fmt: skip
    notifications = notifications_from_env(
        desk, policy=policy, auth_mode=authenticator.config.mode, ledger=security.ledger
    )
    heartbeat = heartbeat_seconds(HEARTBEAT_SECONDS)
except (ValueError, DatabaseUnavailable) as problem:
    sys.exit(f"chat_app: {problem}")
for warning in fanout_problems(desk):
    logging.getLogger("chat_app").warning("%s", warning)


async def _say_settings() -> None:
    """What this worker runs with, in its log as it starts (`reflex run` prints its own)."""
    running = f"in this process, {describe_model(agent.model)}"
    if remote is not None:
        running = f"remote, at {remote.shown(remote.url)}"
    for line in settings_lines(authenticator.config, policy, security, desk,
                               notifications.settings, agent=running):  # fmt: skip
        logging.getLogger("chat_app").info("%s", line)


def _live_tokens() -> Container[str]:
    """The tabs connected to this worker now."""
    namespace = app.event_namespace
    return namespace.token_to_sid if namespace is not None else {}


session.configure(
    _connection,
    _manifest,
    _audit if security.ledger is not None else None,
    authenticator=authenticator,
    policy=policy,
    sealer=security.sealer,
    desk=desk,
    live_tokens=_live_tokens,
    # The Deliveries page reads the outbox even when no channel is configured (it says so).
    outbox=Outbox(desk.store.engine, notifications.settings),
    notify_settings=notifications.settings,
    agent_reads_policy=remote is None,
    # Reflex runs one backend process where tabs' state is not in Redis.
    one_process=not rx.config.get_config().redis_url,
)

def _opened_by_our_page(origin: str | None, environ: Mapping[str, Any]) -> bool:
    """Engine.IO's origin check: the handshake came from this site's page (`origin.py`), or
    in development from the frontend's own server, on a port of its own."""
    if not is_prod_mode() and origin == (rx.config.get_config().deploy_url or "").rstrip("/"):
        return True
    return not handshake_from_elsewhere(environ)


app = rx.App(
    # POST /api/chat, GET /api/tools, the audit routes, sign-in and the desk's routes
    # (/api/conversations, /api/inbox) on the app's own port.
    api_transformer=create_app(
        agent,
        authenticator=authenticator,
        roles=policy.roles_of if policy is not None else None,
        desk=desk,
        recover=False,  # the app's own lifespan task does (below)
        heartbeat_seconds=heartbeat,
        metrics=MetricsSource(
            DeskStats(desk.store.engine), DeliveryStats(desk.store.engine), metrics_token()
        ),
    ),
    head_components=[
        rx.el.link(rel="icon", type="image/svg+xml", href="/favicon.svg"),
        rx.script(PROPOSED_SCRIPT),
        rx.script(SENDING_SCRIPT),
        rx.script(MOVED_ON_SCRIPT),
        rx.script(DRAFT_SCRIPT),
        rx.script(CLOSE_ON_ESCAPE_SCRIPT),
        rx.script(FOCUS_NEXT_DECISION_SCRIPT),
        rx.script(TYPING_KEEPS_FOCUS_SCRIPT),
        rx.script(ROOT_HAS_SCRIPT),
        rx.script(SKIP_LINK_SCRIPT),
        rx.script(KEEP_PLACE_SCRIPT),
        rx.script(DEMO_SWITCH_SCRIPT),
        rx.script(WHOLE_ON_TAP_SCRIPT),
    ],
    stylesheets=["/forms.css"],
)
# While the connection is lost, each page says so in its own words, in its frame
# (`components.connection`): Reflex's overlay, which shows its framework's with the
# websocket's address, is left out.
app.app_wraps[(5, "Overlay")] = lambda stateful: None
# The app's websocket carries the visitor's session as any request does, and acts with it:
# only this site's pages may open it (`server/origin.py`). Reflex would let any origin.
assert app.sio is not None
app.sio.eio.cors_allowed_origins = _opened_by_our_page
# A page load is sent the tab's whole state: first, the tab forgets whoever left it.
app.add_middleware(ForgetWhoLeft())
app.add_page(
    index, route="/", title="Ops desk · chat_app", image="/logo.svg", on_load=ChatState.on_load
)
app.add_page(
    index,
    route="/c/[thread]",
    title="Conversation · chat_app",
    image="/logo.svg",
    on_load=ChatState.on_load,
)
app.add_page(audit, route=AUDIT_ROUTE, title="Audit · chat_app", on_load=AuditState.load)
app.add_page(signin, route=SIGN_IN_ROUTE, title="Sign in · chat_app", on_load=SignInState.load)
# Conversations a worker that died left running are shown failed (with Retry); answers
# decided but never carried are carried.
app.register_lifespan_task(_say_settings)
app.register_lifespan_task(desk.keep_recovering)
# Notices, reminders, escalations and expiries, in every worker (each fires once: see
# chat_app.desk.timers), and the outbox's deliveries.
for task in notifications.tasks:
    app.register_lifespan_task(task)
app.add_page(
    conversations,
    route="/conversations",
    title="Conversations · chat_app",
    on_load=ConversationsState.load,
)
app.add_page(inbox, route="/inbox", title="Inbox · chat_app", on_load=InboxState.load)
app.add_page(
    decided,
    route="/inbox/decided",
    title="Decided by you · Inbox · chat_app",
    on_load=DecidedState.load,
)
app.add_page(
    deliveries,
    route="/deliveries",
    title="Deliveries · chat_app",
    on_load=DeliveriesState.load,
)

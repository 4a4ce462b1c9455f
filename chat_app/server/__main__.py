"""Serve the demo agent alone: `python -m chat_app.server --host 127.0.0.1 --port 8001`.

Sign-in as `chat_app.config` reads it (`CHAT_APP_AUTH`, default `none` here); the first log
line says which. The approval desk's routes (`docs/protocol.md` §10) are served too, over the
app's database (`CHAT_APP_DATABASE_URL`), once sign-in is on (with `none` they answer 403
saying so); its runs call the agent in this process as the person each acts for.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn
from ag_ui.core import BaseEvent, RunAgentInput
from starlette.applications import Starlette

from chat_app.agent import Agent, event_to_wire
from chat_app.client import Connection, InProcessConnection, read_manifest
from chat_app.config import (
    auth_from_env,
    authenticator_for,
    desk_from_env,
    fanout_problems,
    heartbeat_seconds,
    metrics_token,
    notifications_from_env,
    policy_from_env,
    policy_warnings,
    security_from_env,
    settings_lines,
)
from chat_app.demo import POLICY_PATH, build_demo_agent, describe_model
from chat_app.desk import DeskStats, RunAs
from chat_app.notify.settings import PUBLIC_URL
from chat_app.notify.stats import DeliveryStats
from chat_app.observe import configure_logging, configure_tracing, log_level, server_log_config
from chat_app.trust import PolicyError
from chat_app.trust.store import DatabaseUnavailable

from . import HEARTBEAT_SECONDS
from .app import create_app
from .collector import tune_collector
from .metrics import MetricsSource
from .run_input import read_run_input
from .workers import Workers, reuse_port_available

logger = logging.getLogger("chat_app.server")

#: What each worker process of `--workers N` builds its app with.
FACTORY = "chat_app.server.__main__:app_from_env"


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m chat_app.server", description="Serve the chat_app agent over AG-UI (SSE)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument(
        "--workers", type=int, default=1,
        help="worker processes (give them a shared database, ledger and fan-out: "
        "CHAT_APP_DATABASE_URL=postgresql://…, CHAT_APP_LEDGER_URL=redis://…)",
    )  # fmt: skip
    # Off by default: a log line per request costs more than sealing it (a proxy logs anyway).
    parser.add_argument("--access-log", action="store_true", help="log every request")
    options = parser.parse_args()
    if options.workers < 1:
        sys.exit("chat_app.server: --workers takes a whole number, 1 or more.")
    log_config = _configure_logs()
    level = log_level(os.environ)  # read already: a wrong one stopped the start above
    # Built here once in any case: a setting the server cannot use stops the start now, with
    # its message, rather than in each worker.
    app = _build(announce=True)
    served = dict(
        log_level=level,  # uvicorn takes the number: "notset" it would refuse by name
        log_config=log_config if log_config is not None else uvicorn.config.LOGGING_CONFIG,
        access_log=options.access_log,
        # The client address stays the socket's peer: `CHAT_APP_TRUSTED_PROXIES` decides which
        # proxies' headers are believed, not uvicorn's X-Forwarded-For rewriting.
        proxy_headers=False,
    )
    if options.workers == 1:
        uvicorn.run(app, host=options.host, port=options.port, **served)
    elif reuse_port_available():
        del app  # each worker builds its own
        workers = Workers(FACTORY, options.host, options.port, options.workers, served)
        sys.exit(workers.run())
    else:  # no SO_REUSEPORT: uvicorn's workers, on one shared socket
        uvicorn.run(
            FACTORY, factory=True, workers=options.workers, host=options.host,
            port=options.port, **served,
        )  # fmt: skip


def app_from_env() -> Starlette:
    """The server's app as the environment says: what each worker process of `--workers N`
    builds for itself (uvicorn calls it as a factory)."""
    _configure_logs()
    return _build(announce=False)


def _configure_logs() -> dict[str, Any] | None:
    """This process's logging (`CHAT_APP_LOG_FORMAT`, traces); the log config uvicorn takes."""
    try:
        configure_logging(os.environ)
    except ValueError as error:
        sys.exit(f"chat_app.server: {error}")
    log_config = server_log_config(os.environ)
    configure_tracing(os.environ)
    return log_config


def _build(*, announce: bool) -> Starlette:
    """The agent, the desk, its timers and the app over them, from the environment."""
    try:
        config = auth_from_env("none")
        authenticator = authenticator_for(config)
        policy = policy_from_env(POLICY_PATH)
        security = security_from_env()
        agent = build_demo_agent(sealer=security.sealer, ledger=security.ledger, policy=policy)
        tools = read_manifest({"tools": agent.tool_manifest()}).tools
        desk = desk_from_env(
            connection_for(agent), tools=lambda: tools, policy=policy, ledger=security.ledger
        )
        notifications = notifications_from_env(
            desk, policy=policy, auth_mode=config.mode, ledger=security.ledger
        )
        heartbeat = heartbeat_seconds(HEARTBEAT_SECONDS)
    except (ValueError, DatabaseUnavailable, PolicyError) as error:  # say which, and stop
        sys.exit(f"chat_app.server: {error}")
    if announce:
        settings = notifications.settings
        running = f"in this process, {describe_model(agent.model)}"
        for line in settings_lines(config, policy, security, desk, settings, agent=running):
            logger.info("%s", line)
        for problem in [
            *policy_warnings(policy, auth_mode=config.mode, ttl_seconds=security.ttl_seconds,
                             input_schemas=agent.input_schemas()),
            *fanout_problems(desk),
        ]:  # fmt: skip
            logger.warning("%s", problem)
        if settings.channels and not settings.public_url_set:
            # This server is the HTTP API alone: a notice's link must lead to the app's pages.
            logger.warning(
                "notifications: %s is not set, so links in notices lead to %s, where this "
                "server has no pages: set it to the address people open the app at.",
                PUBLIC_URL, settings.public_url,
            )  # fmt: skip
    engine = desk.store.engine
    app = create_app(
        agent,
        authenticator=authenticator,
        roles=policy.roles_of if policy is not None else None,
        desk=desk,
        metrics=MetricsSource(DeskStats(engine), DeliveryStats(engine), metrics_token()),
        background=notifications.tasks,
        heartbeat_seconds=heartbeat,
    )
    # Everything built so far lives as long as the server: keep it out of every GC pass.
    gc.freeze()
    tune_collector()
    return app


def connection_for(agent: Agent) -> Callable[[RunAs], Connection]:
    """The desk's way to the agent: a run in this process as `run_as` says (the person it acts
    for, and a quorum's earlier approvers as cosigners)."""

    def connect(run_as: RunAs) -> Connection:
        def run(run_input: RunAgentInput) -> AsyncIterator[BaseEvent]:
            return agent.run(
                run_input,
                identity=run_as.identity,
                cosigners=run_as.cosigners,
                deciders=run_as.deciders,
                kept_by_desk=True,
            )

        return InProcessConnection(run, encode=event_to_wire, read=read_run_input)

    return connect


if __name__ == "__main__":
    main()

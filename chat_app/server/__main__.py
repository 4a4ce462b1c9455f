"""Serve the demo agent alone: `python -m chat_app.server --host 127.0.0.1 --port 8001`."""

from __future__ import annotations

import argparse
import gc

import uvicorn

from chat_app.config import security_from_env
from chat_app.demo import build_demo_agent

from .app import create_app


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the chat_app agent over AG-UI (SSE).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    # Off by default: a log line per request costs more than sealing it (a proxy logs anyway).
    parser.add_argument("--access-log", action="store_true", help="log every request")
    options = parser.parse_args()
    security = security_from_env()
    agent = build_demo_agent(sealer=security.sealer, ledger=security.ledger)
    # Everything imported so far lives as long as the server: keep it out of every GC pass.
    gc.freeze()
    uvicorn.run(
        create_app(agent),
        host=options.host,
        port=options.port,
        log_level="info",
        access_log=options.access_log,
    )


if __name__ == "__main__":
    main()

"""Backends the client scenarios run against: the in-process engine, our server over SSE,
and a real TanStack AI server (`tests/interop/js/tanstack_server.mjs`) over SSE."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from chat_app.agent import event_to_wire
from chat_app.client import (
    ChatClient,
    ClientInterruptDefinition,
    ClientTool,
    Connection,
    InProcessConnection,
    SSEConnection,
)
from chat_app.demo import build_demo_agent
from chat_app.server import create_app

JS_DIR = Path(__file__).resolve().parents[1] / "interop" / "js"


@pytest.fixture(autouse=True)
def _no_token_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


class Recording(Connection):
    """Wraps a connection and keeps every request body (as JSON read back)."""

    def __init__(self, inner: Connection) -> None:
        self.inner = inner
        self.requests: list[dict[str, Any]] = []

    async def stream(self, body: Mapping[str, object]) -> AsyncIterator[dict[str, object]]:
        self.requests.append(json.loads(json.dumps(body)))
        async for event in self.inner.stream(body):
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class Backend:
    name: str
    connect: Callable[[], Connection]
    manifest: dict[str, Any]
    definitions: list[ClientInterruptDefinition]
    executed: list[str] = field(default_factory=list)

    def client(
        self, **functions: Callable[[dict[str, object]], object]
    ) -> tuple[ChatClient, Recording]:
        connection = Recording(self.connect())

        def tracked(
            name: str, fn: Callable[[dict[str, object]], object]
        ) -> Callable[[dict[str, object]], object]:
            def run(args: dict[str, object]) -> object:
                self.executed.append(name)
                return fn(args)

            return run

        tools = ClientTool.from_manifest(
            self.manifest, {name: tracked(name, fn) for name, fn in functions.items()}
        )
        return ChatClient(connection, tools=tools, interrupts=self.definitions), connection


def _demo_definitions() -> list[ClientInterruptDefinition]:
    agent = build_demo_agent()
    return [ClientInterruptDefinition.of(item) for item in agent.definitions.values()]


@pytest.fixture(scope="session")
def tanstack_server() -> Iterator[str]:
    node = shutil.which("node")
    if node is None or not (JS_DIR / "node_modules" / "@tanstack" / "ai").is_dir():
        pytest.fail("node and `npm ci --prefix tests/interop/js` are required", pytrace=False)
    process = subprocess.Popen(
        [node, str(JS_DIR / "tanstack_server.mjs"), "0"],
        cwd=JS_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TZ": "UTC"},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(process.stderr.read().decode() if process.stderr else "no output")
        yield f"http://127.0.0.1:{json.loads(line)['port']}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _ours() -> Backend:
    agent = build_demo_agent()
    app = create_app(agent)
    return Backend(
        name="sse-ours",
        connect=lambda: SSEConnection(
            "http://testserver/api/chat", timeout=10, transport=httpx.ASGITransport(app=app)
        ),
        manifest={"tools": agent.tool_manifest()},
        definitions=_demo_definitions(),
    )


def _in_process() -> Backend:
    agent = build_demo_agent()
    return Backend(
        name="in-process",
        connect=lambda: InProcessConnection(agent.run, encode=event_to_wire),
        manifest={"tools": agent.tool_manifest()},
        definitions=_demo_definitions(),
    )


def _tanstack(base: str) -> Backend:
    with httpx.Client() as http:
        manifest = http.get(f"{base}/api/tools").json()
        raw = http.get(f"{base}/api/interrupts").json()["interrupts"]
    definitions = [
        ClientInterruptDefinition(
            id=d["id"], response_schema=d["responseSchema"], payload_schema=d["payloadSchema"]
        )
        for d in raw
    ]
    return Backend(
        name="tanstack",
        connect=lambda: SSEConnection(f"{base}/api/chat", timeout=10),
        manifest=manifest,
        definitions=definitions,
    )


@pytest.fixture(params=["in-process", "sse-ours", "tanstack"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "in-process":
        return _in_process()
    if request.param == "sse-ours":
        return _ours()
    return _tanstack(request.getfixturevalue("tanstack_server"))

"""Real `python -m chat_app.server` processes, signed in to by a trusted proxy, for the tests
that watch what a deployment sends and shows (`test_notify_process.py`).

    env = server_env(CHAT_APP_DATABASE_URL=url, CHAT_APP_DATA_DIR=str(data))
    worker = Worker(Server(env, tmp / "server.log"))
    await worker.start()
    thread = await worker.desk(RITA).start("transfer 5000 to Ada")
    trail = await worker.trail()          # GET /api/audit as Olive (admin by the policy)
    await worker.close()

Every request comes from 127.0.0.1, a trusted proxy by default, carrying the
`X-Forwarded-Email` of the person it is for; the demo policy's `[roles]` make Ada finance and
Olive admin by their emails. The process itself is `tests.desk.test_kill_restart.Server`
(started, SIGKILLed, started again on the same port and environment).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from chat_app.client import DeskClient
from chat_app.demo import POLICY_PATH
from tests.desk.test_kill_restart import Server, poll
from tests.live_server import free_port

__all__ = [
    "ADA",
    "ASK",
    "OLIVE",
    "RITA",
    "Figures",
    "Server",
    "Worker",
    "as_person",
    "figure",
    "poll",
    "server_env",
    "timed_policy",
]

RITA, ADA, OLIVE = "rita@example.com", "ada@example.com", "olive@example.com"
#: A transfer the demo policy's `large-transfers` routes to finance, never its requester.
ASK = "transfer 5000 to Ada"

Labels = frozenset[tuple[str, str]]
#: Every sample of a scrape, by name and labels.
Figures = dict[tuple[str, Labels], float]

#: The repository, where `python -m chat_app.server` runs.
ROOT = Path(__file__).resolve().parents[2]


def server_env(**values: str) -> dict[str, str]:
    """The environment of a server: nothing of the developer's shell that the app reads
    (`CHAT_APP_*`, `OTEL_*`, `REFLEX_REDIS_URL`), sign-in by proxy, replies without delay,
    and `values` on top."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CHAT_APP_", "OTEL_")) and name != "REFLEX_REDIS_URL"
    }
    env.update(
        CHAT_APP_AUTH="proxy",
        CHAT_APP_DEMO_TOKEN_DELAY_MS="0",
        PYTHONUNBUFFERED="1",
    )
    env.update(values)
    return env


def timed_policy(path: Path, *, remind: str, escalate: str, expire: str) -> Path:
    """The demo policy written to `path` with `large-transfers` reminding, escalating to
    admin and expiring after the given durations (`"2s"`)."""
    text = Path(POLICY_PATH).read_text()
    changed, count = re.subn(
        r'^remind_after = "[^"]*"(.*)$',
        f'remind_after = "{remind}"\nexpires_after = "{expire}"',
        text,
        flags=re.MULTILINE,
    )
    changed, escalations = re.subn(
        r'^escalate_after = "[^"]*"', f'escalate_after = "{escalate}"', changed, flags=re.MULTILINE
    )
    assert (count, escalations) == (1, 1), "the demo policy's large-transfers changed shape"
    assert 'escalate_to = ["role:admin"]' in changed
    path.write_text(changed)
    return path


def as_person(email: str) -> dict[str, str]:
    """The proxy's header for `email`."""
    return {"X-Forwarded-Email": email}


def figure(figures: Figures, name: str, **labels: str) -> float:
    """One sample's value; 0 when the scrape has none (a gauge lists only what exists)."""
    return figures.get((name, frozenset(labels.items())), 0.0)


class Worker:
    """One server process and requests to it as people (proxy headers from 127.0.0.1)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._desks: dict[str, DeskClient] = {}
        self._http: httpx.AsyncClient | None = None

    @property
    def base(self) -> str:
        return self.server.base

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(base_url=self.base, timeout=30)
        return self._http

    def desk(self, email: str) -> DeskClient:
        """The desk's HTTP API as `email`."""
        if email not in self._desks:
            self._desks[email] = DeskClient(self.base, headers=as_person(email), timeout=30)
        return self._desks[email]

    async def start(self) -> None:
        await self.server.start()

    async def restart_after_kill(self) -> None:
        """SIGKILL, then start again on the same port, database and data folder."""
        await self.close_clients()  # their connections die with the process
        self.server.kill()
        await self.server.start()

    async def close_clients(self) -> None:
        for desk in self._desks.values():
            await desk.aclose()
        self._desks.clear()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def close(self) -> None:
        await self.close_clients()
        self.server.stop()

    # --- what the server shows ----------------------------------------------------------

    async def trail(self) -> list[dict[str, Any]]:
        """The audit trail (`GET /api/audit` as Olive), its hash chain checked."""
        response = await self.http.get("/api/audit", headers=as_person(OLIVE))
        assert response.status_code == 200, response.text
        report = response.json()
        assert report["chain"]["ok"], f"the trail's chain is broken: {report['chain']}"
        records: list[dict[str, Any]] = report["records"]
        return records

    async def scrape(self, headers: dict[str, str]) -> httpx.Response:
        return await self.http.get("/metrics", headers=headers)

    async def figures(self, headers: dict[str, str]) -> Figures:
        """`GET /metrics` as `headers` say, read with prometheus_client's parser."""
        response = await self.scrape(headers)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == CONTENT_TYPE_LATEST
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples
        }

    async def item_for(self, email: str, thread_id: str) -> dict[str, Any] | None:
        """The pending inbox item of the conversation that `email` may decide, if any."""
        for item in await self.desk(email).inbox(tool="transfer"):
            if item["threadId"] == thread_id:
                found: dict[str, Any] = item
                return found
        return None

    async def paused(self, thread_id: str, approver: str = ADA) -> dict[str, Any]:
        """Once the conversation waits: `approver`'s inbox item for it."""
        found = await poll(
            f"{thread_id} to wait in {approver}'s inbox",
            lambda: self.item_for(approver, thread_id),
            lambda item: item is not None,
        )
        assert found is not None
        return found

    async def settled(self, thread_id: str) -> dict[str, Any]:
        """The conversation once no run is under way on it and it shows no error."""
        return await poll(
            f"{thread_id} to settle",
            lambda: self.desk(RITA).conversation(thread_id),
            lambda c: c["status"] in ("done", "failed") or bool(c["error"]),
        )

    def log_lines(self) -> list[str]:
        """What the process wrote, every start of it, but the launcher's own markers."""
        text = self.server.log.read_text(errors="replace")
        return [line for line in text.splitlines() if not line.startswith("--- start ")]


def server_environment(data_dir: Path, **env: str) -> dict[str, str]:
    """The environment of `python -m chat_app.server` at its defaults: no `CHAT_APP_*`
    variable of the developer's shell, the data folder, and `env`."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CHAT_APP_")}
    environment.update(CHAT_APP_DATA_DIR=str(data_dir), **env)
    return environment


def first_log_line(data_dir: Path, **env: str) -> str:
    """The standalone server's first line on stderr (then it is stopped)."""
    return start_log(data_dir, env, until=lambda _: True)[0]


def start_log(
    data_dir: Path, env: Mapping[str, str], *, until: Callable[[str], bool] | None = None
) -> list[str]:
    """The standalone server's lines on stderr, under `env`, up to the one `until` holds for
    (by default uvicorn's "Application startup complete"), then it is stopped."""
    done = until or (lambda line: "Application startup complete" in line)
    process = subprocess.Popen(
        [sys.executable, "-m", "chat_app.server", "--port", str(free_port())],
        cwd=ROOT,
        env=server_environment(data_dir, **env),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    try:
        for line in process.stderr:
            lines.append(line.strip())
            if done(line):
                break
        return lines
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()

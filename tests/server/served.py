"""A server for the HTTP tests: the demo agent on 127.0.0.1 with its ledger and accounts;
`serve_desk`: with the approval desk too, over a database the test gives."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher
from sqlalchemy import Engine

from chat_app.client import read_manifest
from chat_app.config import authenticator_from_env
from chat_app.demo import build_demo_agent
from chat_app.desk import Desk, DeskStore
from chat_app.interrupts import SSEDecoder
from chat_app.server import create_app
from chat_app.server.__main__ import connection_for
from chat_app.trust import Policy, Sealer, SQLiteLedger
from chat_app.trust.accounts import Accounts
from chat_app.trust.authn import AuthConfig, Authenticator, AuthMode
from chat_app.trust.sessions import SessionSigner
from chat_app.trust.store import open_database
from tests.live_server import serve_asgi


class Served:
    """A server on 127.0.0.1 with its ledger and (but in `none`) its accounts."""

    def __init__(self, base: str, ledger: SQLiteLedger, authenticator: Authenticator) -> None:
        self.base = base
        self.ledger = ledger
        self.authenticator = authenticator
        # No cookie jar: each request sends exactly the cookies the test gives it.
        no_jar = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
        self.http = httpx.Client(base_url=base, timeout=30, cookies=no_jar)

    @property
    def accounts(self) -> Accounts:
        assert isinstance(self.authenticator.directory, Accounts)
        return self.authenticator.directory

    def actors(self) -> list[tuple[str, str | None]]:
        return [(record.kind, record.actor) for record in self.ledger.records()]

    def cookie_of(self, email: str) -> dict[str, str]:
        """Sign in as a demo person; the cookie the server sets, as a header."""
        response = self.http.post("/api/signin/demo", data={"email": email})
        assert response.status_code == 303, response.text
        return {"Cookie": response.headers["set-cookie"].split(";")[0]}

    def chat(self, body: dict[str, Any], headers: dict[str, str]) -> list[dict[str, Any]]:
        return events_of(self.http.post("/api/chat", json=body, headers=headers))

    def verified_by(self) -> list[str]:
        """How each decision's actor was verified, as the trail says."""
        records = self.ledger.records()
        return [record.data["verifiedBy"] for record in records if record.kind == "decision"]


@contextmanager
def serve(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    authenticator: Authenticator | None = None,
    policy: Policy | None = None,
    **env: str,
) -> Iterator[Served]:
    """The demo agent (sealed, a ledger, `policy`) served on 127.0.0.1, signing in as `env`
    (`CHAT_APP_AUTH=…`) says, unless an `authenticator` is given."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if authenticator is None:
        authenticator = authenticator_from_env("none")
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    agent = build_demo_agent(sealer=Sealer(b"k" * 32), ledger=ledger, policy=policy)
    roles = policy.roles_of if policy is not None else None
    with serve_asgi(create_app(agent, authenticator=authenticator, roles=roles)) as base:
        served = Served(base, ledger, authenticator)
        try:
            yield served
        finally:
            served.http.close()


class Clock:
    """The desk's clock: now, or later by `ahead` (a test moves it past an expiry)."""

    def __init__(self) -> None:
        self.ahead = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead


class DeskServed(Served):
    """A `Served` with the approval desk, its database (engine) and its clock."""

    def __init__(
        self, base: str, ledger: SQLiteLedger, authenticator: Authenticator, desk: Desk,
        engine: Engine, clock: Clock,
    ) -> None:  # fmt: skip
        super().__init__(base, ledger, authenticator)
        self.desk = desk
        self.engine = engine
        self.clock = clock

    def person(self, email: str, roles: list[str], token_name: str = "desk") -> dict[str, str]:
        """A new account with `roles` and an API token: its `Authorization` header."""
        self.accounts.add_user(email, "a-long-password", roles)
        return {"Authorization": f"Bearer {self.accounts.create_token(email, token_name)}"}


@contextmanager
def serve_desk(
    tmp_path: Path, database_url: str, *, policy: Policy | None, mode: AuthMode = "demo"
) -> Iterator[DeskServed]:
    """The demo agent and the desk (`create_app(..., desk=)`) on 127.0.0.1, the desk and the
    accounts over the new database at `database_url`, signing in as `mode` says (demo
    cookies, and API tokens in every mode but `none`). The desk reaches the agent as
    `python -m chat_app.server` wires it (`connection_for`)."""
    engine = open_database(database_url)
    fast = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    authenticator = Authenticator(
        AuthConfig(mode=mode),
        signer=SessionSigner(b"s" * 32, ttl_seconds=3600),
        directory=None if mode == "none" else Accounts(engine, hasher=fast),
    )
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    agent = build_demo_agent(sealer=Sealer(b"k" * 32), ledger=ledger, policy=policy)
    tools = read_manifest({"tools": agent.tool_manifest()}).tools
    clock = Clock()
    desk = Desk(
        DeskStore(engine), connection_for=connection_for(agent), tools=lambda: tools,
        policy=policy, clock=clock, audit=ledger.append_async,
    )  # fmt: skip
    roles = policy.roles_of if policy is not None else None
    app = create_app(agent, authenticator=authenticator, roles=roles, desk=desk)
    try:
        with serve_asgi(app) as base:
            served = DeskServed(base, ledger, authenticator, desk, engine, clock)
            try:
                yield served
            finally:
                served.http.close()
    finally:
        engine.dispose()


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return list(SSEDecoder().feed(response.text))

"""Identity from the server side only, over HTTP on a real socket (uvicorn on 127.0.0.1): each
sign-in mode, API tokens, who may read the audit trail, and the standalone server's first log
line. The trail always records the verified identity; `forwardedProps.actor` is ignored."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy.exc import OperationalError

from chat_app.config import authenticator_from_env
from chat_app.demo import build_demo_agent
from chat_app.observe import Seldom
from chat_app.server import create_app
from chat_app.server import signin as signin_module
from chat_app.server.origin import CROSS_SITE
from chat_app.trust import Identity, Sealer, SQLiteLedger
from chat_app.trust.authn import (
    ACCOUNT_REPLACED,
    PASSWORD_CHANGED,
    SIGNED_OUT,
    TOKEN_INVALID,
    AuthConfig,
    Authenticator,
)
from chat_app.trust.sessions import SessionSigner
from tests.live_server import free_port, serve_asgi
from tests.server.process_app import ROOT, first_log_line, server_environment, start_log
from tests.server.served import Served, events_of, serve

AUTH_VARIABLES = (
    "CHAT_APP_AUTH",
    "CHAT_APP_USER_HEADER",
    "CHAT_APP_GROUPS_HEADER",
    "CHAT_APP_TRUSTED_PROXIES",
    "CHAT_APP_SESSION_HOURS",
    "CHAT_APP_DATABASE_URL",
    "CHAT_APP_SECRET",
)
WRONG = "Wrong email or password."


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in AUTH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHAT_APP_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


def pause_body(text: str = "transfer 25 to Ada") -> dict[str, Any]:
    return {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": text}],
    }


def approval_body(paused: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    [item] = paused[-1]["outcome"]["interrupts"]
    return {
        "threadId": "t1",
        "runId": "r2",
        "parentRunId": "r1",
        "messages": paused[-2]["messages"],
        "resume": [
            {"interruptId": item["id"], "status": "resolved", "payload": {"approved": True}}
        ],
        **extra,
    }


def transfer_approved(served: Served, headers: dict[str, str], **extra: Any) -> None:
    """Asks for a transfer and approves it, both as `headers` say; the transfer runs."""
    paused = events_of(served.http.post("/api/chat", json=pause_body(), headers=headers))
    assert paused[-1]["outcome"]["interrupts"], paused[-1]
    done = events_of(
        served.http.post("/api/chat", json=approval_body(paused, **extra), headers=headers)
    )
    assert done[-1]["type"] == "RUN_FINISHED", done[-1]
    assert any(event["type"] == "TOOL_CALL_RESULT" for event in done)


def session_cookie(response: httpx.Response) -> tuple[str, list[str]]:
    """The session cookie's value and its attributes, from `Set-Cookie`."""
    header = response.headers["set-cookie"]
    first, *attributes = (part.strip() for part in header.split(";"))
    name, _, value = first.partition("=")
    assert name == "chat_app_session"
    return value, attributes


def with_session(value: str) -> dict[str, str]:
    return {"Cookie": f"chat_app_session={value}"}


# -- proxy ----------------------------------------------------------------------------------


@pytest.fixture
def proxy_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """Sign-in through a proxy on 127.0.0.1, roles from X-Forwarded-Groups."""
    with serve(
        tmp_path, monkeypatch, CHAT_APP_AUTH="proxy", CHAT_APP_GROUPS_HEADER="X-Forwarded-Groups"
    ) as served:
        yield served


def test_the_proxy_header_is_the_actor_and_a_spoofed_forwarded_actor_is_ignored(
    proxy_server: Served,
) -> None:
    """The issue's opening scenario: the header says mallory, the body says ceo."""
    served = proxy_server
    mallory = {"X-Forwarded-Email": "mallory@corp"}
    transfer_approved(served, mallory, forwardedProps={"actor": "ceo@corp"})
    assert served.actors() == [
        ("pause", "mallory@corp"),
        ("decision", "mallory@corp"),
        ("execution", "mallory@corp"),
    ]
    assert served.verified_by() == ["proxy"]
    auditor = {"X-Forwarded-Email": "audit@corp", "X-Forwarded-Groups": "Auditor, staff"}
    trail = served.http.get("/api/audit", headers=auditor)
    assert trail.status_code == 200
    assert "ceo@corp" not in trail.text
    me = served.http.get("/api/me", headers=auditor).json()
    assert me == {"email": "audit@corp", "name": "", "roles": ["auditor", "staff"],
                  "method": "proxy", "demo": False}  # fmt: skip


def test_the_trail_keeps_the_proxy_groups_a_decider_had(proxy_server: Served) -> None:
    """What let someone decide, as it was then: the groups the proxy sent with the decision
    (they may change at the identity provider later); none said where none were sent."""
    served = proxy_server
    transfer_approved(served, {"X-Forwarded-Email": "ada@corp",
                               "X-Forwarded-Groups": "Finance, staff"})  # fmt: skip
    transfer_approved(served, {"X-Forwarded-Email": "bob@corp"})
    decided = [r for r in served.ledger.records() if r.kind == "decision"]
    assert [(r.actor, r.data["verifiedBy"], r.data.get("roles")) for r in decided] == [
        ("ada@corp", "proxy", ["finance", "staff"]), ("bob@corp", "proxy", None)
    ]  # fmt: skip


def test_the_proxy_header_from_an_untrusted_address_is_refused_and_nothing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(
        tmp_path, monkeypatch, CHAT_APP_AUTH="proxy", CHAT_APP_TRUSTED_PROXIES="10.0.0.0/8"
    ) as served:
        response = served.http.post(
            "/api/chat", json=pause_body(), headers={"X-Forwarded-Email": "ceo@corp"}
        )
        assert response.status_code == 401
        assert response.json() == {"error": "Requests must come through the sign-in proxy."}
        assert served.actors() == []


def test_a_request_through_the_proxy_without_the_header_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(tmp_path, monkeypatch, CHAT_APP_AUTH="proxy") as served:
        response = served.http.post("/api/chat", json=pause_body())
        assert response.status_code == 401
        assert response.json() == {"error": "The sign-in proxy sent no X-Forwarded-Email header."}
        assert served.http.get("/api/audit").status_code == 401
        assert served.http.get("/api/tools").status_code == 200  # the manifest stays open
        assert served.actors() == []


@pytest.mark.parametrize(
    ("sent", "says"),
    [
        ([("X-Forwarded-Email", "not-an-email")], "is not one email address"),
        ([("X-Forwarded-Email", "sam@corp, olive@corp")], "is not one email address"),
        ([("X-Forwarded-Email", "sam@corp"), ("X-Forwarded-Email", "olive@corp")], "2 times"),
    ],
)
def test_a_proxy_header_that_is_not_one_address_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, str]], says: str
) -> None:
    """A proxy that appends its header to the client's, or passes a list, must not make
    whichever address came last (or the whole list) the actor."""
    with serve(tmp_path, monkeypatch, CHAT_APP_AUTH="proxy") as served:
        response = served.http.post("/api/chat", json=pause_body(), headers=sent)
        assert response.status_code == 401
        assert says in response.json()["error"]
        assert served.http.get("/api/me", headers=sent).status_code == 401
        assert served.actors() == []
        one = served.http.get("/api/me", headers={"X-Forwarded-Email": "sam@corp"})
        assert one.json()["email"] == "sam@corp"


def test_a_proxy_group_header_sent_twice_is_refused(proxy_server: Served) -> None:
    """A client's own groups header, appended to by the proxy, must not make it an admin."""
    served = proxy_server
    sent = [("X-Forwarded-Email", "sam@corp"), ("X-Forwarded-Groups", "admin"),
            ("X-Forwarded-Groups", "ops")]  # fmt: skip
    response = served.http.get("/api/me", headers=sent)
    assert response.status_code == 401
    assert response.json()["error"] == (
        "The sign-in proxy sent X-Forwarded-Groups 2 times; it must send one."
    )
    once = served.http.get("/api/me", headers=sent[::2]).json()
    assert (once["email"], once["roles"]) == ("sam@corp", ["ops"])


# -- password -------------------------------------------------------------------------------


@pytest.fixture
def password_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    with serve(tmp_path, monkeypatch, CHAT_APP_AUTH="password") as served:
        served.accounts.add_user("ada@example.com", "ada-password", ["finance"], name="Ada")
        served.accounts.add_user("olive@example.com", "olive-password", ["admin"])
        served.accounts.add_user("audrey@example.com", "audrey-password", ["auditor"])
        yield served


def sign_in(served: Served, email: str, password: str, **fields: str) -> httpx.Response:
    return served.http.post("/api/signin", data={"email": email, "password": password, **fields})


def session_for(served: Served, email: str) -> dict[str, str]:
    response = sign_in(served, email, email.split("@")[0] + "-password")
    assert response.status_code == 303, response.text
    return with_session(session_cookie(response)[0])


def test_signing_in_sets_a_session_cookie_that_identifies_the_account(
    password_server: Served,
) -> None:
    response = sign_in(password_server, " Ada@Example.com ", "ada-password", next="/audit")
    assert response.status_code == 303
    assert response.headers["location"] == "/audit"
    value, attributes = session_cookie(response)
    assert attributes == ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=43200"]
    me = password_server.http.get("/api/me", headers=with_session(value))
    assert me.json() == {"email": "ada@example.com", "name": "Ada", "roles": ["finance"],
                         "method": "password", "demo": False}  # fmt: skip
    transfer_approved(password_server, with_session(value), forwardedProps={"actor": "ceo@x"})
    assert {actor for _, actor in password_server.actors()} == {"ada@example.com"}
    assert password_server.verified_by() == ["password"]


def test_a_sign_in_posted_as_json_is_answered_in_json(password_server: Served) -> None:
    """A script's sign-in gets who signed in, as `/api/me` says it, with the cookie; a
    form's is sent on to where it was going (`test_a_session_…`)."""
    response = password_server.http.post(
        "/api/signin", json={"email": "ada@example.com", "password": "ada-password"}
    )
    assert response.status_code == 200 and "location" not in response.headers
    assert response.json() == {"email": "ada@example.com", "name": "Ada", "roles": ["finance"],
                               "method": "password", "demo": False}  # fmt: skip
    value, _ = session_cookie(response)
    me = password_server.http.get("/api/me", headers=with_session(value))
    assert me.json()["email"] == "ada@example.com"
    failed = password_server.http.post(
        "/api/signin", json={"email": "ada@example.com", "password": "guess-guess"}
    )
    assert failed.status_code == 401 and failed.json() == {"error": WRONG, "code": "refused"}
    # Every refusal names its kind as the rest of the API does: a missing field is the
    # request's fault (400), not a wrong password.
    for partial in ({"email": "ada@example.com"}, {"password": "ada-password"}, {}):
        missing = password_server.http.post("/api/signin", json=partial)
        assert (missing.status_code, missing.json()) == (
            400, {"error": "Enter your email and password.", "code": "invalid"}
        )  # fmt: skip
    not_json = password_server.http.post(
        "/api/signin", content=b"[1]", headers={"Content-Type": "application/json"}
    )
    assert (not_json.status_code, not_json.json()["code"]) == (400, "invalid")


def test_the_cookie_is_secure_when_a_trusted_proxy_says_the_request_was_https(
    password_server: Served,
) -> None:
    response = password_server.http.post(
        "/api/signin",
        data={"email": "ada@example.com", "password": "ada-password"},
        headers={"X-Forwarded-Proto": "https"},
    )
    assert session_cookie(response)[1][-1] == "Secure"


def test_only_a_path_on_this_site_is_followed_after_signing_in(password_server: Served) -> None:
    unsafe = ("https://evil.example/", "//evil.example/x", "/\\evil.example", "desk", "/é", "/a b")
    for target in unsafe:
        response = sign_in(password_server, "ada@example.com", "ada-password", next=target)
        assert response.headers["location"] == "/"


def test_a_wrong_password_and_an_unknown_user_get_the_same_answer(
    password_server: Served,
) -> None:
    wrong = sign_in(password_server, "ada@example.com", "not-her-password", next="/desk")
    unknown = sign_in(password_server, "nobody@example.com", "not-her-password", next="/desk")
    for response, typed in ((wrong, "ada@example.com"), (unknown, "nobody@example.com")):
        assert response.status_code == 303
        assert "set-cookie" not in response.headers
        where = urlsplit(response.headers["location"])
        assert where.path == "/signin"
        # The form comes back with what was typed (never the password) and the same message,
        # sealed (the page shows no message without its seal).
        query = parse_qs(where.query)
        [seal] = query.pop("seal")
        assert query == {"error": [WRONG], "next": ["/desk"], "email": [typed]}
        assert password_server.authenticator.signer.note_sealed(WRONG, seal)
        assert not password_server.authenticator.signer.note_sealed("Go elsewhere.", seal)
    for email in ("ada@example.com", "nobody@example.com"):
        response = password_server.http.post(
            "/api/signin", json={"email": email, "password": "not-her-password"}
        )
        assert (response.status_code, response.json()) == (401, {"error": WRONG, "code": "refused"})


def test_refused_sign_ins_and_tokens_are_logged_for_an_operator_and_routine_ones_not(
    password_server: Served, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong password, a bad token: a WARNING each, naming what and from where (the same
    refusal again within a minute is not written again, and what was typed cannot write a
    line of its own); a page asked for before signing in is no news; a sign-in is INFO."""
    monkeypatch.setattr(signin_module, "_now_and_then", Seldom(every=60.0))
    with caplog.at_level(logging.INFO, logger="chat_app.server.signin"):
        sign_in(password_server, "ada@example.com", "not-her-password")
        sign_in(password_server, "x@example.com\nINFO:     Signed in: olive", "guess")
        for _ in range(3):  # a script polling with a revoked token
            password_server.http.get("/api/me", headers={"Authorization": "Bearer cat_nope"})
        password_server.http.get("/api/me")  # nobody signed in yet: routine
        sign_in(password_server, "ada@example.com", "ada-password")
    said = [(record.levelname, record.getMessage()) for record in caplog.records]
    assert said == [
        ("WARNING", "Sign-in refused for ada@example.com from 127.0.0.1: wrong email or "
                    "password"),
        ("WARNING", "Sign-in refused for x@example.com\\ninfo:     signed in: olive from "
                    "127.0.0.1: wrong email or password"),
        ("WARNING", f"Refused GET /api/me from 127.0.0.1: {TOKEN_INVALID}"),
        ("INFO", "Signed in: ada@example.com (password) from 127.0.0.1"),
    ]  # fmt: skip


def test_repeated_failures_make_the_next_attempt_wait_and_say_how_long(
    password_server: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After three wrong passwords for an email, each next attempt waits 1, 2, 4 … s from
    the last failure. One made sooner is refused at once, saying how long is left, and its
    password is not checked (the right one too): guessing faster learns nothing."""
    accounts = password_server.accounts
    now = [datetime.now(UTC)]
    monkeypatch.setattr(accounts, "_now", lambda: now[0])

    def error_of(response: httpx.Response) -> str:
        assert response.status_code == 303
        return parse_qs(urlsplit(response.headers["location"]).query)["error"][0]

    for _ in range(3):
        assert error_of(sign_in(password_server, "ada@example.com", "guessing!")) == WRONG
    assert error_of(sign_in(password_server, "ada@example.com", "guessing!")) == (
        "Too many failed sign-ins: try again in 1 second."
    )
    now[0] += timedelta(seconds=1)
    assert error_of(sign_in(password_server, "ada@example.com", "guessing!")) == WRONG
    too_soon = sign_in(password_server, "ada@example.com", "ada-password")
    assert error_of(too_soon) == "Too many failed sign-ins: try again in 2 seconds."
    assert "set-cookie" not in too_soon.headers
    as_json = password_server.http.post(
        "/api/signin", json={"email": "ada@example.com", "password": "ada-password"}
    )
    assert (as_json.status_code, as_json.json()["code"]) == (429, "too-many")
    now[0] += timedelta(seconds=1.5)
    assert error_of(sign_in(password_server, "ada@example.com", "x")) == (
        "Too many failed sign-ins: try again in 1 second."
    )
    now[0] += timedelta(seconds=0.5)  # the wait is over: checked, and right
    signed = sign_in(password_server, "ada@example.com", "ada-password")
    assert signed.status_code == 303 and session_cookie(signed)[0]
    # Someone else at the same address was never held back by Ada's failures.
    assert session_cookie(sign_in(password_server, "olive@example.com", "olive-password"))[0]


def test_failures_from_elsewhere_slow_the_person_down_but_never_lock_them_out(
    password_server: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone guessing Olive's password from other addresses: Olive, from hers, is held
    for what is left of the wait, then checked and signed in, not refused."""
    held: list[float] = []

    async def hold(seconds: float) -> None:
        held.append(seconds)

    monkeypatch.setattr(signin_module, "_hold", hold)
    for n in range(5):
        password_server.accounts.record_failure("olive@example.com", f"10.6.6.{n}")
    signed = sign_in(password_server, "olive@example.com", "olive-password")
    assert signed.status_code == 303 and session_cookie(signed)[0]
    assert len(held) == 1 and 0 < held[0] <= 4


def test_signing_out_clears_the_cookie(password_server: Served) -> None:
    headers = session_for(password_server, "ada@example.com")
    response = password_server.http.post("/api/signout", headers=headers)
    assert response.status_code == 303 and response.headers["location"] == "/signin"
    value, attributes = session_cookie(response)
    assert value == "" and "Max-Age=0" in attributes and "HttpOnly" in attributes
    me = password_server.http.get("/api/me")
    assert me.status_code == 401 and me.json() == {"error": "Sign in first."}


def test_signing_out_ends_the_session_in_every_tab(password_server: Served) -> None:
    """The cookie another tab holds (or a copy of it) no longer acts as her: reads and
    decisions are refused saying she signed out; signing in again works at once."""
    this_tab = session_for(password_server, "ada@example.com")
    other_tab = session_for(password_server, "ada@example.com")
    assert password_server.http.get("/api/me", headers=other_tab).status_code == 200
    # Sessions are issued to the millisecond, and those of the sign-out's own one count.
    time.sleep(0.05)
    assert password_server.http.post("/api/signout", headers=this_tab).status_code == 303
    for answer in (
        password_server.http.get("/api/me", headers=other_tab),
        password_server.http.get("/api/audit", headers=other_tab),
        password_server.http.post("/api/chat", headers=other_tab, json={}),
    ):
        assert answer.status_code == 401
        assert answer.json()["error"] == SIGNED_OUT
    again = session_for(password_server, "ada@example.com")
    assert password_server.http.get("/api/me", headers=again).json()["email"] == "ada@example.com"
    # Olive's sessions are hers: Ada signing out ends none of them.
    olive = session_for(password_server, "olive@example.com")
    password_server.http.post("/api/signout", headers=again)
    assert password_server.http.get("/api/me", headers=olive).status_code == 200


def test_a_session_of_an_account_removed_and_made_again_says_so(password_server: Served) -> None:
    stale = session_for(password_server, "ada@example.com")
    time.sleep(0.05)  # sessions are issued to the millisecond; the new account is a later one
    password_server.accounts.remove_user("ada@example.com")
    password_server.accounts.add_user("ada@example.com", "ada-password")
    answer = password_server.http.get("/api/me", headers=stale)
    assert (answer.status_code, answer.json()["error"]) == (401, ACCOUNT_REPLACED)
    again = session_for(password_server, "ada@example.com")
    assert password_server.http.get("/api/me", headers=again).status_code == 200


def test_a_session_a_new_password_ended_says_so(password_server: Served) -> None:
    stale = session_for(password_server, "ada@example.com")
    time.sleep(0.05)  # sessions are issued to the millisecond; the change ends earlier ones
    password_server.accounts.set_password("ada@example.com", "a newer password")
    answer = password_server.http.get("/api/me", headers=stale)
    assert (answer.status_code, answer.json()["error"]) == (401, PASSWORD_CHANGED)
    renewed = sign_in(password_server, "ada@example.com", "a newer password")
    again = with_session(session_cookie(renewed)[0])
    assert password_server.http.get("/api/me", headers=again).json()["email"] == "ada@example.com"


def test_signing_out_clears_the_cookie_when_the_database_does_not_answer(
    password_server: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    def away(email: str) -> None:
        raise OperationalError("UPDATE users", {}, Exception("database is locked"))

    # The app's directory: the accounts object its authenticator holds.
    monkeypatch.setattr(type(password_server.accounts), "sign_out", lambda self, email: away(email))
    headers = session_for(password_server, "ada@example.com")
    response = password_server.http.post("/api/signout", headers=headers)
    assert response.status_code == 303 and response.headers["location"] == "/signin"
    assert session_cookie(response)[0] == ""


def test_signing_in_while_the_database_does_not_answer_says_so(
    password_server: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The accounts' database is away: a script reads 503 `unavailable` as from every other
    route (it was a bare 500 and a traceback), and a browser's form comes back with the
    message and the email typed (it ended on a JSON error page at /api/signin)."""

    def away(self: object, email: str, client: str) -> None:
        raise OperationalError("SELECT sign_in_failures", {}, Exception("connection refused"))

    monkeypatch.setattr(type(password_server.accounts), "sign_in_wait", away)
    body = {"email": "ada@example.com", "password": "ada-password"}
    answer = password_server.http.post("/api/signin", json=body)
    assert (answer.status_code, answer.json()["code"]) == (503, "unavailable")
    assert answer.json()["error"] == (
        "The database is not answering (Exception). Try again in a moment."
    )
    form = password_server.http.post(
        "/api/signin", data={**body, "next": "/inbox"}, follow_redirects=False
    )
    assert form.status_code == 303
    back = parse_qs(urlsplit(form.headers["location"]).query)
    assert urlsplit(form.headers["location"]).path == "/signin"
    assert back["error"] == ["The database is not answering (Exception). Try again in a moment."]
    assert (back["email"], back["next"]) == (["ada@example.com"], ["/inbox"])
    assert "set-cookie" not in form.headers


def test_a_forged_session_is_refused(password_server: Served) -> None:
    value = session_for(password_server, "ada@example.com")["Cookie"].split("=", 1)[1]
    forged_as_olive = SessionSigner(b"a guessed secret", 3600).issue(
        Identity(email="olive@example.com", method="password")
    )
    for forged in (value[:-3] + "abc", forged_as_olive):
        for response in (
            password_server.http.get("/api/me", headers=with_session(forged)),
            password_server.http.post("/api/chat", json=pause_body(), headers=with_session(forged)),
        ):
            assert response.status_code == 401
            assert response.json() == {"error": "This session is not valid; sign in again."}
    assert password_server.actors() == []


def test_an_expired_session_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_800_000_000.0]
    secret_holder = authenticator_from_env("password")  # opens the accounts database
    signer = SessionSigner(b"s" * 32, 60, clock=lambda: now[0])
    authenticator = Authenticator(
        AuthConfig(mode="password", session_ttl_seconds=60),
        signer=signer,
        directory=secret_holder.directory,
    )
    with serve(tmp_path, monkeypatch, authenticator) as served:
        served.accounts.add_user("ada@example.com", "ada-password")
        headers = session_for(served, "ada@example.com")
        assert served.http.get("/api/me", headers=headers).status_code == 200
        now[0] += 61
        response = served.http.post("/api/chat", json=pause_body(), headers=headers)
        assert response.status_code == 401
        assert response.json() == {"error": "Your session expired; sign in again."}


def test_a_removed_account_loses_its_session(password_server: Served) -> None:
    headers = session_for(password_server, "ada@example.com")
    password_server.accounts.remove_user("ada@example.com")
    response = password_server.http.get("/api/me", headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": "This account no longer exists; ask an admin."}


def test_chat_without_a_session_is_refused(password_server: Served) -> None:
    response = password_server.http.post("/api/chat", json=pause_body())
    assert response.status_code == 401
    assert response.json() == {"error": "Sign in first."}
    assert response.headers["www-authenticate"] == "Bearer"


# -- tokens ---------------------------------------------------------------------------------


def test_an_api_token_acts_for_its_owner_until_revoked(password_server: Served) -> None:
    token = password_server.accounts.create_token("ada@example.com", "nightly")
    bearer = {"Authorization": f"Bearer {token}"}
    me = password_server.http.get("/api/me", headers=bearer).json()
    assert (me["email"], me["method"], me["roles"]) == ("ada@example.com", "token", ["finance"])
    transfer_approved(password_server, bearer, forwardedProps={"actor": "ceo@corp"})
    assert {actor for _, actor in password_server.actors()} == {"ada@example.com"}
    assert password_server.verified_by() == ["token"]
    # Signing out is a browser's: with a token it is refused, and the token still works;
    # so with a token that is no longer valid, or sent without "Bearer", beside a session.
    session = session_for(password_server, "ada@example.com")
    for sent in (bearer, {"Authorization": f"Bearer {token}x"}, {"Authorization": token}):
        for headers in (sent, sent | session):
            out = password_server.http.post("/api/signout", headers=headers)
            assert out.status_code == 400
            assert out.json() == {"error": signin_module.TOKEN_SIGN_OUT, "code": "token"}
            assert "set-cookie" not in out.headers
    assert password_server.http.get("/api/me", headers=bearer).status_code == 200
    assert password_server.http.get("/api/me", headers=session).status_code == 200
    password_server.accounts.revoke_token("nightly", "ada@example.com")
    response = password_server.http.post("/api/chat", json=pause_body(), headers=bearer)
    assert response.status_code == 401
    assert response.json() == {"error": "The API token is not valid or was revoked."}


def test_two_authorization_headers_are_refused_whichever_comes_last(
    password_server: Served,
) -> None:
    """Two people's tokens in one request: neither is believed (a client that appends its
    own header to a gateway's would otherwise act as whoever came last)."""
    accounts = password_server.accounts
    olive = accounts.create_token("olive@example.com", "admin-script")
    ada = accounts.create_token("ada@example.com", "nightly")
    for first, last in ((ada, olive), (olive, ada)):
        sent = [("Authorization", f"Bearer {first}"), ("Authorization", f"Bearer {last}")]
        response = password_server.http.get("/api/me", headers=sent)
        assert response.status_code == 401
        assert response.json() == {"error": "Authorization came 2 times; send one."}
        refused = password_server.http.post("/api/chat", json=pause_body(), headers=sent)
        assert refused.status_code == 401
    assert password_server.actors() == []
    alone = password_server.http.get("/api/me", headers={"Authorization": f"Bearer {ada}"})
    assert alone.json()["email"] == "ada@example.com"


def test_a_token_works_in_proxy_mode_from_any_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(
        tmp_path, monkeypatch, CHAT_APP_AUTH="proxy", CHAT_APP_TRUSTED_PROXIES="10.0.0.0/8"
    ) as served:
        served.accounts.add_user("bot@example.com", "bot-password")
        token = served.accounts.create_token("bot@example.com", "deploys")
        transfer_approved(served, {"Authorization": f"Bearer {token}"})
        assert {actor for _, actor in served.actors()} == {"bot@example.com"}


# -- the audit trail --------------------------------------------------------------------------


def test_the_audit_trail_is_for_admins_and_auditors(password_server: Served) -> None:
    for path in ("/api/audit", "/api/audit.jsonl"):
        assert password_server.http.get(path).status_code == 401
        finance = password_server.http.get(
            path, headers=session_for(password_server, "ada@example.com")
        )
        assert finance.status_code == 403
        assert finance.json() == {"error": "The audit trail is for the roles admin and auditor."}
        for reader in ("olive@example.com", "audrey@example.com"):
            response = password_server.http.get(path, headers=session_for(password_server, reader))
            assert response.status_code == 200, reader


def test_roles_can_come_from_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_AUTH", "proxy")
    authenticator = authenticator_from_env("none")
    ledger = SQLiteLedger(tmp_path / "ledger.db")
    app = create_app(
        build_demo_agent(sealer=Sealer(b"k" * 32), ledger=ledger),
        authenticator=authenticator,
        roles=lambda who: who.roles | ({"auditor"} if who.email == "ada@corp" else set()),
    )
    with serve_asgi(app) as base, httpx.Client(base_url=base) as http:
        assert http.get("/api/audit", headers={"X-Forwarded-Email": "ada@corp"}).status_code == 200
        assert http.get("/api/audit", headers={"X-Forwarded-Email": "sam@corp"}).status_code == 403
        me = http.get("/api/me", headers={"X-Forwarded-Email": "ada@corp"}).json()
        assert me["roles"] == ["auditor"]


# -- demo -----------------------------------------------------------------------------------


def test_a_demo_visitor_is_rita_until_they_switch_to_ada(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(tmp_path, monkeypatch, CHAT_APP_AUTH="demo") as served:
        assert served.http.get("/api/me").json() == {
            "email": "rita@example.com", "name": "Rita", "roles": [], "method": "demo",
            "demo": True,
        }  # fmt: skip
        transfer_approved(served, {}, forwardedProps={"actor": "ceo@corp"})
        assert {actor for _, actor in served.actors()} == {"rita@example.com"}
        assert served.verified_by() == ["demo"]
        switched = served.http.post(
            "/api/signin/demo", data={"email": "ada@example.com", "next": "/"}
        )
        assert switched.status_code == 303 and switched.headers["location"] == "/"
        value, attributes = session_cookie(switched)
        assert attributes[:3] == ["HttpOnly", "SameSite=Lax", "Path=/"]
        me = served.http.get("/api/me", headers=with_session(value)).json()
        assert (me["email"], me["roles"], me["demo"]) == ("ada@example.com", ["finance"], True)
        out = served.http.post("/api/signout", headers=with_session(value))
        assert out.headers["location"] == "/"


def test_a_multipart_form_signs_in_as_a_urlencoded_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`curl -F email=ada@example.com` sends multipart/form-data: read as `-d` is."""
    with serve(tmp_path, monkeypatch, CHAT_APP_AUTH="demo") as served:
        fields = {"email": (None, "ada@example.com"), "next": (None, "/inbox")}
        signed = served.http.post("/api/signin/demo", files=fields)
        assert signed.request.headers["content-type"].startswith("multipart/form-data")
        assert (signed.status_code, signed.headers["location"]) == (303, "/inbox")
        value, _ = session_cookie(signed)
        me = served.http.get("/api/me", headers=with_session(value)).json()
        assert me["email"] == "ada@example.com"
        broken = served.http.post(
            "/api/signin/demo", content=b"--x\r\nnot a part",
            headers={"content-type": "multipart/form-data; boundary=x"},
        )  # fmt: skip
        assert broken.status_code == 400 and broken.json()["code"] == "invalid"
        assert "set-cookie" not in broken.headers


def test_only_demo_people_can_be_chosen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(tmp_path, monkeypatch, CHAT_APP_AUTH="demo") as served:
        response = served.http.post("/api/signin/demo", json={"email": "ceo@corp"})
        assert response.status_code == 400
        assert response.json() == {"error": "ceo@corp is not a demo person.", "code": "invalid"}
        assert "set-cookie" not in response.headers
        for empty in ({}, {"email": "  "}):
            nobody = served.http.post("/api/signin/demo", json=empty)
            assert (nobody.status_code, nobody.json()["error"]) == (
                400, "Say who to be: send the demo person's email as `email`."
            )  # fmt: skip
        password = served.http.post(
            "/api/signin", data={"email": "rita@example.com", "password": "whatever1"}
        )
        assert (password.status_code, password.json()["code"]) == (404, "unknown")


def test_without_sign_in_everything_stays_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(tmp_path, monkeypatch) as served:
        transfer_approved(served, {"X-Forwarded-Email": "ceo@corp"})
        assert {actor for _, actor in served.actors()} == {None}
        assert served.verified_by() == ["none"]
        assert served.http.get("/api/audit").status_code == 200
        assert served.http.get("/api/me").json()["method"] == "none"


# -- python -m chat_app.server ------------------------------------------------------------------


def test_the_standalone_server_says_which_sign_in_is_on(tmp_path: Path) -> None:
    assert first_log_line(tmp_path) == (
        "INFO:     sign-in: none — anyone who can reach this port can answer any pause"
    )
    assert first_log_line(tmp_path, CHAT_APP_AUTH="proxy") == (
        "INFO:     sign-in: proxy (X-Forwarded-Email from 127.0.0.1/32, ::1/128)"
    )


def test_without_sign_in_the_start_names_the_rules_nobody_can_satisfy(tmp_path: Path) -> None:
    """The demo policy's approvers cannot be told apart without sign-in: the start says
    which rules refuse every answer, and what to change; with sign-in, or no such rule,
    it says nothing of it."""
    warned = [line for line in start_log(tmp_path, {}) if "nobody can be told apart" in line]
    assert warned == [
        "WARNING:     sign-in is off (CHAT_APP_AUTH=none), so nobody can be told apart: "
        f"{ROOT / 'chat_app' / 'demo' / 'policy.toml'}, rules 'large-transfers', 'key-rotation' "
        "refuse every answer but the requester's Cancel. Turn sign-in on "
        "(CHAT_APP_AUTH=password or proxy), or the policy off (CHAT_APP_POLICY=none)."
    ]
    for env in ({"CHAT_APP_AUTH": "proxy"}, {"CHAT_APP_POLICY": "none"}):
        assert not [line for line in start_log(tmp_path, env) if "told apart" in line], env


def test_the_standalone_server_refuses_a_bad_sign_in_mode(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "chat_app.server", "--port", str(free_port())],
        cwd=ROOT,
        env=server_environment(tmp_path, CHAT_APP_AUTH="oauth"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 1
    assert finished.stderr.strip() == (
        "chat_app.server: CHAT_APP_AUTH='oauth' is not a sign-in mode; use one of demo, "
        "password, proxy, none."
    )


def test_the_standalone_server_refuses_a_policy_it_cannot_use(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[roles]\nfinance = ["ada@example.com"]\n\n'
        '[[rules]]\nname = "big"\ntool = "transfer"\napprovers = ["role:finanse"]\n'
    )
    finished = subprocess.run(
        [sys.executable, "-m", "chat_app.server", "--port", str(free_port())],
        cwd=ROOT,
        env=server_environment(tmp_path, CHAT_APP_POLICY=str(policy)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 1
    last = finished.stderr.strip().splitlines()[-1]
    assert last.startswith(f"chat_app.server: {policy}, rule 'big':")
    assert "finanse" in last and "finance" in last


def test_another_site_cannot_sign_a_visitor_in_or_out(password_server: Served) -> None:
    """Login CSRF: a page elsewhere posting the attacker's credentials is refused."""
    elsewhere = {"Origin": "https://evil.example"}
    response = password_server.http.post(
        "/api/signin", data={"email": "ada@example.com", "password": "ada-password"},
        headers=elsewhere,
    )  # fmt: skip
    assert response.status_code == 403 and "set-cookie" not in response.headers
    assert password_server.http.post("/api/signout", headers=elsewhere).status_code == 403
    here = {"Origin": password_server.base}
    same = password_server.http.post(
        "/api/signin", data={"email": "ada@example.com", "password": "ada-password"},
        headers=here,
    )  # fmt: skip
    assert same.status_code == 303 and "set-cookie" in same.headers


def test_a_page_elsewhere_cannot_act_with_a_visitors_session(password_server: Served) -> None:
    """A page on another port or a sibling subdomain is the same site to a browser, which
    sends it the session cookie: the browser's `Origin` (or, for a post, `Referer`) is what
    says the request is not this site's own page."""
    ada = session_for(password_server, "ada@example.com")
    host = password_server.base.removeprefix("http://")
    elsewhere = "http://" + host.rsplit(":", 1)[0] + ":9998"  # the same host, another port
    for sent in ({"Origin": elsewhere}, {"Origin": "null"}, {"Referer": elsewhere + "/page"}):
        response = password_server.http.post("/api/chat", json=pause_body(), headers=ada | sent)
        assert response.status_code == 403, sent
        assert response.json() == {"error": CROSS_SITE}
        assert "www-authenticate" not in response.headers
    assert password_server.actors() == []  # nothing ran
    # A script reading what Ada may read is refused too; a link she follows is not.
    assert (
        password_server.http.get("/api/me", headers=ada | {"Origin": elsewhere}).status_code == 403
    )
    assert (
        password_server.http.get("/api/audit", headers=ada | {"Origin": elsewhere}).status_code
        == 403
    )
    followed = password_server.http.get("/api/me", headers=ada | {"Referer": elsewhere})
    assert followed.status_code == 200
    # This site's own pages, also as a reverse proxy names them, act as Ada.
    here = {"Origin": password_server.base}
    assert password_server.http.get("/api/me", headers=ada | here).json()["email"] == (
        "ada@example.com"
    )
    proxied = {"Origin": "https://desk.corp.example", "X-Forwarded-Host": "desk.corp.example"}
    assert password_server.http.get("/api/me", headers=ada | proxied).status_code == 200
    # What a current browser says of the page decides, whatever else a script sends; a
    # proxy that rewrites Host changes nothing for this site's own pages.
    spoofed = {"Sec-Fetch-Site": "same-site", "Origin": password_server.base,
               "X-Forwarded-Host": host}  # fmt: skip
    response = password_server.http.post("/api/chat", json=pause_body(), headers=ada | spoofed)
    assert response.status_code == 403
    own = {"Sec-Fetch-Site": "same-origin", "Origin": "https://desk.corp.example"}
    assert password_server.http.get("/api/me", headers=ada | own).status_code == 200
    # An API token is sent by the script holding it, from wherever it runs.
    token = password_server.accounts.create_token("ada@example.com", "dashboard")
    bearer = {"Authorization": f"Bearer {token}", "Origin": elsewhere}
    transfer_approved(password_server, bearer)
    assert password_server.verified_by() == ["token"]



def test_a_quorum_the_policy_files_people_cannot_reach_starts_with_a_warning(
    tmp_path: Path,
) -> None:
    """Ada alone is finance in the file, and Bob's account may hold the role too: the server
    starts (it refused to, counting the file's people alone), and says what it cannot know."""
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[roles]\nfinance = ["ada@example.com"]\n[[rules]]\nname = "large-transfers"\n'
        'tool = "transfer"\napprovers = ["role:finance"]\nquorum = 2\n'
    )
    lines = start_log(tmp_path, {"CHAT_APP_AUTH": "password", "CHAT_APP_POLICY": str(policy)})
    assert "Application startup complete" in lines[-1]
    assert f"WARNING:     {policy}, rule 'large-transfers': `quorum` is 2, but only 1 person " \
        "(ada@example.com) could approve, unless accounts or a sign-in proxy's groups give " \
        "role finance to more people." in lines

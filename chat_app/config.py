"""Deployment settings read from the environment (the app and the standalone server).

| variable | default | what |
| --- | --- | --- |
| `CHAT_APP_DATA_DIR` | `.chat_app_data` | the app's data folder (secret, SQLite); new: mode 0700 |
| `CHAT_APP_SECRET` | generated once in the data folder | the HMAC key that seals interrupts |
| `CHAT_APP_INTERRUPT_TTL_SECONDS` | `86400` | how long any interrupt can be answered (≤ 50 y) |
| `CHAT_APP_LEDGER_URL` | SQLite in the data folder | `redis://…` for many workers or machines |
| `CHAT_APP_SECURE` | `1` | `0` turns sealing and the ledger off (a bare TanStack-like server) |
| `CHAT_APP_DATABASE_URL` | SQLite in the data folder | the app's database (accounts, API tokens) |
| `CHAT_APP_AUTH` | `demo`; server alone: `none` | sign-in: `demo`, `password`, `proxy`, `none` |
| `CHAT_APP_USER_HEADER` | `X-Forwarded-Email` | `proxy`: the header holding the email |
| `CHAT_APP_GROUPS_HEADER` | none | `proxy`: the header holding groups (comma-separated: roles) |
| `CHAT_APP_NAME_HEADER` | none | `proxy`: the header holding the person's display name |
| `CHAT_APP_TRUSTED_PROXIES` | `127.0.0.1/32,::1/128` | where proxy headers are believed from |
| `CHAT_APP_SESSION_HOURS` | `12` | how long a sign-in (session cookie) lasts |
| `CHAT_APP_POLICY` | `chat_app/demo/policy.toml` | who may decide what; `none`: the requester |
| `CHAT_APP_FANOUT_URL` | `REFLEX_REDIS_URL` | Redis: the desk's live notices across workers |
| `CHAT_APP_DESK_LEASE_SECONDS` | `60` | how long a dead worker's run stays "running" |
| `CHAT_APP_RUN_SECONDS` | `1800` | how long a run the desk makes may take before it is stopped |
| `CHAT_APP_TIMER_SECONDS` | `5` | how often a worker looks for due notices and expiries |
| `CHAT_APP_NOTIFY_IDLE_SECONDS` | `60` | when a requester is told of their own decision |
| `CHAT_APP_WEBHOOK_URL`, `CHAT_APP_SMTP_URL`, … | none | notifications (`notify/settings.py`) |
| `CHAT_APP_METRICS_TOKEN` | none | a bearer token that may read `GET /metrics` (admins may too) |
| `CHAT_APP_LOG_FORMAT` | `text` | `json`: log lines as JSON |
| `CHAT_APP_HEARTBEAT_SECONDS` | `15` | a run's stream quiet this long sends an SSE comment |
| `OTEL_EXPORTER_OTLP_ENDPOINT` | none | traces of each decision, over OTLP/HTTP |

Every time in seconds here, and every time a policy names, is at most fifty years
(`LONGEST_DURATION`: a sealed id's expiry is written in eight hex digits, to 2106).

An identity never comes from a request body: `forwardedProps.actor` is ignored. API tokens
(`Authorization: Bearer …`) work in every mode but `none`.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from chat_app.desk import (
    LEASE_SECONDS,
    RUN_SECONDS,
    ConnectionFor,
    Desk,
    DeskStore,
    Fanout,
    PeopleFor,
    Timers,
    ToolSource,
)
from chat_app.desk.desk import WATCH_SECONDS
from chat_app.notify import Deliverer, Delivery, NotifySettings, Outbox, Recipient
from chat_app.observe import decision_span
from chat_app.trust import (
    DEFAULT_TTL_SECONDS,
    DEMO_PEOPLE,
    Identity,
    Ledger,
    LedgerUnusable,
    Policy,
    Sealer,
    describe_duration,
    load_secret,
    open_ledger,
    rule_lifetime,
)
from chat_app.trust.accounts import Accounts
from chat_app.trust.authn import (
    AUTH_MODES,
    DEFAULT_TRUSTED_PROXIES,
    DEFAULT_USER_HEADER,
    AuthConfig,
    Authenticator,
    AuthMode,
    forwarded_identity,
    parse_networks,
)
from chat_app.trust.people import People
from chat_app.trust.policy import LONGEST_DURATION
from chat_app.trust.sessions import SessionSigner
from chat_app.trust.store import (
    DATABASE_URL_ENV,
    data_folder,
    database_url,
    open_database,
    shown_url,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine

AUTH_ENV = "CHAT_APP_AUTH"
USER_HEADER_ENV = "CHAT_APP_USER_HEADER"
GROUPS_HEADER_ENV = "CHAT_APP_GROUPS_HEADER"
NAME_HEADER_ENV = "CHAT_APP_NAME_HEADER"
TRUSTED_PROXIES_ENV = "CHAT_APP_TRUSTED_PROXIES"
SESSION_HOURS_ENV = "CHAT_APP_SESSION_HOURS"
DEFAULT_SESSION_HOURS = 12.0
#: An HTTP header name (RFC 9110 token).
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@dataclass(frozen=True)
class Security:
    sealer: Sealer | None
    ledger: Ledger | None

    @property
    def ttl_seconds(self) -> float | None:
        """How long an interrupt lives; `None` when nothing is sealed, so nothing expires."""
        return self.sealer.ttl_seconds if self.sealer is not None else None


def data_dir() -> Path:
    """The app's data folder (`CHAT_APP_DATA_DIR`); whatever writes there first makes it,
    readable by this user alone (`trust.seal.make_private_folder`)."""
    return data_folder(os.environ.get("CHAT_APP_DATA_DIR"))


TTL_ENV = "CHAT_APP_INTERRUPT_TTL_SECONDS"
SECURE_ENV = "CHAT_APP_SECURE"
LEDGER_URL_ENV = "CHAT_APP_LEDGER_URL"
#: Fifty years (`LONGEST_DURATION`): an interrupt must still be able to say when it expires,
#: and no other setting's time may be longer.
MAX_TTL_SECONDS = LONGEST_DURATION.total_seconds()


def interrupt_ttl_from_env() -> float | None:
    """How long an interrupt lives, in seconds (`CHAT_APP_INTERRUPT_TTL_SECONDS`); `None` when
    `CHAT_APP_SECURE=0`, where nothing is sealed and nothing expires.

    Raises:
        ValueError: the TTL is not a number of seconds above 0 and at most `MAX_TTL_SECONDS`;
            the message names it.
    """
    if os.environ.get(SECURE_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    return _seconds(TTL_ENV, DEFAULT_TTL_SECONDS, at_most=MAX_TTL_SECONDS)


def security_from_env() -> Security:
    """Sealing and the ledger, on unless `CHAT_APP_SECURE=0`.

    Raises:
        ValueError: `CHAT_APP_INTERRUPT_TTL_SECONDS` is not a number of seconds above 0 and at
            most `MAX_TTL_SECONDS`; the message names it.
        LedgerUnusable: the ledger's Redis does not answer or could lose answers (a
            `ValueError` too), named by its variable.
    """
    ttl = interrupt_ttl_from_env()
    if ttl is None:
        return Security(sealer=None, ledger=None)
    folder = data_dir()
    try:
        ledger = open_ledger(os.environ.get(LEDGER_URL_ENV), folder)
    except LedgerUnusable as error:
        raise LedgerUnusable(f"{LEDGER_URL_ENV}: {error}") from None
    return Security(sealer=Sealer(load_secret(folder), ttl_seconds=ttl), ledger=ledger)


POLICY_ENV = "CHAT_APP_POLICY"


def policy_from_env(default: Path | None) -> Policy | None:
    """The policy `CHAT_APP_POLICY` names (else `default`); `None` for `none` or no default.

    A file that is missing or wrong raises `PolicyError` naming the file, the rule and the fix:
    the app does not start on a policy it cannot read.
    """
    configured = os.environ.get(POLICY_ENV, "").strip()
    if configured.lower() == "none":
        return None
    path = Path(configured) if configured else default
    return Policy.load(path) if path is not None else None


def auth_from_env(default_mode: AuthMode) -> AuthConfig:
    """How people sign in, from `CHAT_APP_AUTH` and the variables that go with it.

    Raises:
        ValueError: a value is not usable; the message names the variable and what it takes.
    """
    raw_mode = os.environ.get(AUTH_ENV, "").strip().lower() or default_mode
    mode = next((known for known in AUTH_MODES if known == raw_mode), None)
    if mode is None:
        raise ValueError(
            f"{AUTH_ENV}={raw_mode!r} is not a sign-in mode; use one of {', '.join(AUTH_MODES)}."
        )
    user_header = os.environ.get(USER_HEADER_ENV, "").strip() or DEFAULT_USER_HEADER
    groups_header = os.environ.get(GROUPS_HEADER_ENV, "").strip() or None
    name_header = os.environ.get(NAME_HEADER_ENV, "").strip() or None
    headers = (
        (USER_HEADER_ENV, user_header),
        (GROUPS_HEADER_ENV, groups_header),
        (NAME_HEADER_ENV, name_header),
    )
    for variable, header in headers:
        if header is not None and not _HEADER_NAME.fullmatch(header):
            raise ValueError(f"{variable}={header!r} is not an HTTP header name.")
    proxies = os.environ.get(TRUSTED_PROXIES_ENV, "").strip()
    try:
        trusted = parse_networks(proxies.split(",")) if proxies else DEFAULT_TRUSTED_PROXIES
    except ValueError as error:
        raise ValueError(f"{TRUSTED_PROXIES_ENV}: {error}; give addresses or CIDRs, "
                         "comma-separated (e.g. 10.0.0.0/8,127.0.0.1).") from None  # fmt: skip
    hours_text = os.environ.get(SESSION_HOURS_ENV, "").strip()
    try:
        hours = float(hours_text) if hours_text else DEFAULT_SESSION_HOURS
    except ValueError:
        hours = math.nan
    if not (0 < hours < math.inf):
        raise ValueError(f"{SESSION_HOURS_ENV}={hours_text!r} is not a number of hours above 0.")
    return AuthConfig(
        mode=mode,
        user_header=user_header,
        groups_header=groups_header,
        name_header=name_header,
        trusted_proxies=trusted,
        session_ttl_seconds=hours * 3600,
    )


def authenticator_from_env(default_mode: AuthMode) -> Authenticator:
    """`authenticator_for(auth_from_env(default_mode))`."""
    return authenticator_for(auth_from_env(default_mode))


def authenticator_for(config: AuthConfig) -> Authenticator:
    """The `Authenticator` for `config`: sessions signed with the app's secret, and the
    accounts and API tokens of the app's database (`CHAT_APP_DATABASE_URL`, opened and
    migrated here) in every mode but `none`.

    Raises:
        DatabaseUnavailable: the database cannot be opened or migrated.
    """
    folder = data_dir()
    signer = SessionSigner(load_secret(folder), ttl_seconds=config.session_ttl_seconds)
    directory = None
    if config.mode != "none":
        directory = Accounts(app_database())
    return Authenticator(config, signer=signer, directory=directory)


@cache
def app_database() -> Engine:
    """The app's database (`CHAT_APP_DATABASE_URL`, else SQLite in the data folder), opened
    and migrated once per process.

    Raises:
        DatabaseUnavailable: it cannot be opened or migrated (the message names the URL).
    """
    return open_database(database_url(os.environ.get(DATABASE_URL_ENV), data_dir()))


FANOUT_URL_ENV = "CHAT_APP_FANOUT_URL"
#: Reflex's own Redis (its state across workers), which the desk's notices use by default.
REFLEX_REDIS_ENV = "REFLEX_REDIS_URL"
LEASE_ENV = "CHAT_APP_DESK_LEASE_SECONDS"
RUN_ENV = "CHAT_APP_RUN_SECONDS"


def desk_from_env(
    connection_for: ConnectionFor,
    *,
    tools: ToolSource,
    policy: Policy | None,
    agent_reads_policy: bool = True,
    ledger: Ledger | None = None,
) -> Desk:
    """The approval desk over the app's database, with live notices through Redis when
    `CHAT_APP_FANOUT_URL` (else Reflex's `REFLEX_REDIS_URL`) names one. `agent_reads_policy`:
    the agent runs in this process, gated by `policy` (not a remote one). The answers it
    refuses go into `ledger`'s audit trail.

    Raises:
        ValueError: `CHAT_APP_DESK_LEASE_SECONDS` or `CHAT_APP_RUN_SECONDS` is not a number
            above 0.
        DatabaseUnavailable: the database cannot be opened or migrated.
    """
    redis_url = (
        os.environ.get(FANOUT_URL_ENV, "").strip()
        or os.environ.get(REFLEX_REDIS_ENV, "").strip()
        or None
    )
    lease = _seconds(LEASE_ENV, LEASE_SECONDS)
    run_seconds = _seconds(RUN_ENV, RUN_SECONDS)
    return Desk(
        DeskStore(app_database()),
        connection_for=connection_for,
        tools=tools,
        policy=policy,
        fanout=Fanout(redis_url),
        lease_seconds=lease,
        run_seconds=run_seconds,
        agent_reads_policy=agent_reads_policy,
        audit=ledger.append_async if ledger is not None else None,
    )


TIMER_ENV = "CHAT_APP_TIMER_SECONDS"
NOTIFY_IDLE_ENV = "CHAT_APP_NOTIFY_IDLE_SECONDS"
METRICS_TOKEN_ENV = "CHAT_APP_METRICS_TOKEN"


@dataclass(frozen=True)
class Notifications:
    """The desk's timers and the outbox's deliverer: both run in every worker, from start to
    shutdown (`tasks`)."""

    timers: Timers
    deliverer: Deliverer | None
    settings: NotifySettings
    #: Set when notices were queued: the deliverer sends them at once.
    queued: asyncio.Event

    @property
    def tasks(self) -> list[Callable[[], Awaitable[None]]]:
        tasks: list[Callable[[], Awaitable[None]]] = [self.timers.run]
        deliverer = self.deliverer
        if deliverer is not None:

            async def deliver() -> None:
                await deliverer.run(self.queued)

            tasks.append(deliver)
        return tasks


def notifications_from_env(
    desk: Desk, *, policy: Policy | None, auth_mode: AuthMode, ledger: Ledger | None
) -> Notifications:
    """Notices, reminders, escalation and expiry for `desk`, sent as the `CHAT_APP_WEBHOOK_*`,
    `CHAT_APP_SMTP_URL` and `CHAT_APP_MAIL_FROM` settings say (`chat_app.notify.settings`).

    Raises:
        ValueError: a setting is not usable; the message names the variable (a bad webhook
            or SMTP URL stops the start, rather than every notice failing later).
    """
    port = os.environ.get("PORT", "").strip() or "8000"
    settings = NotifySettings.from_env(os.environ, default_public_url=f"http://localhost:{port}")
    desk.notify_idle_seconds = _seconds(NOTIFY_IDLE_ENV, 60.0)
    outbox = Outbox(desk.store.engine, settings) if settings.channels else None
    deliverer = None
    audit = ledger.append_async if ledger is not None else None
    if outbox is not None:
        deliverer = Deliverer(
            outbox,
            settings,
            worker=desk.worker,
            audit=audit,
            on_sent=_notified,
            settled=desk.store.settled,
        )
    queued = asyncio.Event()
    timers = Timers(
        desk,
        people=people_for(policy, auth_mode),
        outbox=outbox,
        settings=settings,
        audit=audit,
        every_seconds=_seconds(TIMER_ENV, 5.0),
        on_enqueued=queued.set,
    )
    return Notifications(timers=timers, deliverer=deliverer, settings=settings, queued=queued)


TTL_SOURCE = f"the interrupt TTL, {TTL_ENV}"


def policy_warnings(
    policy: Policy | None,
    *,
    auth_mode: AuthMode,
    ttl_seconds: float | None,
    input_schemas: Mapping[str, Mapping[str, Any] | None] | None,
) -> list[str]:
    """What a start warns of in `policy`, under sign-in `auth_mode` and an interrupt TTL of
    `ttl_seconds` (`None`: nothing expires): rules nobody can be told apart for, timers that
    never come, quorums short of people, and `editable` names the agent's tools
    (`input_schemas`; `None` for a remote agent's, which are its own to judge) do not take.
    The app, `python -m chat_app.server` and `python -m chat_app policy check` say the same."""
    return [
        *policy_sign_in_problems(policy, auth_mode),
        *policy_time_problems(policy, ttl_seconds),
        *policy_quorum_problems(policy),
        *(policy_edit_problems(policy, input_schemas) if input_schemas is not None else []),
    ]


def policy_time_problems(policy: Policy | None, ttl_seconds: float | None) -> list[str]:
    """Each rule's reminder or escalation that could never come: due after its decisions
    expire (the rule's `expires_after`, else the interrupt TTL `ttl_seconds`; `None`: nothing
    expires). Not an error — the rule still routes and expires — but worth a warning at
    start."""
    if policy is None or ttl_seconds is None:
        return []
    problems: list[str] = []
    for rule in policy.rules:
        lifetime = timedelta(seconds=rule_lifetime(rule, ttl_seconds))
        for key, after in (("remind_after", rule.remind_after),
                           ("escalate_after", rule.escalate_after)):  # fmt: skip
            if after is not None and after >= lifetime:
                source = "its expires_after" if rule.expires_after else TTL_SOURCE
                problems.append(
                    f"{policy.source}, rule {rule.name!r}: {key} is {describe_duration(after)}, "
                    f"but its decisions expire after {describe_duration(lifetime)} ({source}), "
                    "so it never comes; shorten it or raise the expiry."
                )
    return problems


def policy_quorum_problems(policy: Policy | None) -> list[str]:
    """Each rule whose quorum the policy file's own people cannot reach
    (`Policy.short_quorums`): a warning at start, since accounts or a proxy may give its
    roles to more people."""
    return [] if policy is None else policy.short_quorums()


def policy_edit_problems(
    policy: Policy | None, input_schemas: Mapping[str, Mapping[str, Any] | None]
) -> list[str]:
    """Each name a rule's `editable` gives that its tool does not take
    (`Policy.edit_problems`): a warning at start."""
    return [] if policy is None else policy.edit_problems(input_schemas)


def policy_sign_in_problems(policy: Policy | None, auth_mode: AuthMode) -> list[str]:
    """Without sign-in nobody can be told apart, so a rule that names its approvers or keeps
    the requester out refuses every answer but the requester's own Cancel: worth a warning
    at start (the server stays safe, not open)."""
    if policy is None or auth_mode != "none":
        return []
    stuck = [rule.name for rule in policy.rules if rule.decide is None
             and (rule.approvers or rule.not_requester)]  # fmt: skip
    if not stuck:
        return []
    names = ", ".join(repr(name) for name in stuck)
    return [
        f"sign-in is off ({AUTH_ENV}=none), so nobody can be told apart: {policy.source}, "
        f"rule{'s' if len(stuck) > 1 else ''} {names} refuse{'' if len(stuck) > 1 else 's'} "
        "every answer but the requester's Cancel. Turn sign-in on "
        f"({AUTH_ENV}=password or proxy), or the policy off ({POLICY_ENV}=none)."
    ]


def people_for(policy: Policy | None, auth_mode: AuthMode) -> PeopleFor:
    """Who the inbox routes name (`trust.people`), from the sources `auth_mode` has: the
    accounts of the app's database (`password`, `proxy`) or the demo people (`demo`)."""
    accounts = Accounts(app_database()) if auth_mode in ("password", "proxy") else None
    people = People(policy, accounts=accounts, demo=DEMO_PEOPLE if auth_mode == "demo" else ())

    def recipients(routes: Sequence[str]) -> list[Recipient]:
        return [Recipient(email=person.email, name=person.name) for person in people.named(routes)]

    return recipients


def _notified(delivery: Delivery) -> None:
    """A notice went out: a step of its decision's trace."""
    if delivery.decision_id:
        decision_span(
            delivery.decision_id, "notified", start=delivery.sent_at or datetime.now(UTC),
            attributes={"notice.event": delivery.event, "notice.channel": delivery.channel,
                        "notice.recipient": delivery.recipient},
        )  # fmt: skip


AGENT_URL_ENV = "CHAT_APP_AGENT_URL"
AGENT_SIGN_IN_ENV = "CHAT_APP_AGENT_SIGN_IN"
TOOLS_URL_ENV = "CHAT_APP_TOOLS_URL"


@dataclass(frozen=True, slots=True)
class RemoteAgent:
    """The agent the app talks to over SSE instead of its own (`CHAT_APP_AGENT_URL`), and
    whether each request signs its person in to it as their sign-in proxy
    (`CHAT_APP_AGENT_SIGN_IN=proxy`, `trust.authn.forwarded_identity`)."""

    url: str
    as_proxy: bool
    #: Its tool manifest, where it is not beside its chat route (`CHAT_APP_TOOLS_URL`).
    manifest_url: str | None = None

    @property
    def api_base(self) -> str:
        """Where the agent's other routes live (`…/api/chat` -> `…/api`)."""
        return self.url.rsplit("/", 1)[0]

    @property
    def tools_url(self) -> str:
        """Its tool manifest: `CHAT_APP_TOOLS_URL`, else `tools` beside its chat route."""
        return self.manifest_url or self.api_base + "/tools"

    @staticmethod
    def shown(url: str) -> str:
        """One of its URLs as a log or a message may show it: no query (a key may be in it)
        and no password."""
        return shown_url(urlunsplit(urlsplit(url)._replace(query="", fragment="")))

    def sign_in(self, identity: Identity) -> dict[str, str | bytes]:
        """The headers of a request to the agent made for `identity` (none unless the agent
        takes the app as its sign-in proxy)."""
        return forwarded_identity(identity) if self.as_proxy else {}


def remote_agent_from_env(auth_mode: AuthMode) -> RemoteAgent | None:
    """`CHAT_APP_AGENT_URL` and `CHAT_APP_AGENT_SIGN_IN`; `None` for the app's own agent. A
    `ValueError` says what is wrong with them, with the app's sign-in (`auth_mode`) too."""
    url = os.environ.get(AGENT_URL_ENV, "").strip()
    sign_in = os.environ.get(AGENT_SIGN_IN_ENV, "").strip().lower() or "none"
    if sign_in not in ("none", "proxy"):
        raise ValueError(
            f"{AGENT_SIGN_IN_ENV}={sign_in!r} is not a way to sign in to the agent; use proxy "
            "(each request names its person, as a sign-in proxy does) or none."
        )
    if not url:
        if sign_in == "proxy":
            raise ValueError(
                f"{AGENT_SIGN_IN_ENV}=proxy needs {AGENT_URL_ENV}, the agent to sign in to."
            )
        return None
    if sign_in == "proxy" and auth_mode == "none":
        raise ValueError(
            f"{AGENT_SIGN_IN_ENV}=proxy signs people in to the agent, and with "
            f"{AUTH_ENV}=none nobody is signed in: the agent would refuse every request. "
            f"Turn sign-in on ({AUTH_ENV}=password or proxy)."
        )
    manifest = os.environ.get(TOOLS_URL_ENV, "").strip() or None
    return RemoteAgent(url=url, as_proxy=sign_in == "proxy", manifest_url=manifest)


def remote_agent_problems(remote: RemoteAgent | None, auth_mode: AuthMode) -> list[str]:
    """What to warn of at start: demo people passed on to the agent as if they had signed
    in (anyone may be anyone, and the agent's trail says `proxy`)."""
    if remote is None or not remote.as_proxy or auth_mode != "demo":
        return []
    return [
        f"{AGENT_SIGN_IN_ENV}=proxy with demo sign-in: the agent at {remote.url} takes each "
        "demo person as signed in, and anyone may pick any of them. For trying it out; "
        f"set {AUTH_ENV}=password or proxy for real use."
    ]


def settings_lines(
    auth: AuthConfig, policy: Policy | None, security: Security, desk: Desk,
    notify: NotifySettings, *, agent: str,
) -> list[str]:  # fmt: skip
    """What a start says it runs with, a line each, passwords hidden: who signs people in,
    the policy, the agent (`agent`, in words), the database, the trail, live updates and
    notifications."""
    ledger_url = os.environ.get(LEDGER_URL_ENV, "").strip()
    if security.ledger is None:
        trail = "off (CHAT_APP_SECURE=0): ids are not sealed and answers not recorded"
    elif ledger_url:
        trail = f"Redis at {shown_url(ledger_url)}"
    else:
        trail = f"SQLite file {Path(getattr(security.ledger, 'path', data_dir())).resolve()}"
    fanout = desk.fanout.redis_url
    return [
        f"sign-in: {auth.describe()}",
        f"policy: {policy.source if policy is not None else 'none'}",
        f"agent: {agent}",
        f"database: {_database_shown(desk.store.engine)}",
        f"audit trail and ledger: {trail}",
        f"live updates: {f'Redis at {shown_url(fanout)}' if fanout else 'this process alone'}",
        f"notifications: {notify.describe()}",
    ]


def _database_shown(engine: Engine) -> str:
    """The database's URL as the log shows it: no password, a SQLite file by its whole
    path (a relative one names a folder only the start's working directory knows)."""
    url = engine.url
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        url = url.set(database=str(Path(url.database).resolve()))
    return shown_url(url)


def fanout_problems(desk: Desk) -> list[str]:
    """What to warn of at start: the Redis the desk's live notices go through does not
    answer. The app still works: each page looks for changes every `WATCH_SECONDS`."""
    url = desk.fanout.redis_url
    reason = desk.fanout.unreachable()
    if url is None or reason is None:
        return []
    named = FANOUT_URL_ENV if os.environ.get(FANOUT_URL_ENV, "").strip() else REFLEX_REDIS_ENV
    return [
        f"{named}: the desk's live notices go through Redis at {shown_url(url)}, "
        f"which does not answer ({reason}). Until it does, pages show changes made on other "
        f"workers within {WATCH_SECONDS:g} s instead of at once."
    ]


HEARTBEAT_ENV = "CHAT_APP_HEARTBEAT_SECONDS"


def heartbeat_seconds(default: float) -> float:
    """`CHAT_APP_HEARTBEAT_SECONDS`: after how long a quiet run's stream says it goes on
    (else `default`), below a proxy's idle timeout and the client's read timeout.

    Raises:
        ValueError: it is not a number of seconds above 0, at most an hour (the message
            names it).
    """
    return _seconds(HEARTBEAT_ENV, default, at_most=3600)


def metrics_token() -> str | None:
    """`CHAT_APP_METRICS_TOKEN`: a bearer token a Prometheus scraper may read `/metrics` with."""
    return os.environ.get(METRICS_TOKEN_ENV, "").strip() or None


def _seconds(variable: str, default: float, *, at_most: float = MAX_TTL_SECONDS) -> float:
    """`variable`'s number of seconds (else `default`); a `ValueError` naming it when it is
    not a finite number above 0, or is above `at_most`."""
    text = os.environ.get(variable, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        value = math.nan
    if not (0 < value < math.inf):
        raise ValueError(
            f"{variable}={text!r} is not a finite number of seconds above 0 (default {default:g})."
        )
    if value > at_most:
        longest = describe_duration(timedelta(seconds=at_most))
        raise ValueError(
            f"{variable}={text!r} is more than {at_most:.0f} seconds ({longest}); give at most "
            f"that (default {default:g})."
        )
    return value

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
import logging
import math
import operator
import uuid
from collections.abc import AsyncIterator, Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter
from sqlalchemy.exc import OperationalError

from chat_app.client import (
    INTERRUPTED,
    AnsweredQuestion,
    ChatClient,
    ChatMessage,
    ClientState,
    ClientTool,
    Connection,
    GenericInterrupt,
    InterruptItem,
    ToolApprovalInterrupt,
    ToolManifest,
    TransportError,
    read_manifest,
)
from chat_app.desk import Desk, DeskError
from chat_app.interrupts import POLICY_METADATA_KEY
from chat_app.notify import NotifySettings, Outbox
from chat_app.trust import ANONYMOUS, Identity, Policy, Rule, Sealer, asking_a_person
from chat_app.trust.authn import Authenticator, AuthFailure
from chat_app.trust.store import not_answering

from .edit_form import EditLimit, pause_edit_limits
from .views import ViewCache, WhoDecides

#: A connection for one tab, given how to read who is at its keyboard now (the run's identity
#: is read when each run starts: a demo visitor may switch person mid-conversation).
ConnectionFactory = Callable[[Callable[[], Identity]], Connection]

_log = logging.getLogger(__name__)


#: How long a run waits for the page to answer any bridge call; longer than
#: `LOCATION_TIMEOUT_S`, so the page's own timeout (with its clearer reason) comes first.
BRIDGE_TIMEOUT_S = 30


class BrowserToolError(Exception):
    """A client tool run in the page has no answer: the message is the tool's error, which
    the model reads and the tool card shows."""


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
        """Evaluate `script` (a JS expression, maybe a promise) in the page; return its value.

        Raises `BrowserToolError` when the page has not answered within `BRIDGE_TIMEOUT_S`.
        """
        call = BrowserCall(
            id=f"b{next(self._ids)}",
            script=script,
            future=asyncio.get_running_loop().create_future(),
        )
        self.pending[call.id] = call
        self.unsent.append(call)
        self.wakeup.set()
        try:
            return await asyncio.wait_for(call.future, timeout=BRIDGE_TIMEOUT_S)
        except TimeoutError:
            raise BrowserToolError(f"the page did not answer within {BRIDGE_TIMEOUT_S} s") from None
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


#: How long `get_location` waits in the page for a position, the permission prompt included
#: (the Geolocation API's own `timeout` starts only once permission is given).
LOCATION_TIMEOUT_S = 15

#: The JavaScript of `get_location`: the browser's position, after the browser's own
#: permission prompt. It always resolves, never rejects: a position, or `{error: <code>}` with
#: a code of `LOCATION_ERRORS` (the page cannot be trusted, so `location_result` checks it).
LOCATION_SCRIPT = f"""new Promise((resolve) => {{
  const geo = navigator.geolocation;
  if (!geo) {{ resolve({{error: "unsupported"}}); return; }}
  const timer = setTimeout(() => resolve({{error: "timeout"}}), {LOCATION_TIMEOUT_S * 1000});
  const done = (value) => {{ clearTimeout(timer); resolve(value); }};
  const codes = {{1: "denied", 2: "unavailable", 3: "timeout"}};
  try {{
    geo.getCurrentPosition(
      (p) => done({{latitude: p.coords.latitude, longitude: p.coords.longitude,
                    accuracy: p.coords.accuracy}}),
      (e) => done({{error: codes[e.code] || "unavailable"}}),
      {{timeout: {LOCATION_TIMEOUT_S * 1000}, maximumAge: 60000}});
  }} catch (e) {{ done({{error: "unavailable"}}); }}
}})"""

#: What the model reads when the page has no position. The browser decides (a person's
#: answer to its prompt, a site setting, a policy), so the words say "the browser".
LOCATION_ERRORS = {
    "denied": "the browser refused location access",
    "unavailable": "the browser could not determine its position",
    "timeout": f"the browser gave no position within {LOCATION_TIMEOUT_S} s",
    "unsupported": "this browser has no geolocation",
}


def location_result(value: Any) -> dict[str, Any]:
    """`get_location`'s output from what `LOCATION_SCRIPT` answered: the position, labelled
    with its coordinates (there is no offline reverse geocoder). Raises `BrowserToolError`
    when the browser gave none, or answered something that is not a position."""
    if isinstance(value, Mapping) and "error" in value:
        code = value["error"]
        raise BrowserToolError(
            LOCATION_ERRORS.get(code, LOCATION_ERRORS["unavailable"])
            if isinstance(code, str)
            else LOCATION_ERRORS["unavailable"]
        )
    if not isinstance(value, Mapping):
        raise BrowserToolError("the browser's answer was not a position")
    latitude, longitude = value.get("latitude"), value.get("longitude")
    if not (_number(latitude, -90, 90) and _number(longitude, -180, 180)):
        raise BrowserToolError("the browser's answer was not a position")
    output: dict[str, Any] = {
        "latitude": latitude,
        "longitude": longitude,
        "label": f"{latitude:.4f}, {longitude:.4f}",
    }
    accuracy = value.get("accuracy")
    if _number(accuracy, 0, math.inf):
        output["accuracy"] = accuracy
    return output


def _number(value: Any, low: float, high: float) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and low <= value <= high
    )


class ConversationBusy(TransportError):
    """A tab's run refused before it started: a run elsewhere holds the conversation (the
    desk carrying an answer, another tab). Nothing of the tab's went, and its copy is behind
    the stored one."""


class DecidedElsewhere(TransportError):
    """A tab's continuation refused before it started: one of its answers' decisions was
    decided a moment before (from the inbox, or in another tab), which the tab had not seen
    yet. Nothing of the tab's went; the stored conversation has the answer that counted.
    `own`: the same person decided it (in another tab, or from their inbox): theirs stands."""

    def __init__(self, message: str, *, own: bool) -> None:
        super().__init__(message)
        self.own = own


#: What a tab is told when its answer came after another of the same person's, from another
#: tab, that went (`PageRunConnection`, `ChatState`).
ANSWERED_MEANWHILE = "Already answered, in another tab or by someone else."


#: How long a page's run stopped by its worker's hand-over waits for the process to end.
STOPPED_WAIT_SECONDS = 60.0


class PageRunConnection(Connection):
    """A tab's connection when conversations are stored: each run holds the conversation's
    lease (`Desk.page_run`), and a continuation first takes its answers' decisions, so an
    answer given in the chat and one given from the inbox cannot both go. A refusal is the
    run's transport error, which the page shows ("Already decided by Ada (approved).")."""

    def __init__(self, inner: Connection, desk: Desk, actor: Callable[[], Identity]) -> None:
        self.inner = inner
        self.desk = desk
        self.actor = actor

    async def stream(self, body: Mapping[str, object]) -> AsyncIterator[dict[str, object]]:
        thread = str(body.get("threadId") or "")
        resume = body.get("resume")
        entries = {
            str(entry.get("interruptId")): entry
            for entry in (resume if isinstance(resume, list) else [])
            if isinstance(entry, Mapping)
        }
        actor = self.actor()
        try:
            async with self.desk.page_run(thread, list(entries), actor, entries) as end:
                async for event in self.inner.stream(body):
                    if end.stopped:
                        # This worker stops and has let the lease go: not a word more, and
                        # the agent's stream is read no further. The run waits to be cut
                        # with the process, as one reading its next word would be: ending it
                        # here sets the tab's handler storing and sending while the server
                        # shuts down, which can crash its worker. A process that goes on
                        # after all ends it, cut off, once its stop is surely over.
                        await asyncio.sleep(STOPPED_WAIT_SECONDS)
                        raise TransportError(INTERRUPTED)
                    end.finished = end.finished or event.get("type") == "RUN_FINISHED"
                    if event.get("type") == "RUN_ERROR":  # refused, or failed: not carried
                        end.errored = True
                        if (
                            entries and event.get("code") == "conflict"
                            and await self.desk.carried(thread, list(entries))
                        ):  # fmt: skip
                            # The engine's ledger holds answers to these already, and a run
                            # carried them: the same person's, from another tab a moment ago,
                            # not stored yet (the desk refuses only another person's). Said
                            # as the desk's refusal is, not in the engine's words. Else their
                            # send's end was lost (a ledger that answered too late, a worker
                            # that died): the client reads it as answered before, which the
                            # page stores only over the version it had.
                            raise DecidedElsewhere(ANSWERED_MEANWHILE, own=False)
                    yield event
        except DeskError as error:
            if error.code == "busy":
                raise ConversationBusy(error.message) from None
            if error.code == "already-decided":
                own = error.details.get("decidedBy") == actor.email
                raise DecidedElsewhere(error.message, own=own) from None
            raise TransportError(error.message) from None

    async def aclose(self) -> None:
        await self.inner.aclose()


class StateJson:
    """`ClientState.to_json()`, text for text, with each message's and answered question's
    JSON kept between calls.

    The page saves the client's state (the Reflex state's `_client_json`) at every refresh; at
    2,000 messages dumping it whole took 3–8 ms each time, on the event loop (and a tenth of a
    backend's work on an Approve click more with the hundreds of questions such a
    conversation answered). Messages and answered questions are frozen values, so their JSON
    is kept by identity, and the state is dumped without them and the kept texts spliced in.
    """

    def __init__(self) -> None:
        self._messages = _KeptJson[ChatMessage](_message_json)
        self._answered = _KeptJson[AnsweredQuestion](_answered_json)

    def dump(self, state: ClientState) -> str:
        messages = self._messages.joined(state.messages)
        answered = self._answered.joined(state.answered)
        rest = _state_json(replace(state, messages=(), answered=()))
        # `messages` is the second field (only `thread_id`, a JSON string, comes before it, in
        # which a quote is escaped) and `answered` the last.
        at = rest.index('"messages":[]') + len('"messages":[')
        assert rest.endswith('"answered":[]}'), rest[-40:]
        return f"{rest[:at]}{messages}{rest[at:-2]}{answered}]}}"


T = TypeVar("T")


class _KeptJson(Generic[T]):
    """The JSON of a list of values, each value's text kept by its identity while the value
    is in the list, and the texts of all but the last joined already.

    A refresh while a reply streams changes only the last message: its text is the one made
    again, and the rest is one string kept from the call before (at 1,509 messages and 500
    answered questions, a dump 0.40 → 0.27 ms).
    """

    def __init__(self, dump: Callable[[T], str]) -> None:
        self._dump = dump
        self._kept: dict[int, tuple[T, str]] = {}
        #: The values of the last call but its last, and their texts joined.
        self._held: Sequence[T] = ()
        self._head = ""

    def joined(self, values: Sequence[T]) -> str:
        """The values' texts, comma-separated."""
        held = self._held
        if len(held) > len(values) or not all(map(operator.is_, held, values)):
            held, self._head = (), ""
        texts = [self._head] if held else []
        for value in values[len(held) :]:
            kept = self._kept.get(id(value))
            if kept is None or kept[0] is not value:
                kept = self._kept[id(value)] = (value, self._dump(value))
            texts.append(kept[1])
        if len(self._kept) > 2 * len(values) + 64:  # forget those no longer in the list
            self._kept = {id(value): self._kept[id(value)] for value in values}
        if len(values) > len(held) + 1:  # hold all but the last value
            self._held, self._head = values[:-1], ",".join(texts[:-1])
        return ",".join(texts)


@cache
def _adapters() -> tuple[
    TypeAdapter[ChatMessage], TypeAdapter[AnsweredQuestion], TypeAdapter[ClientState]
]:
    return TypeAdapter(ChatMessage), TypeAdapter(AnsweredQuestion), TypeAdapter(ClientState)


def _message_json(message: ChatMessage) -> str:
    return _adapters()[0].dump_json(message).decode()


def _answered_json(question: AnsweredQuestion) -> str:
    return _adapters()[1].dump_json(question).decode()


def _state_json(state: ClientState) -> str:
    return _adapters()[2].dump_json(state).decode()


@dataclass
class Session:
    client: ChatClient
    bridge: BrowserBridge
    changed: asyncio.Event
    #: Who is at the keyboard, as verified when the tab's last event came in.
    identity: Identity = ANONYMOUS
    task: asyncio.Task[None] | None = None
    #: The saved client state (the Reflex state's `_client_json`) this session last matched.
    saved: str = ""
    views: ViewCache = field(default_factory=ViewCache)
    state_json: StateJson = field(default_factory=StateJson)
    #: The page's last write of the conversation to the desk (`ChatState._start_record`),
    #: until the page has taken its outcome: the next write waits for it.
    recording: asyncio.Task[Any] | None = None
    #: What the person should know about how the session was made (a tool manifest that could
    #: not be read, entries left out), not yet shown: see `take_notices`.
    notices: list[str] = field(default_factory=list)
    #: Set while no action of the page's runs in it (`ChatState._work`): one clicked as the
    #: last ends waits for it.
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.idle.set()

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def take_notices(self) -> list[str]:
        """The notices not yet shown (each is handed out once)."""
        notices, self.notices = self.notices, []
        return notices


@dataclass
class _Backend:
    connection: ConnectionFactory | None = None
    #: The tools the client knows: a `ToolManifest` (with its problems), or a manifest as
    #: `GET /api/tools` answers it (`{"tools": [...]}` or a bare list).
    manifest: Callable[[], object] | None = None
    #: The audit trail as `GET /api/audit` answers it (`{"chain": …, "records": […]}`) to
    #: the person reading it.
    audit: Callable[[Identity], Mapping[str, Any] | None] | None = None
    #: Who someone is (`None`: no sign-in, everyone is anonymous).
    authenticator: Authenticator | None = None
    #: Who may decide what (`None`: whoever asked).
    policy: Policy | None = None
    #: The in-process agent's sealer: it tells whether the viewer asked for an item whose
    #: requester only its sealed tag names.
    sealer: Sealer | None = None
    #: Stored conversations and the inbox (`None`: conversations live in their tab only).
    desk: Desk | None = None
    #: The client tokens of the tabs connected to this worker now (a page's live loop ends
    #: when its tab has gone).
    live_tokens: Callable[[], Container[str]] | None = None
    #: The notices queued and sent (the Deliveries page reads it; `None`: no desk, no outbox).
    outbox: Outbox | None = None
    #: Where notices go (`None`: the app was configured without notifications).
    notify_settings: NotifySettings | None = None
    #: The agent gates answers by `policy` (it runs in this process); a remote agent's rules
    #: are known by the names its pauses give.
    agent_reads_policy: bool = True
    #: Every tab's runs are in this process (Reflex's state is not shared: one backend): a
    #: run another process saved mid-stream stopped with it (`session_for`).
    one_process: bool = False


#: This process's start, which the page saves its client's state under (`session_for`).
BOOT = uuid.uuid4().hex
_backend = _Backend()
_sessions: dict[str, Session] = {}


def configure(
    connection: ConnectionFactory,
    manifest: Callable[[], object],
    audit: Callable[[Identity], Mapping[str, Any] | None] | None = None,
    *,
    authenticator: Authenticator | None = None,
    policy: Policy | None = None,
    sealer: Sealer | None = None,
    desk: Desk | None = None,
    live_tokens: Callable[[], Container[str]] | None = None,
    outbox: Outbox | None = None,
    notify_settings: NotifySettings | None = None,
    agent_reads_policy: bool = True,
    one_process: bool = False,
) -> None:
    """Set where chats go, which tools the client knows, where the audit trail is read, who
    someone is, who may decide what (and whether the agent reads that policy), where
    conversations are stored, and where notices are queued and go."""
    _backend.connection = connection
    _backend.manifest = manifest
    _backend.audit = audit
    _backend.authenticator = authenticator
    _backend.policy = policy
    _backend.sealer = sealer
    _backend.desk = desk
    _backend.live_tokens = live_tokens
    _backend.outbox = outbox
    _backend.notify_settings = notify_settings
    _backend.agent_reads_policy = agent_reads_policy
    _backend.one_process = one_process
    _sessions.clear()


def desk() -> Desk | None:
    return _backend.desk


def agent_here() -> bool:
    """The agent runs in this process: the trail the Audit page shows is this app's own,
    which `GET /api/audit.jsonl` exports (a remote agent's is read from it, as the viewer)."""
    return _backend.agent_reads_policy


def policy() -> Policy | None:
    return _backend.policy


def outbox() -> Outbox | None:
    return _backend.outbox


def notify_settings() -> NotifySettings | None:
    return _backend.notify_settings


def connected(token: str) -> bool:
    """Whether the tab with this client token is still connected to this worker (unknown:
    yes)."""
    if _backend.live_tokens is None:
        return True
    return token in _backend.live_tokens()


def authenticator() -> Authenticator | None:
    return _backend.authenticator


def identify(headers: Mapping[str, str], client_host: str | None) -> Identity | AuthFailure:
    """Who is at a tab's keyboard: its socket's cookies, proxy headers or token, as the HTTP
    routes read them (never anything the page sends in an event)."""
    if _backend.authenticator is None:
        return ANONYMOUS
    try:
        found = _backend.authenticator.authenticate(headers, client_host)
    except OperationalError as error:  # as the HTTP routes answer it: nobody could tell
        _log.warning("Could not check who is at a page: %s", error)
        return AuthFailure(not_answering(error), status=503, code="unavailable")
    if isinstance(found, Identity) and _backend.policy is not None:
        return found.with_roles(_backend.policy.roles_of(found))
    return found


def who_decides(
    viewer: Identity,
    votes: Mapping[str, list[str]] | None = None,
    escalated: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
) -> WhoDecides:
    """For the page: who decides an item when it is not `viewer` (the server enforces it).
    `votes` are quorum approvals given so far (item id -> [progress, voter emails...]): one
    who approved already waits for the others, who read how far it has got. `escalated` are
    the items the desk escalated (item id -> "escalated to admin after 2 h"): their rule's
    `escalate_to` may decide too, as the desk and the engine allow, and the sentence says
    so. `names` gives people's names by email (whoever asked is named by them)."""
    policy = _backend.policy
    votes = votes or {}
    escalated = escalated or {}
    names = names or {}

    def check(item: InterruptItem) -> str:
        given = votes.get(item.id)
        if given and viewer.email and viewer.email in given[1:]:
            return f"You approved ({given[0]}); waiting for another approver"
        shown = (item.metadata or {}).get(POLICY_METADATA_KEY)
        if not isinstance(shown, Mapping):
            return ""
        requester = str(shown.get("requester") or "")
        asked = _asked(viewer, requester, shown.get("requesterTag"))
        rule = _governing(policy, item, shown.get("rule")) if policy is not None else None
        if policy is None or rule is None:
            if asked:
                return ""
            who = names.get(requester) or requester or "the person who asked"
            return f"Waiting for {who}, who decides this"
        note = escalated.get(item.id, "")
        if policy.check(rule, viewer, decider_is_requester=asked, escalated=bool(note)) is None:
            return ""
        waiting = policy.waiting_for(rule, viewer_is_requester=asked)
        if given and len(given) > 1:  # someone approved towards a quorum
            waiting = f"{waiting}; {given[0]}"
        return f"{waiting}; {note}" if note else waiting

    return check


def _governing(policy: Policy, item: InterruptItem, named: object) -> Rule | None:
    """The rule the engine will judge an answer to `item` by, found as it finds it (the
    rule `named` in the pause's metadata is the one of its pause, which a policy changed
    since may have renamed or replaced); an untyped question's, or any a remote agent
    paused for (its rules are its own), the one named. A rule that now decides alone leaves
    it to whoever asked (`asking_a_person`)."""
    if not _backend.agent_reads_policy:
        rule = policy.rule_named(named)
    elif isinstance(item, ToolApprovalInterrupt):
        rule = policy.rule_for_tool(item.tool_name, item.original_args)
    elif isinstance(item, GenericInterrupt) and item.definition_id:
        rule = policy.rule_for_interrupt(item.definition_id, item.payload)
    else:
        rule = policy.rule_named(named)
    return asking_a_person(rule)


def edit_limits(item: InterruptItem) -> EditLimit | None:
    """For the page: the rule that will judge an edit of `item` and the arguments it lets an
    approver change, found as the engine finds it (`_governing`), so that the edit form
    holds what the server takes, a policy changed since the pause included; a remote
    agent's, as its pause said (its rules are its own). `None`: any may change."""
    policy = _backend.policy
    if policy is None or not _backend.agent_reads_policy:
        return pause_edit_limits(item)
    shown = (item.metadata or {}).get(POLICY_METADATA_KEY)
    rule = _governing(policy, item, shown.get("rule") if isinstance(shown, Mapping) else None)
    if rule is None or rule.editable is None:
        return None
    return rule.name, rule.editable


def asked_by(viewer: Identity) -> Callable[[InterruptItem], bool]:
    """For the page: whether `viewer` asked for an item. Whoever asked may always withdraw
    it (cancel), whoever else decides it (the server allows it: `chat_app.agent.gate`)."""

    def check(item: InterruptItem) -> bool:
        shown = (item.metadata or {}).get(POLICY_METADATA_KEY)
        if not isinstance(shown, Mapping):
            return False
        return _asked(viewer, str(shown.get("requester") or ""), shown.get("requesterTag"))

    return check


def _asked(viewer: Identity, requester: str, tag: object) -> bool:
    """Whether `viewer` asked for an item: by its requester's email, or, when only the sealed
    tag is known (a continuation an approver ran), by the tag."""
    if requester:
        return requester.lower() == viewer.email.lower()
    sealer = _backend.sealer
    return sealer is not None and sealer.is_tag_of(tag, viewer.email)


def read_audit(viewer: Identity) -> Mapping[str, Any] | None:
    return _backend.audit(viewer) if _backend.audit is not None else None


def _tools(bridge: BrowserBridge, problems: list[str] | None = None) -> list[ClientTool]:
    """The tools the tab's client knows, with the JavaScript and Python ones bound to their
    implementations; what was wrong with the manifest is added to `problems` (the session's
    notices, shown to the person once)."""
    assert _backend.manifest is not None, "call chat_app.ui.session.configure first"

    async def local_time(_: Mapping[str, Any]) -> Any:
        return await bridge.call(LOCAL_TIME_SCRIPT)

    async def location(_: Mapping[str, Any]) -> Any:
        return location_result(await bridge.call(LOCATION_SCRIPT))

    functions = {"get_local_time": local_time, "get_location": location}
    problems = problems if problems is not None else []
    try:
        found = _backend.manifest()
    except Exception as error:  # the conversation goes on without typed approvals
        _log.exception("Reading the tool manifest failed")
        problems.append(f"The tool manifest could not be read: {error}.")
        return []
    manifest = found if isinstance(found, ToolManifest) else read_manifest(found)
    problems.extend(manifest.problems)
    return manifest.with_functions(functions)


def session_for(
    token: str, saved: str = "", identity: Identity | None = ANONYMOUS, *, running: bool = False,
    saved_by: str = "",
) -> Session:  # fmt: skip
    """The tab's live session, rebuilt from its saved client state when needed.

    `identity` is who is at the keyboard now (`None`: nobody is signed in). It becomes the
    session's only between runs: a run goes on, to its end, as the person who started it,
    whoever signs in or out meanwhile; and nobody signed in changes nothing. `running`: the
    saved state is the desk's, stored mid-run by a run going on elsewhere
    (`ChatClient.restore`). `saved_by`: the `BOOT` of the process whose page saved it; in
    `one_process`, one another process saved mid-stream is a run that stopped with it (a
    restart), shown cut off, with Retry (`ChatClient.restore`'s `died`), not as if it had
    ended.

    The registry is per process and a tab's socket can move between workers, so a session
    made here earlier is kept only while it runs or still matches the saved state: another
    worker may have moved the conversation on since (then it is rebuilt from `saved`).
    """
    session = _sessions.get(token)
    if session is not None and (
        session.busy or saved in ("", session.saved) or saved == session.client.state.to_json()
    ):
        session.saved = saved or session.saved
        if identity is not None and not session.busy:
            session.identity = identity
        return session
    assert _backend.connection is not None, "call chat_app.ui.session.configure first"
    bridge = BrowserBridge()
    changed = asyncio.Event()
    notices: list[str] = []
    tools = _tools(bridge, notices)

    def on_change(_: ChatClient) -> None:
        changed.set()

    holder: list[Session] = []
    connection = _backend.connection(lambda: holder[0].identity)
    if _backend.desk is not None:
        connection = PageRunConnection(connection, _backend.desk, lambda: holder[0].identity)
    if saved:
        stored = ClientState.from_json(saved)
        died = _backend.one_process and saved_by not in ("", BOOT) and not running
        client = ChatClient.restore(
            stored, connection, tools=tools, on_change=on_change, running=running, died=died
        )
    else:
        client = ChatClient(connection, tools=tools, on_change=on_change)
    session = Session(
        client=client, bridge=bridge, changed=changed, saved=saved,
        identity=identity or ANONYMOUS, notices=notices,
    )  # fmt: skip
    holder.append(session)
    _sessions[token] = session
    return session


def forget(token: str) -> None:
    _sessions.pop(token, None)


def current(token: str) -> Session | None:
    """The tab's live session on this worker, if it has one."""
    return _sessions.get(token)


_watching: set[str] = set()


@dataclass(frozen=True)
class Presence:
    """What a tab last told the desk about its owner's conversation: which one, when (monotonic
    seconds), and whether they were looking (the tab in view) or had looked away."""

    thread: str
    at: float
    looking: bool


_presence: dict[str, Presence] = {}


def presence(token: str) -> Presence | None:
    return _presence.get(token)


def record_presence(token: str, said: Presence) -> None:
    if token in _watching:  # else the tab's loop has ended: nothing would clear it
        _presence[token] = said


def start_watching(token: str) -> bool:
    """Claim the tab's live loop (one per tab and worker); False when one runs already."""
    if token in _watching:
        return False
    _watching.add(token)
    return True


def stop_watching(token: str) -> None:
    _watching.discard(token)
    _presence.pop(token, None)

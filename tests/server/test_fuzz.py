"""Fuzzing `POST /api/chat` with bad input (issue 6, point 5).

Malformed JSON, wrong types, huge and deeply nested bodies, and continuations of a real pause
mutated every way we could think of (unknown and duplicated ids, missing entries, wrong
statuses and payloads, forged histories, another `parentRunId`...). Every answer must be:

- 200 with a well-formed SSE stream (one JSON object per `data:` frame, `RUN_STARTED` first,
  exactly one terminal event, last); a refused continuation is `RUN_STARTED` then one
  `RUN_ERROR` carrying `metadata.tanstack.interruptErrors`, and nothing ran;
- or 400 / 413 with a JSON `{"error": ...}` naming the problem; never a 5xx, never an
  internal failure reported in-stream (`agent-error`).

Whatever ran must have been allowed by the request itself: an approval tool only when its
approval was given in the resume (with the edited or the history's arguments), a plain server
tool only on an accepted continuation, each call at most once, and never with arguments its
input schema refuses. The oracle (`allowed_runs`) is written from the README's rules, not from
the engine's code. Continuations are fuzzed against a bare agent and against a sealed one with
a ledger (as the app runs), where a call also has to be exactly the one the server proposed
and the same answer never runs twice.

Bounded and deterministic: `derandomize=True`, no example database.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from chat_app.agent import Agent, Middleware, Resolutions, RunContext, define_interrupt, tool
from chat_app.agent.history import parse_arguments
from chat_app.agent.middleware import HookResult
from chat_app.interrupts import (
    generic_continuation_from_descriptor,
    schema_problem,
    wrap_generic_continuation,
)
from chat_app.server import create_app
from chat_app.trust.ledger import SQLiteLedger, verify_chain
from chat_app.trust.seal import Sealer
from tests.agent.builders import obj, say, turns

FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------------------------------------
# The agent under test: two approval tools, a plain server tool, a client tool and a generic
# interrupt, all in one batch. Every server tool records its calls.

RUNS: list[tuple[int, str, dict[str, Any]]] = []


def recording(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def execute(args: dict[str, Any]) -> dict[str, Any]:
        receipt = len(RUNS) + 1
        RUNS.append((receipt, name, copy.deepcopy(args)))
        return {"receipt": receipt}

    return execute


TRANSFER = tool(
    "transfer",
    input=obj(
        {"recipient": {"type": "string"}, "amount": {"type": "number"}}, ["recipient", "amount"]
    ),
    needs_approval=True,
    approval={"reject": obj({"reason": {"type": "string", "minLength": 1}}, ["reason"])},
    execute=recording("transfer"),
)
DELETE = tool(
    "delete",
    input=obj({"name": {"type": "string"}}, ["name"]),
    needs_approval=True,
    execute=recording("delete"),
)
LOOKUP = tool("lookup", input=obj({"q": {"type": "string"}}, ["q"]), execute=recording("lookup"))
LOCATE = tool("locate", input=obj({}, []), output=obj({"city": {"type": "string"}}, ["city"]))
TOOLS = {item.name: item for item in (TRANSFER, DELETE, LOOKUP, LOCATE)}
APPROVAL_TOOLS = {"transfer", "delete"}
PLAIN_TOOLS = {"lookup"}

REVIEW = define_interrupt("review", response=obj({"ok": {"type": "boolean"}}, ["ok"], draft=False))

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("c1", "transfer", {"recipient": "Ada", "amount": 25}),
    ("c2", "delete", {"name": "apollo"}),
    ("c3", "lookup", {"q": "x"}),
    ("c4", "locate", {}),
]


class AskReview(Middleware):
    """Asks a generic question beside the tool approvals; `ok: false` cancels the tools."""

    async def before_tools(self, ctx: RunContext) -> HookResult:
        if ctx.is_continuation:
            return None
        return [REVIEW.request(key="k", reason="review", message="Review the batch?")]

    async def on_interrupt_resolution(self, ctx: RunContext, resolutions: Resolutions) -> Any:
        answer = resolutions.for_(REVIEW)
        if answer is None:
            return None
        if answer.status == "cancelled":
            return "stop"
        return "continue" if answer.response.get("ok") else "cancel"


def fresh_ledger() -> SQLiteLedger:
    """The real SQLite ledger, in memory: fresh for every example (one connection per thread,
    and every call here happens on the test's thread)."""
    return SQLiteLedger(Path(":memory:"))


@dataclass
class Config:
    """One way the agent can be served: bare, or sealed with a ledger."""

    name: str
    agent: Agent
    app: Any = field(init=False)
    #: Where this request's ledger entries start.
    mark: int = 0

    def __post_init__(self) -> None:
        self.app = create_app(self.agent)

    @property
    def sealed(self) -> bool:
        return self.agent.sealer is not None

    def fresh(self, *, keep_ledger: bool = False) -> None:
        RUNS.clear()
        if self.sealed and not keep_ledger:
            self.agent.ledger = fresh_ledger()
        ledger = self.agent.ledger
        self.mark = len(ledger.records()) if ledger is not None else 0


def build_agent(*, sealed: bool) -> Agent:
    sealer = Sealer(b"fuzz-secret-fuzz-secret-fuzz", ttl_seconds=3600) if sealed else None
    return Agent(
        model=turns(say("", *CALLS), say("done")),
        tools=list(TOOLS.values()),
        interrupts=[REVIEW],
        middleware=[AskReview()],
        sealer=sealer,
        ledger=fresh_ledger() if sealed else None,
    )


CONFIGS = {"bare": Config("bare", build_agent(sealed=False))}
CONFIGS["sealed"] = Config("sealed", build_agent(sealed=True))
BARE = CONFIGS["bare"]
SMALL_LIMIT = 2048
SMALL_APP = create_app(build_agent(sealed=False), max_body_bytes=SMALL_LIMIT)


# ---------------------------------------------------------------------------------------------
# HTTP, SSE and the checks every response gets.


def post(
    content: bytes | Callable[[], AsyncIterator[bytes]],
    *,
    app: Any = BARE.app,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            body = content if isinstance(content, bytes) else content()
            return await http.post(
                "/api/chat",
                content=body,
                headers={"content-type": "application/json", **(headers or {})},
            )

    return asyncio.run(go())


def post_json(body: Any, config: Config = BARE, **options: Any) -> httpx.Response:
    return post(json.dumps(body).encode(), app=config.app, **options)


def sse_events(text: str) -> list[dict[str, Any]]:
    """Strict parse: `data: <json object>` frames, each ended by a blank line."""
    frames = text.split("\n\n")
    assert frames[-1] == "", f"stream does not end with a complete frame: {text[-200:]!r}"
    events = []
    for frame in frames[:-1]:
        assert frame.startswith("data: ") and "\n" not in frame, f"bad SSE frame {frame[:200]!r}"
        event = json.loads(frame[len("data: ") :])
        assert isinstance(event, dict) and isinstance(event.get("type"), str), frame[:200]
        events.append(event)
    return events


def assert_error(response: httpx.Response, status: int, *fragments: str) -> str:
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/json")
    message = response.json()["error"]
    assert isinstance(message, str) and message
    if fragments:
        assert any(fragment in message for fragment in fragments), (fragments, message)
    assert RUNS == [], "a refused request ran a tool"
    return message


def assert_stream(
    response: httpx.Response, body: Any, config: Config = BARE
) -> list[dict[str, Any]]:
    assert response.status_code == 200, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    types = [event["type"] for event in events]
    assert types and types[0] == "RUN_STARTED", types
    terminals = [i for i, kind in enumerate(types) if kind in ("RUN_FINISHED", "RUN_ERROR")]
    assert terminals == [len(types) - 1], f"one terminal event, last: {types}"
    last = events[-1]
    if last["type"] == "RUN_ERROR":
        assert last.get("code") != "agent-error", f"internal failure: {last['message']}"
        assert isinstance(last.get("message"), str) and last["message"]
        assert body.get("resume"), f"a fresh run failed: {last}"
        errors = last["metadata"]["tanstack"]["interruptErrors"]
        assert errors and all(
            item["scope"] in ("item", "batch") and item["code"] and item["message"]
            for item in errors
        ), errors
        assert types == ["RUN_STARTED", "RUN_ERROR"], types
        assert RUNS == [], f"a refused continuation ran {RUNS}"
    assert_runs_were_allowed(events, body, config)
    return events


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def allowed_runs(body: dict[str, Any], config: Config) -> dict[str, tuple[str, str]]:
    """Tool call id -> (tool, canonical args) of every execution the request allows."""
    resume = body.get("resume") or []
    if not resume:
        return {}  # a fresh run executes nothing: every model turn asks for approvals
    proposed = proposed_calls(config) if config.sealed else None
    entries = [entry.get("interruptId") for entry in resume]
    messages = body["messages"]
    results = {
        message.get("toolCallId")
        for message in messages
        if message.get("role") == "tool" and not _is_placeholder(message.get("content"))
    }
    allowed: dict[str, tuple[str, str]] = {}
    seen: set[str] = set()
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("toolCalls") or []:
            if (call.get("metadata") or {}).get("providerExecuted") is True:
                continue
            call_id = call["id"]
            if call_id in seen:
                continue  # the first call with an id is the call
            seen.add(call_id)
            name = call["function"]["name"]
            try:
                args = parse_arguments(call["function"]["arguments"])
            except (ValueError, RecursionError):
                continue  # arguments nobody can read allow nothing
            if proposed is not None and proposed.get(call_id) != (name, _canonical(args)):
                continue  # sealed: only what the server proposed, unaltered
            if name in PLAIN_TOOLS and call_id not in results:
                allowed[call_id] = (name, _canonical(args))
            if name not in APPROVAL_TOOLS or entries.count("approval_" + call_id) != 1:
                continue
            entry = resume[entries.index("approval_" + call_id)]
            payload = entry.get("payload")
            if entry.get("status") != "resolved":
                continue
            if payload is True:
                allowed[call_id] = (name, _canonical(args))
            elif isinstance(payload, dict) and payload.get("approved") is True:
                edited = payload["editedArgs"] if "editedArgs" in payload else args
                allowed[call_id] = (name, _canonical(edited))
    return allowed


def _is_placeholder(content: Any) -> bool:
    try:
        value = json.loads(content)
    except (TypeError, ValueError):
        return False
    return isinstance(value, dict) and value.get("pendingExecution") is True


def assert_runs_were_allowed(
    events: list[dict[str, Any]], body: dict[str, Any], config: Config
) -> None:
    receipts: dict[int, str] = {}
    for item in events:
        if item["type"] != "TOOL_CALL_RESULT":
            continue
        try:
            content = json.loads(item["content"])
        except ValueError:
            continue
        if isinstance(content, dict) and set(content) == {"receipt"}:
            receipts[content["receipt"]] = item["toolCallId"]
    allowed = allowed_runs(body, config)
    ran: set[str] = set()
    for receipt, name, args in RUNS:
        call_id = receipts.get(receipt)
        assert call_id is not None, f"{name}{args} ran but its result was not streamed"
        assert call_id not in ran, f"tool call {call_id} ran twice"
        ran.add(call_id)
        assert call_id in allowed, f"{name}{args} ran for {call_id}, which was not approved"
        assert allowed[call_id] == (name, _canonical(args)), (
            f"{name} ran for {call_id} with {args}, approved was {allowed[call_id]}"
        )
        schema = TOOLS[name].input_schema
        assert schema is not None
        problem = schema_problem(schema, args)
        assert problem is None, f"{name} ran with arguments its schema refuses: {args}"
    ledger = config.agent.ledger
    if ledger is not None:  # the audit trail has every execution, and only those
        records = ledger.records()
        assert verify_chain(records).ok
        executions = [r.data for r in records[config.mark :] if r.kind == "execution"]
        assert [(e["toolName"], _canonical(e["args"])) for e in executions] == [
            (name, _canonical(args)) for _, name, args in RUNS
        ]


# ---------------------------------------------------------------------------------------------
# JSON values and texts.

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from([10**300, -(2**1000), 5e-324, -0.0])  # big, but numbers to JavaScript too
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# What `json.dumps` never writes but a client may: JavaScript-only numbers, huge integers,
# lone surrogates, a BOM, duplicate keys.
odd_json_fragments = st.sampled_from(
    [
        "NaN",
        "-Infinity",
        "1e999",
        "9" * 5000,
        "-" + "1" * 4301,
        "9" * 400,
        "0." + "0" * 5000 + "1",
        '"\\ud800"',
        '"\\udfff\\ud800"',
        '"\\u0000"',
        '{"a":1,"a":2}',
        "\ufeff{}",
    ]
)
jsonish_tokens = st.sampled_from(
    ["{", "}", "[", "]", ":", ",", '"', "\\", "true", "null", "0", "-", "e", '"threadId"']
)


@st.composite
def odd_json_texts(draw: st.DrawFn) -> str:
    """A JSON text with an odd fragment alone or inside an ordinary value."""
    fragment = draw(odd_json_fragments)
    where = draw(st.sampled_from(["alone", "in list", "in object", "in a run input"]))
    if where == "alone":
        return fragment
    if where == "in list":
        return "[" + fragment + "," + json.dumps(draw(json_values)) + "]"
    if where == "in object":
        return '{"x":' + fragment + "}"
    body = {**fresh_body(), draw(st.sampled_from(["state", "forwardedProps", "threadId"])): "X"}
    return json.dumps(body).replace('"X"', fragment)


# ---------------------------------------------------------------------------------------------
# The real pause every continuation starts from.


def fresh_body(text: str = "go") -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
    }


@cache
def pause(config_name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The paused history and its interrupts, from one real run over HTTP."""
    config = CONFIGS[config_name]
    config.fresh()
    events = assert_stream(post_json(fresh_body(), config), fresh_body(), config)
    assert [e["type"] for e in events[-2:]] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert RUNS == [], "nothing runs before the batch is answered"
    return events[-2]["messages"], events[-1]["outcome"]["interrupts"]


def call_ids(config: Config) -> dict[str, str]:
    """Tool name -> the id the paused run gave its call (sealed ids are the server's)."""
    calls = pause(config.name)[0][-1]["toolCalls"]
    return {call["function"]["name"]: call["id"] for call in calls}


def proposed_calls(config: Config) -> dict[str, tuple[str, str]]:
    calls = pause(config.name)[0][-1]["toolCalls"]
    return {
        call["id"]: (
            call["function"]["name"],
            _canonical(json.loads(call["function"]["arguments"])),
        )
        for call in calls
    }


def generic_entry(config: Config, payload: Any) -> dict[str, Any]:
    descriptor = pause(config.name)[1][-1]
    continuation = generic_continuation_from_descriptor(descriptor)
    assert continuation is not None
    return {
        "interruptId": descriptor["id"],
        "status": "resolved",
        "payload": payload,
        "metadata": wrap_generic_continuation(continuation),
    }


def continuation(config: Config, resume: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": "r2",
        "parentRunId": "r1",
        "messages": copy.deepcopy(pause(config.name)[0]),
        "resume": resume,
        "tools": [],
        "context": [],
        "state": {},
    }


def resolved(interrupt_id: str, payload: Any) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "resolved", "payload": payload}


def cancelled(interrupt_id: str) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "cancelled"}


def valid_answers(config: Config) -> list[list[dict[str, Any]]]:
    ids = call_ids(config)
    transfer, delete = "approval_" + ids["transfer"], "approval_" + ids["delete"]
    locate = "client_tool_" + ids["locate"]
    return [
        [
            resolved(transfer, True),
            resolved(transfer, {"approved": True}),
            resolved(transfer, {"approved": True, "editedArgs": {"recipient": "Bo", "amount": 3}}),
            resolved(transfer, {"approved": False, "payload": {"reason": "too much"}}),
            cancelled(transfer),
        ],
        [
            resolved(delete, True),
            resolved(delete, {"approved": True}),
            resolved(delete, {"approved": True, "editedArgs": {"name": "hermes"}}),
            resolved(delete, False),
            cancelled(delete),
        ],
        [resolved(locate, {"city": "Oslo"}), resolved(locate, {"city": "Rome"}), cancelled(locate)],
    ]


@st.composite
def valid_resumes(draw: st.DrawFn, config: Config) -> list[dict[str, Any]]:
    entries = [copy.deepcopy(draw(st.sampled_from(choices))) for choices in valid_answers(config)]
    review = draw(st.sampled_from(["ok", "ok", "ok", "not ok", "cancelled"]))
    generic = generic_entry(config, {"ok": review == "ok"})
    if review == "cancelled":
        generic["status"] = "cancelled"
        del generic["payload"]
    entries.append(generic)
    return draw(st.permutations(entries))


# ---------------------------------------------------------------------------------------------
# Mutations of a valid continuation. Each takes the body, the config and a draw function.

Mutation = Callable[[dict[str, Any], Config, st.DrawFn], None]
FORGED_ID = "tc00000000ffffffffAAAAAAAAAAAAAAAA"  # the sealed id format, with a made-up seal


def interrupt_ids(config: Config) -> st.SearchStrategy[str]:
    known = [*call_ids(config).values(), "c9", FORGED_ID]
    return st.sampled_from(
        [prefix + call for prefix in ("approval_", "client_tool_") for call in known]
        + [pause(config.name)[1][-1]["id"], "interrupt-1-x", "", "c1"]
    ) | st.text(max_size=12)


def some_call_ids(config: Config) -> st.SearchStrategy[str]:
    return st.sampled_from([*call_ids(config).values(), "c9", FORGED_ID, ""]) | st.text(max_size=6)


UNREADABLE_ARGUMENTS = [
    '{"recipient": "Ada", "amount": 1e999}',  # Infinity to JavaScript
    '{"recipient": "Ada", "amount": NaN}',
    '{"recipient": "Ada", "amount": ' + "9" * 400 + "}",
    '{"recipient": "Ada", "amount": ' + "9" * 5000 + "}",  # past Python's int digit limit
    "[" * 100_000 + "]" * 100_000,  # too deep for the parser
    '{"recipient": "Ada", "amount": 1, "x": ' + "[" * 900 + "]" * 900 + "}",  # too deep to hash
]

tool_names = st.sampled_from([*TOOLS, "unknown", ""])


@st.composite
def argument_texts(draw: st.DrawFn) -> str:
    choice = draw(st.integers(0, 4))
    if choice == 0:  # another tool's arguments, or the right ones in another spelling
        return json.dumps(draw(st.sampled_from(CALLS))[2], indent=draw(st.sampled_from([None, 1])))
    if choice == 1:
        keys = st.sampled_from(["recipient", "amount", "name", "q"])
        return json.dumps(draw(st.dictionaries(keys, json_values | scalars, max_size=3)))
    if choice == 2:
        return json.dumps(draw(json_values))
    if choice == 3:
        return draw(st.sampled_from(["", " ", "{", "null", "[]", "{}", *UNREADABLE_ARGUMENTS]))
    return draw(st.text(max_size=12))


def entry_payloads(draw: st.DrawFn) -> Any:
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return draw(json_values)
    if choice == 1:  # an envelope with wrong or extra fields
        envelope = {"approved": draw(json_values | st.booleans())}
        fields = st.sampled_from(["editedArgs", "payload", "reason", "x"])
        return {**envelope, **draw(st.dictionaries(fields, json_values, max_size=2))}
    if choice == 2:  # approved, editedArgs of the wrong shape
        edited = draw(
            json_values
            | st.fixed_dictionaries(
                {"recipient": json_values, "amount": json_values}, optional={"name": json_values}
            )
            | st.fixed_dictionaries({"name": json_values})
        )
        return {"approved": True, "editedArgs": edited}
    if choice == 3:  # rejected with a payload of any shape, or editing while rejecting
        key = draw(st.sampled_from(["payload", "editedArgs"]))
        return {"approved": False, key: draw(json_values)}
    if choice == 4:  # a client tool output of the wrong shape
        return {"city": draw(json_values)}
    return draw(st.sampled_from([True, False, "true", 1, 0, None, [], {}]))


def m_unknown_entry(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    entry = {
        "interruptId": draw(interrupt_ids(config)),
        "status": draw(st.sampled_from(["resolved", "cancelled"])),
    }
    if draw(st.booleans()):
        entry["payload"] = entry_payloads(draw)
    body["resume"].insert(draw(st.integers(0, len(body["resume"]))), entry)


def m_duplicate_entry(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    if body["resume"]:
        entry = copy.deepcopy(draw(st.sampled_from(body["resume"])))
        if draw(st.booleans()) and "payload" in entry:
            entry["payload"] = entry_payloads(draw)
        body["resume"].insert(draw(st.integers(0, len(body["resume"]))), entry)


def m_drop_entry(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    if body["resume"]:
        body["resume"].pop(draw(st.integers(0, len(body["resume"]) - 1)))


def m_status(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    if body["resume"]:
        entry = draw(st.sampled_from(body["resume"]))
        entry["status"] = "cancelled" if entry["status"] == "resolved" else "resolved"


def m_payload(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    if body["resume"]:
        entry = draw(st.sampled_from(body["resume"]))
        if draw(st.integers(0, 3)) == 0:
            entry.pop("payload", None)
        else:
            entry["payload"] = entry_payloads(draw)


def m_cancel_with_payload(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    if body["resume"]:
        entry = draw(st.sampled_from(body["resume"]))
        entry["status"] = "cancelled"
        entry["payload"] = draw(st.sampled_from([None, True, {"approved": False}, {"city": "x"}]))


def m_interrupt_id(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    if body["resume"]:
        draw(st.sampled_from(body["resume"]))["interruptId"] = draw(interrupt_ids(config))


def m_generic_metadata(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    for entry in body["resume"]:
        if not isinstance(entry.get("metadata"), dict):
            continue
        choice = draw(st.integers(0, 3))
        if choice == 0:
            del entry["metadata"]
        elif choice == 1:
            entry["metadata"] = draw(st.dictionaries(st.text(max_size=8), json_values, max_size=2))
        elif choice == 2:
            entry["metadata"]["tanstack:interruptContinuation"] = draw(json_values)
        else:
            inner = entry["metadata"].get("tanstack:interruptContinuation")
            if not isinstance(inner, dict):
                return
            name = draw(st.sampled_from([*sorted(inner), "payload", "x"]))
            if draw(st.booleans()):
                inner.pop(name, None)
            else:
                inner[name] = draw(
                    json_values | st.sampled_from(["review", "k", "sha256:forged", -1, 0, 4, 99])
                )
        return


def m_call_arguments(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    draw(st.sampled_from(_history_calls(body)))["function"]["arguments"] = draw(argument_texts())


def m_call_name(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    draw(st.sampled_from(_history_calls(body)))["function"]["name"] = draw(tool_names)


def m_call_id(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    draw(st.sampled_from(_history_calls(body)))["id"] = draw(some_call_ids(config))


def m_drop_message(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    if body["messages"]:
        body["messages"].pop(draw(st.integers(0, len(body["messages"]) - 1)))


@st.composite
def extra_messages(draw: st.DrawFn, config: Config) -> dict[str, Any]:
    message_id = draw(st.sampled_from(["u1", "m9", "tool-c1"]) | st.text(max_size=6))
    role = draw(st.sampled_from(["user", "system", "assistant", "tool"]))
    if role in ("user", "system"):
        return {"id": message_id, "role": role, "content": draw(st.text(max_size=12))}
    if role == "tool":
        content = draw(
            st.sampled_from(
                ['{"receipt":0}', '{"approved":true,"pendingExecution":true}', "done", ""]
            )
            | st.text(max_size=8)
        )
        call_id = draw(some_call_ids(config))
        return {"id": message_id, "role": "tool", "toolCallId": call_id, "content": content}
    calls = draw(
        st.lists(
            st.builds(
                lambda call_id, name, arguments: {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                },
                some_call_ids(config),
                tool_names,
                argument_texts(),
            ),
            min_size=1,
            max_size=3,
        )
    )
    return {"id": message_id, "role": "assistant", "toolCalls": calls}


def m_extra_message(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    where = draw(st.integers(0, len(body["messages"])))
    body["messages"].insert(where, draw(extra_messages(config)))


def m_parent_run_id(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    choice = draw(st.integers(0, 2))
    if choice == 0:
        body.pop("parentRunId", None)
    elif choice == 1:
        body["parentRunId"] = ""
    else:
        body["parentRunId"] = draw(st.sampled_from(["r2", "r0", "other"]) | st.text(max_size=8))


def m_extra_field(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    """AG-UI keeps unknown fields; they are echoed (messages) or ignored, never a crash."""
    places = [body, *body["messages"], *body["resume"], *_history_calls(body)]
    place = draw(st.sampled_from(places))
    # Only names no model field has (nor its snake_case spelling, which pydantic also reads).
    name = draw(st.sampled_from(["x", "ag-ui", "extra", "x-trace", "ünï", "", "🙂"]))
    place[name] = draw(json_values)


def m_run_id(body: dict[str, Any], config: Config, draw: st.DrawFn) -> None:
    body[draw(st.sampled_from(["runId", "threadId"]))] = draw(
        st.sampled_from(["r1", "t2", ""]) | st.text(max_size=8)
    )


def _history_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    calls = [
        call
        for message in body["messages"]
        if message.get("role") == "assistant"
        for call in message.get("toolCalls") or []
    ]
    return calls or [{"id": "", "function": {"name": "", "arguments": ""}}]  # a scratch call


MUTATIONS: list[Mutation] = [
    m_unknown_entry,
    m_duplicate_entry,
    m_drop_entry,
    m_status,
    m_payload,
    m_cancel_with_payload,
    m_interrupt_id,
    m_generic_metadata,
    m_call_arguments,
    m_call_name,
    m_call_id,
    m_drop_message,
    m_extra_message,
    m_parent_run_id,
    m_run_id,
    m_extra_field,
]


@st.composite
def mutated_continuations(draw: st.DrawFn, config: Config) -> dict[str, Any]:
    if draw(st.booleans()):  # everything approved as proposed: whatever is forged would run
        resume = [copy.deepcopy(choices[0]) for choices in valid_answers(config)]
        resume.append(generic_entry(config, {"ok": True}))
    else:
        resume = draw(valid_resumes(config))
    body = continuation(config, resume)
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3)):
        mutation(body, config, draw)
    return body


# ---------------------------------------------------------------------------------------------
# Bytes, types, sizes and depth.


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=300),
        st.text(max_size=100).map(str.encode),
        st.lists(jsonish_tokens, max_size=40).map(lambda tokens: "".join(tokens).encode()),
        odd_json_texts().map(str.encode),
        st.text(max_size=50).map(lambda text: text.encode("utf-16")),
    )
)
def test_raw_bytes_get_400_or_a_well_formed_stream(payload: bytes) -> None:
    BARE.fresh()
    response = post(payload)
    assert response.status_code in (200, 400), (response.status_code, response.text[:300])
    if response.status_code == 400:
        assert_error(response, 400, "JSON", "RunAgentInput", "nested")
    else:
        assert_stream(response, json.loads(payload))


@FUZZ
@given(json_values.filter(lambda value: not isinstance(value, dict)))
def test_json_that_is_not_an_object_gets_400(value: Any) -> None:
    BARE.fresh()
    assert_error(post_json(value), 400, "must be a JSON object")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@st.composite
def retyped_bodies(draw: st.DrawFn, config: Config) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """A fresh run or a real continuation with one field given a value of any type, or gone."""
    body = (
        fresh_body() if draw(st.booleans()) else continuation(config, draw(valid_resumes(config)))
    )
    body["forwardedProps"] = {"a": [1]}
    body["messages"].append({"id": "s1", "role": "system", "content": "be brief"})
    path = draw(st.sampled_from(_paths(body)))
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    if draw(st.integers(0, 2)) == 0 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(
            json_values | st.sampled_from(["", "wizard", "pending", 0, -1, None, [], {}])
        )
    return body, path


@pytest.mark.parametrize("config_name", CONFIGS)
@FUZZ
@given(data=st.data())
def test_wrong_types_anywhere_get_400_naming_the_field_or_a_clean_run(
    config_name: str, data: st.DataObject
) -> None:
    config = CONFIGS[config_name]
    body, path = data.draw(retyped_bodies(config), label="body, mutated path")
    config.fresh()
    response = post_json(body, config)
    assert response.status_code in (200, 400), (response.status_code, response.text[:300])
    if response.status_code == 400:
        assert_error(response, 400, f"RunAgentInput: {path[0]}")
    else:
        assert_stream(response, body, config)


@settings(FUZZ, max_examples=60)
@given(st.integers(1, 3 * SMALL_LIMIT), st.sampled_from(["declared", "chunked", "understated"]))
def test_bodies_over_the_limit_get_413(extra: int, framing: str) -> None:
    body = {**fresh_body(), "state": {"pad": ""}}
    body["state"]["pad"] = "x" * (SMALL_LIMIT - len(json.dumps(body).encode()) + extra)
    payload = json.dumps(body).encode()
    assert len(payload) == SMALL_LIMIT + extra

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(payload), 700):
            yield payload[start : start + 700]

    BARE.fresh()
    if framing == "declared":
        response = post(payload, app=SMALL_APP)
    elif framing == "chunked":
        response = post(chunks, app=SMALL_APP)
    else:  # a Content-Length that lies: the bytes are counted anyway
        response = post(chunks, app=SMALL_APP, headers={"content-length": "10"})
    assert_error(response, 413, "larger than")


def test_a_body_at_the_limit_is_read() -> None:
    body = {**fresh_body(), "state": {"pad": ""}}
    body["state"]["pad"] = "x" * (SMALL_LIMIT - len(json.dumps(body).encode()))
    assert len(json.dumps(body).encode()) == SMALL_LIMIT
    BARE.fresh()
    assert_stream(post(json.dumps(body).encode(), app=SMALL_APP), body)


@settings(FUZZ, max_examples=60)
@given(
    st.integers(201, 50_000),
    st.sampled_from(["[", '{"a":']),
    st.sampled_from(["bare", "closed in state", "closed in resume", "unclosed"]),
)
def test_deep_nesting_gets_400(depth: int, opener: str, where: str) -> None:
    closer = "]" if opener == "[" else "}"
    nest = opener * depth + closer * depth
    if where == "bare":
        text = nest
    elif where == "closed in state":
        text = json.dumps({**fresh_body(), "state": "X"}).replace('"X"', nest)
    elif where == "closed in resume":
        body = continuation(BARE, [resolved("client_tool_c4", "X")])
        text = json.dumps(body).replace('"X"', nest)
    else:
        text = '{"threadId":"t","runId":"r","messages":[],"state":' + opener * depth
    # A bare list is refused for not being an object before its depth is measured.
    fragments = ["nested too deeply", "not valid JSON"] + (
        ["JSON object"] if where == "bare" else []
    )
    BARE.fresh()
    assert_error(post(text.encode()), 400, *fragments)


@settings(FUZZ, max_examples=30)
@given(st.integers(1, 190))
def test_nesting_within_the_limit_is_accepted(depth: int) -> None:
    text = json.dumps({**fresh_body(), "state": "X"})
    text = text.replace('"X"', '{"a":' * depth + "1" + "}" * depth)
    BARE.fresh()
    assert_stream(post(text.encode()), json.loads(text))


WILD_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "9" * 400, "1" * 5000]


@settings(FUZZ, max_examples=100)
@given(data=st.data())
def test_numbers_javascript_cannot_read_get_400_wherever_they_are(data: st.DataObject) -> None:
    """NaN, Infinity and numbers past 1.8e308 are not JSON to a JavaScript peer; refused."""
    body, path = data.draw(retyped_bodies(BARE), label="body, mutated path")
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = "WILD"
    text = json.dumps(body).replace('"WILD"', data.draw(st.sampled_from(WILD_NUMBERS)), 1)
    BARE.fresh()
    assert_error(post(text.encode()), 400, "not valid JSON")


# ---------------------------------------------------------------------------------------------
# Continuations of a real pause.


@pytest.mark.parametrize("config_name", CONFIGS)
@FUZZ
@given(data=st.data())
def test_valid_answers_run_exactly_what_was_approved(config_name: str, data: st.DataObject) -> None:
    config = CONFIGS[config_name]
    resume = data.draw(valid_resumes(config), label="resume")
    body = continuation(config, resume)
    config.fresh()
    events = assert_stream(post_json(body, config), body, config)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    review = next(entry for entry in resume if entry["interruptId"].startswith("interrupt-"))
    if review["status"] == "cancelled" or not review["payload"]["ok"]:
        assert RUNS == []
        return
    # Everything approved ran, and the plain tool of the batch ran with it.
    assert sorted(name for _, name, _ in RUNS) == sorted(
        name for name, _ in allowed_runs(body, config).values()
    )


@pytest.mark.parametrize("config_name", CONFIGS)
@FUZZ
@given(data=st.data())
def test_mutated_continuations_never_run_what_was_not_approved(
    config_name: str, data: st.DataObject
) -> None:
    config = CONFIGS[config_name]
    body = data.draw(mutated_continuations(config), label="body")
    config.fresh()
    response = post_json(body, config)
    events = assert_stream(response, body, config)  # every mutation keeps the body well-typed
    outcome = events[-1].get("code") or "finished"
    event(f"{outcome}; ran {sorted(name for _, name, _ in RUNS)}")
    if config.sealed:  # the same answer again: refused, and nothing runs twice
        config.fresh(keep_ledger=True)
        again = assert_stream(post_json(body, config), body, config)
        assert RUNS == [], f"a replay ran {RUNS}"
        if events[-1]["type"] == "RUN_FINISHED":
            assert again[-1]["type"] == "RUN_ERROR" and again[-1]["code"] == "conflict"


# ---------------------------------------------------------------------------------------------
# What the fuzzing found, pinned.


def test_an_integer_past_pythons_digit_limit_is_a_400_not_a_500() -> None:
    BARE.fresh()
    assert_error(post(b"9" * 5000), 400, "not valid JSON")
    body = json.dumps({**fresh_body(), "state": "X"}).replace('"X"', "1" * 4301)
    assert_error(post(body.encode()), 400, "not valid JSON")


@pytest.mark.parametrize(
    ("tool_name", "arguments"),
    [
        ("transfer", '{"name": "apollo"}'),  # another tool's arguments
        ("transfer", '{"recipient": "Ada", "amount": "lots"}'),
        ("transfer", "not json"),
        ("delete", ""),
        ("lookup", '{"q": 7}'),  # the plain tool that runs with the batch
    ],
)
def test_altered_history_arguments_the_schema_refuses_never_run(
    tool_name: str, arguments: str
) -> None:
    resume = [copy.deepcopy(choices[0]) for choices in valid_answers(BARE)]
    body = continuation(BARE, [*resume, generic_entry(BARE, {"ok": True})])
    for call in body["messages"][-1]["toolCalls"]:
        if call["function"]["name"] == tool_name:
            call["function"]["arguments"] = arguments
    BARE.fresh()
    events = assert_stream(post_json(body), body)
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1]["code"] == "stale"
    assert "arguments in the history" in events[-1]["message"]
    assert "arguments in the history" in events[-1]["message"]


@pytest.mark.parametrize("config_name", CONFIGS)
@pytest.mark.parametrize("tool_name", ["transfer", "lookup", "locate"])
@pytest.mark.parametrize("arguments", UNREADABLE_ARGUMENTS, ids=range(len(UNREADABLE_ARGUMENTS)))
def test_history_arguments_that_are_not_json_refuse_the_continuation(
    config_name: str, tool_name: str, arguments: str
) -> None:
    config = CONFIGS[config_name]
    resume = [copy.deepcopy(choices[0]) for choices in valid_answers(config)]
    if tool_name == "locate":  # a client tool the continuation would hand back to the client
        resume = [entry for entry in resume if not entry["interruptId"].startswith("client_")]
    body = continuation(config, [*resume, generic_entry(config, {"ok": True})])
    for call in body["messages"][-1]["toolCalls"]:
        if call["function"]["name"] == tool_name:
            call["function"]["arguments"] = arguments
    config.fresh()
    events = assert_stream(post_json(body, config), body, config)
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1]["code"] == "stale"
    assert "arguments in the history" in events[-1]["message"]

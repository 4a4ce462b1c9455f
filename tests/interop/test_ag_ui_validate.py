"""Every stream our server sends passes ``ag-ui-validate`` with no errors and no warnings.

The streams are the raw SSE bodies captured by ``chatclient_scenarios.mjs`` (see
``test_chatclient_interop.py``): every pause, every continuation (approve, reject, edit,
cancel, bulk, generic answers), the refused continuation of ``email_refused_then_fixed`` and
the client-tool chain of ``location``; and, built in-process through the server's own SSE
encoder, the streams no TanStack scenario reaches: the policy deciding alone (the ``CUSTOM``
event ``chat_app:policyDecision``, approving and rejecting), a refusal by the policy, a client
tool's output answered by a plain AG-UI client (the server writes the result), a call held back
by batch gating, and the resolution hook's ``cancel`` and ``stop``.  Each body goes through
``ag_ui_validate.transport.validate_body`` as a recording (SSE framing, the core rules,
Content-Type).

A continuation's result for a call the paused run made comes after a ``TOOL_CALL_START`` and
``TOOL_CALL_END`` of that call (`docs/protocol.md` §3.7), so ``AGUI207`` ("references
toolCallId ..., which was never started") never fires.  One finding remains, of severity
*info*, and it is allowed exactly where it is explained:

* ``AGUI208`` (info) ``TOOL_CALL_START parentMessageId '<id>' matches no message observed in
  this stream`` — on a restated call: its ``parentMessageId`` names the assistant message of
  the request's history that made the call.  The validator reads only the stream, and only a
  ``MESSAGES_SNAPSHOT`` (the whole history: it would grow with it) or a text message streamed
  in the same run would show it that message.  The parent must be there: without it TanStack's
  client puts the call into a new assistant message.  The catalog marks the rule as an open
  spec question (SQ-11).
``test_documented_exceptions_still_occur`` fails when the exception stops firing, so the
list above cannot go stale.  ag-ui-validate checks an interrupt outcome only as "an object",
so every event is also parsed with ``@ag-ui/core``'s zod ``EventSchemas`` in node.

The restated calls must not cost the clients anything: TanStack's ``ChatClient`` ends every
scenario with one tool-call part per call and the arguments the pause streamed, and
``@ag-ui/client``'s ``defaultApplyEvents`` keeps a restated call as the history has it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from ag_ui_validate.transport import TransportOptions, validate_body
from ag_ui_validate.types import Diagnostic, Report

from chat_app.agent import (
    Agent,
    Middleware,
    Resolutions,
    RunContext,
    ScriptedModel,
    define_interrupt,
    event_to_wire,
    tool,
)
from chat_app.agent.middleware import HookResult
from chat_app.demo import POLICY_PATH, build_demo_agent
from chat_app.demo.script import demo_script
from chat_app.interrupts import (
    POLICY_DECISION_EVENT,
    ToolResume,
    encode_sse_event,
    generic_continuation_from_descriptor,
    wrap_generic_continuation,
)
from chat_app.trust import DEMO_PEOPLE, Policy, Sealer, SQLiteLedger
from tests.agent.builders import obj, run_input, say, turns
from tests.interop.test_chatclient_interop import (
    JS_DIR,
    SCENARIOS,
    cached_scenario_run,
    parse_sse,
    running_server,
    scenario,
)

pytestmark = pytest.mark.interop

UNKNOWN_PARENT = (
    "TOOL_CALL_START parentMessageId '{}' matches no message observed in this stream"
)


@pytest.fixture(scope="session")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The session's node run of `test_chatclient_interop.py` (made here if that didn't run)."""
    return cached_scenario_run(tmp_path_factory, running_server)


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def validate(request: dict[str, Any]) -> Report:
    result = await validate_body(
        _once(request["stream"].encode()), request["contentType"], TransportOptions(recorded=True)
    )
    assert result.transport_error is None
    return result.report


def restated_calls(events: list[dict[str, Any]]) -> dict[int, str]:
    """The index of each restated call's `TOOL_CALL_START`, to its id: a start right before its
    own end (no arguments) and the call's result (`docs/protocol.md` §3.7)."""
    found: dict[int, str] = {}
    for index, event in enumerate(events[:-2]):
        end, result = events[index + 1], events[index + 2]
        call_id = event.get("toolCallId")
        if (
            isinstance(call_id, str)
            and event["type"] == "TOOL_CALL_START"
            and (end["type"], end.get("toolCallId")) == ("TOOL_CALL_END", call_id)
            and (result["type"], result.get("toolCallId")) == ("TOOL_CALL_RESULT", call_id)
        ):
            found[index] = call_id
    return found


def is_documented_exception(
    diagnostic: Diagnostic, body: dict[str, Any], events: list[dict[str, Any]]
) -> bool:
    """Whether a finding is the one exception of the module docstring, exactly: `AGUI208`
    info on a restated call whose parent is the history's assistant message that made it."""
    if (diagnostic.rule, diagnostic.severity) != ("AGUI208", "info"):
        return False
    if not body.get("resume") or diagnostic.event_index is None:
        return False
    call_id = restated_calls(events).get(diagnostic.event_index)
    parent = events[diagnostic.event_index].get("parentMessageId")
    makers = {
        message["id"]
        for message in body["messages"]
        if message["role"] == "assistant"
        and any(call["id"] == call_id for call in message.get("toolCalls") or [])
    }
    return (
        call_id is not None
        and makers == {parent}
        and diagnostic.message == UNKNOWN_PARENT.format(parent)
    )


def problems_of(report: Report, body: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    return [
        describe(diagnostic)
        for diagnostic in report.diagnostics
        if not is_documented_exception(diagnostic, body, events)
    ]


def describe(diagnostic: Diagnostic) -> str:
    return (
        f"{diagnostic.rule} {diagnostic.severity} at event {diagnostic.event_index} "
        f"({diagnostic.event_type}{diagnostic.pointer or ''}): {diagnostic.message}"
    )


@pytest.mark.parametrize("name", SCENARIOS)
async def test_every_stream_passes_ag_ui_validate(captured: dict[str, Any], name: str) -> None:
    summary = scenario(captured, name)
    assert summary["requests"], name
    problems: list[str] = []
    for index, request in enumerate(summary["requests"]):
        report = await validate(request)
        assert report.summary.errors == 0, (name, index)
        found = problems_of(report, request["body"], parse_sse(request["stream"]))
        problems += [f"request {index}: {problem}" for problem in found]
    assert problems == []


async def test_documented_exceptions_still_occur(captured: dict[str, Any]) -> None:
    """If this stops firing, delete it from the module docstring and the filter."""
    approve = scenario(captured, "transfer_approve")
    request = approve["requests"][1]
    report = await validate(request)
    [unknown_parent] = report.diagnostics
    assert (unknown_parent.rule, unknown_parent.severity) == ("AGUI208", "info")
    assert is_documented_exception(unknown_parent, request["body"], parse_sse(request["stream"]))

    # A refused continuation starts with RUN_STARTED, so the validator has nothing to say.
    refused = scenario(captured, "email_refused_then_fixed")
    report = await validate(refused["requests"][1])
    assert report.diagnostics == []


async def test_without_the_restated_start_the_result_is_an_error(
    captured: dict[str, Any],
) -> None:
    """The restatement is what keeps AGUI207 away: the same continuation without it fails."""
    request = dict(scenario(captured, "transfer_approve")["requests"][1])
    events = parse_sse(request["stream"])
    [(start, call_id)] = restated_calls(events).items()
    kept = events[:start] + events[start + 2 :]
    request["stream"] = "".join(encode_sse_event(event) for event in kept)
    report = await validate(request)
    assert [(d.rule, d.severity) for d in report.diagnostics] == [("AGUI207", "error")]
    assert call_id in report.diagnostics[0].message


async def test_the_validator_is_not_vacuous(captured: dict[str, Any]) -> None:
    """The same pause stream without its terminal RUN_FINISHED is flagged."""
    request = dict(scenario(captured, "transfer_approve")["requests"][0])
    frames = [frame for frame in request["stream"].split("\n\n") if frame.strip()]
    assert '"RUN_FINISHED"' in frames[-1]
    request["stream"] = "\n\n".join(frames[:-1]) + "\n\n"
    report = await validate(request)
    assert report.summary.errors > 0


def test_every_event_parses_with_ag_ui_core_schemas(captured: dict[str, Any]) -> None:
    assert captured["schemaSelfCheck"] is True  # zod rejects `interrupts: []`
    problems = [
        (name, index, issue)
        for name in SCENARIOS
        for index, request in enumerate(scenario(captured, name)["requests"])
        for issue in request["schemaIssues"]
    ]
    assert problems == []


# -- the streams no TanStack scenario reaches, built in-process ---------------------------------

SECRET = b"ag-ui-validate-secret-ag-ui-validate"
RITA = DEMO_PEOPLE[0]
NO_DELETES = Policy.parse(
    '[[rules]]\nname = "no-deletes"\ntool = "delete_project"\ndecide = "reject"\n'
    'reason = "projects are archived, not deleted"\n'
)
CHECK = define_interrupt("check", response=obj({"ok": {"type": "boolean"}}, ["ok"], draft=False))
ACT = tool("act", input=obj({}, []), needs_approval=True, execute=lambda args: {"acted": True})
LOG = tool("log", input=obj({}, []), execute=lambda args: {"logged": True})


class AskBeforeTools(Middleware):
    """Asks one generic question next to the tool calls; answers it with `answer`."""

    def __init__(self, answer: ToolResume) -> None:
        self.answer = answer

    async def before_tools(self, ctx: RunContext) -> HookResult:
        if ctx.is_continuation:
            return None
        return [CHECK.request(key="check", reason="check", message="Check first")]

    async def on_interrupt_resolution(
        self, ctx: RunContext, resolutions: Resolutions
    ) -> ToolResume:
        return self.answer


class Recorder:
    """An agent and the bodies sent to it, with the stream each one got."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.sent: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []

    async def ask(self, phrase: str) -> list[dict[str, Any]]:
        body = {"threadId": "t", "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": phrase}]}  # fmt: skip
        return await self.send(body)

    async def answer(
        self,
        paused: list[dict[str, Any]],
        resume: list[dict[str, Any]],
        *,
        run_id: str = "r2",
        extra: tuple[dict[str, Any], ...] = (),
    ) -> list[dict[str, Any]]:
        body = {"threadId": "t", "runId": run_id, "parentRunId": paused[-1]["runId"],
                "messages": [*paused[-2]["messages"], *extra], "resume": resume}  # fmt: skip
        return await self.send(body)

    async def send(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        events = [
            event_to_wire(event)
            async for event in self.agent.run(run_input(**body), identity=RITA)
        ]
        self.sent.append((body, events))
        return events


def items_of(paused: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert paused[-1]["outcome"]["type"] == "interrupt", paused[-1]
    items: list[dict[str, Any]] = paused[-1]["outcome"]["interrupts"]
    return items


def approve(item: dict[str, Any]) -> dict[str, Any]:
    return {"interruptId": item["id"], "status": "resolved", "payload": {"approved": True}}


def answered(item: dict[str, Any]) -> dict[str, Any]:
    continuation = generic_continuation_from_descriptor(item)
    assert continuation is not None
    return {"interruptId": item["id"], "status": "resolved", "payload": {"ok": True},
            "metadata": wrap_generic_continuation(continuation)}  # fmt: skip


def demo(tmp_path: Path, policy: Policy | None = None) -> Recorder:
    """The demo agent as the server ships it: sealed, with a ledger and the demo policy."""
    return Recorder(
        build_demo_agent(
            ScriptedModel(demo_script),
            sealer=Sealer(SECRET),
            ledger=SQLiteLedger(tmp_path / "ledger.db"),
            policy=policy or Policy.load(POLICY_PATH),
        )
    )


def with_middleware(answer: ToolResume) -> Recorder:
    model = turns(say("Working.", ("c1", "act", {}), ("c2", "log", {})), say("Finished."))
    return Recorder(
        Agent(model=model, tools=[ACT, LOG], interrupts=[CHECK],
              middleware=[AskBeforeTools(answer)])  # fmt: skip
    )


async def policy_approves(tmp_path: Path) -> Recorder:
    recorder = demo(tmp_path)
    await recorder.ask("refund 20 to order 42")
    return recorder


async def policy_rejects(tmp_path: Path) -> Recorder:
    recorder = demo(tmp_path, NO_DELETES)
    await recorder.ask("delete project apollo")
    return recorder


async def policy_refuses_an_answer(tmp_path: Path) -> Recorder:
    recorder = demo(tmp_path)
    paused = await recorder.ask("rotate production keys")  # two from ops, not the requester
    await recorder.answer(paused, [approve(item) for item in items_of(paused)])
    return recorder


async def client_output_from_a_plain_client(tmp_path: Path) -> Recorder:
    """A plain AG-UI client answers the client tool in `resume` only; the server writes the
    result (TanStack's and our client put it in the history first, so nothing is sent)."""
    recorder = demo(tmp_path)
    paused = await recorder.ask("share my location")
    asked = await recorder.answer(paused, [approve(item) for item in items_of(paused)])
    [item] = items_of(asked)
    here = {"latitude": 48.8566, "longitude": 2.3522, "accuracy": 12}
    await recorder.answer(asked, [{"interruptId": item["id"], "status": "resolved",
                                   "payload": here}], run_id="r3")  # fmt: skip
    return recorder


async def held_back_then_run(tmp_path: Path) -> Recorder:
    """`log` needs nobody, but waits for the question next to it (batch gating)."""
    recorder = with_middleware("continue")
    paused = await recorder.ask("go")
    approval, question = items_of(paused)
    await recorder.answer(paused, [approve(approval), answered(question)])
    return recorder


async def hook_cancels(tmp_path: Path) -> Recorder:
    recorder = with_middleware("cancel")
    paused = await recorder.ask("go")
    approval, question = items_of(paused)
    await recorder.answer(paused, [approve(approval), answered(question)])
    return recorder


async def hook_stops(tmp_path: Path) -> Recorder:
    recorder = with_middleware("stop")
    paused = await recorder.ask("go")
    approval, question = items_of(paused)
    await recorder.answer(paused, [approve(approval), answered(question)])
    return recorder


IN_PROCESS: dict[str, Callable[[Path], Awaitable[Recorder]]] = {
    "policy_approves": policy_approves,
    "policy_rejects": policy_rejects,
    "policy_refuses_an_answer": policy_refuses_an_answer,
    "client_output_from_a_plain_client": client_output_from_a_plain_client,
    "held_back_then_run": held_back_then_run,
    "hook_cancels": hook_cancels,
    "hook_stops": hook_stops,
}


@pytest.fixture(autouse=True)
def _no_token_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_APP_DEMO_TOKEN_DELAY_MS", "0")


@pytest.mark.parametrize("name", IN_PROCESS)
async def test_every_in_process_stream_passes_ag_ui_validate(tmp_path: Path, name: str) -> None:
    recorder = await IN_PROCESS[name](tmp_path)
    problems: list[str] = []
    for index, (body, events) in enumerate(recorder.sent):
        stream = "".join(encode_sse_event(event) for event in events)
        report = await validate({"stream": stream, "contentType": "text/event-stream"})
        assert report.summary.errors == 0, (name, index)
        problems += [f"request {index}: {p}" for p in problems_of(report, body, events)]
    assert problems == []


async def test_the_in_process_streams_are_the_kinds_they_say(tmp_path: Path) -> None:
    """Each builder reaches what its name says (so the test above covers it)."""

    async def last(name: str) -> list[dict[str, Any]]:
        return (await IN_PROCESS[name](tmp_path / name)).sent[-1][1]

    def types(events: list[dict[str, Any]]) -> list[str]:
        return [event["type"] for event in events]

    for name, decision in (("policy_approves", "approved"), ("policy_rejects", "rejected")):
        events = await last(name)
        [custom] = [e for e in events if e["type"] == "CUSTOM"]
        assert (custom["name"], custom["value"]["decision"]) == (POLICY_DECISION_EVENT, decision)
        assert "TOOL_CALL_RESULT" in types(events), name
    refused = await last("policy_refuses_an_answer")
    assert types(refused) == ["RUN_STARTED", "RUN_ERROR"]
    assert refused[-1]["code"] == "forbidden"
    for name, results in (
        ("client_output_from_a_plain_client", 1), ("held_back_then_run", 2), ("hook_cancels", 2),
        ("hook_stops", 2),
    ):  # fmt: skip
        events = await last(name)
        assert types(events).count("TOOL_CALL_RESULT") == results, name
        assert len(restated_calls(events)) == results, name
    for name in ("hook_cancels", "hook_stops"):
        events = await last(name)
        cancelled = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
        assert cancelled == ['{"error":"Tool execution cancelled"}'] * 2, name
    stops = types(await last("hook_stops"))
    assert stops[-1] == "RUN_FINISHED" and "TEXT_MESSAGE_START" not in stops  # no model turn


# -- TanStack's client keeps one part per call -------------------------------------------------


def test_tanstacks_client_keeps_one_part_per_restated_call_with_its_arguments(
    captured: dict[str, Any],
) -> None:
    """After every scenario, each call the server announced is one tool-call part in
    TanStack's messages, with the arguments the pause streamed (restating it sent none)."""
    restated = 0
    for name in SCENARIOS:
        summary = scenario(captured, name)
        announced: dict[str, str] = {}
        for request in summary["requests"]:
            events = parse_sse(request["stream"])
            restated += len(restated_calls(events))
            for event in events:
                if event["type"] == "TOOL_CALL_ARGS":
                    announced[event["toolCallId"]] = (
                        announced.get(event["toolCallId"], "") + event["delta"]
                    )
        parts = [
            part for message in summary["messages"] for part in message["parts"]
            if part["type"] == "tool-call"
        ]  # fmt: skip
        assert sorted(part["id"] for part in parts) == sorted(announced), name
        for part in parts:
            assert part["arguments"] == announced[part["id"]], (name, part["id"])
    assert restated >= 10  # approvals, rejections, edits, cancels, bulk, generic answers


# What `@ag-ui/client`'s own event applier makes of a continuation: the messages it holds after.
APPLY_EVENTS = """
import { defaultApplyEvents } from '@ag-ui/client'
import { from, lastValueFrom, toArray } from 'rxjs'
const { body, events } = JSON.parse(process.argv[1])
const input = { tools: [], context: [], state: {}, forwardedProps: {}, ...body }
const agent = { messages: body.messages, state: {} }
const out = await lastValueFrom(defaultApplyEvents(input, from(events), agent, []).pipe(toArray()))
console.log(JSON.stringify(out.filter((mutation) => mutation.messages).at(-1).messages))
"""


@pytest.mark.parametrize("name", ["transfer_approve", "email_edit", "invoices_bulk"])
def test_ag_ui_clients_keep_a_restated_call_as_the_history_has_it(
    captured: dict[str, Any], name: str
) -> None:
    node = shutil.which("node")
    assert node is not None
    request = scenario(captured, name)["requests"][1]
    events = parse_sse(request["stream"])
    assert restated_calls(events)
    body = {key: request["body"][key] for key in ("threadId", "runId", "messages")}
    done = subprocess.run(
        [node, "--input-type=module", "-e", APPLY_EVENTS, json.dumps({"body": body,
                                                                       "events": events})],
        cwd=JS_DIR, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    messages = json.loads(done.stdout)

    def calls(history: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return [
            (message["id"], call["id"], call["function"]["arguments"])
            for message in history if message["role"] == "assistant"
            for call in message.get("toolCalls") or []
        ]  # fmt: skip

    assert calls(messages) == calls(body["messages"])

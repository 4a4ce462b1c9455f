"""Every stream our server sent the real TanStack ``ChatClient`` passes ``ag-ui-validate``.

The streams are the raw SSE bodies captured by ``chatclient_scenarios.mjs`` (see
``test_chatclient_interop.py``): every pause, every continuation, the refused continuation
of ``email_refused_then_fixed`` and the client-tool chain of ``location``.  Each body goes
through ``ag_ui_validate.transport.validate_body`` as a recording (SSE framing, the core
rules, Content-Type); every finding of any severity fails the test, except this one, which
is deliberate and conforms to AG-UI 1.0 — the validator's rule table is generated from
ag-ui-protocol 0.1.21 and tracks tool calls per run:

* ``AGUI207`` (error) ``TOOL_CALL_RESULT references toolCallId '<id>', which was never
  started`` — on a continuation, for the tool call the paused run started.  AG-UI's
  interrupt pattern says the resumed run emits ``TOOL_CALL_RESULT`` against the ORIGINAL
  ``toolCallId`` without re-emitting ``TOOL_CALL_START/ARGS/END``; TanStack's server does
  exactly that and our transcripts equal TanStack's.  The validator forgets tool calls at
  the run boundary (it flags this even when the paused run and the continuation are fed as
  ONE stream) and learns ids only from a ``MESSAGES_SNAPSHOT`` inside the same run.
  TanStack's client would also accept a ``MESSAGES_SNAPSHOT`` right after ``RUN_STARTED``
  (tried: same final messages), but TanStack's server sends none, so we don't either.
  Allowed only on a continuation, only for an id that the paused run started with
  ``TOOL_CALL_START``, that the continuation's history carries as an assistant tool call,
  and that the continuation does not start again.
``test_documented_exceptions_still_occur`` fails when the exception stops firing, so the
list above cannot go stale.  ag-ui-validate checks an interrupt outcome only as "an object",
so every event is also parsed with ``@ag-ui/core``'s zod ``EventSchemas`` in node.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from ag_ui_validate.transport import TransportOptions, validate_body
from ag_ui_validate.types import Diagnostic, Report

from tests.interop.test_chatclient_interop import (
    SCENARIOS,
    cached_scenario_run,
    parse_sse,
    running_server,
    scenario,
)

pytestmark = pytest.mark.interop

NEVER_STARTED = "TOOL_CALL_RESULT references toolCallId '{}', which was never started"


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


def _started(events: list[dict[str, Any]]) -> set[str]:
    return {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"}


def is_documented_exception(diagnostic: Diagnostic, summary: dict[str, Any], index: int) -> bool:
    """Whether a finding is one of the two exceptions of the module docstring, exactly."""
    body = summary["requests"][index]["body"]
    if index == 0 or not body.get("resume") or not body.get("parentRunId"):
        return False
    events = parse_sse(summary["requests"][index]["stream"])
    if diagnostic.rule == "AGUI207" and diagnostic.severity == "error":
        paused = [
            parse_sse(request["stream"])
            for request in summary["requests"][:index]
            if request["body"]["runId"] == body["parentRunId"]
        ]
        history_calls = {
            call["id"]
            for message in body["messages"]
            if message["role"] == "assistant"
            for call in message.get("toolCalls") or []
        }
        event = events[diagnostic.event_index]
        call_id = event.get("toolCallId")
        return (
            len(paused) == 1
            and event["type"] == "TOOL_CALL_RESULT"
            and diagnostic.message == NEVER_STARTED.format(call_id)
            and call_id in _started(paused[0])
            and call_id in history_calls
            and call_id not in _started(events)
        )
    return False


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
        for diagnostic in report.diagnostics:
            if not is_documented_exception(diagnostic, summary, index):
                problems.append(f"request {index}: {describe(diagnostic)}")
    assert problems == []


async def test_documented_exceptions_still_occur(captured: dict[str, Any]) -> None:
    """If this stops firing, delete it from the module docstring and the filter."""
    approve = scenario(captured, "transfer_approve")
    report = await validate(approve["requests"][1])
    [never_started] = report.diagnostics
    assert never_started.rule == "AGUI207"
    assert is_documented_exception(never_started, approve, 1)

    # A refused continuation starts with RUN_STARTED, so the validator has nothing to say.
    refused = scenario(captured, "email_refused_then_fixed")
    report = await validate(refused["requests"][1])
    assert report.diagnostics == []


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

"""The real TanStack ``ChatClient`` (``@tanstack/ai-client@0.33.2``) against our server.

One session-scoped server (``python -m chat_app.server`` on a free port, no token delay) and
one node process (``tests/interop/js/chatclient_scenarios.mjs``) that plays every demo
scenario through ``ChatClient`` + ``fetchServerSentEvents``: it registers the tools of
``GET /api/tools`` with the same raw JSON Schemas, sends the phrase, checks nothing itself,
resolves the pause through the public client API and prints a JSON summary per scenario —
the public interrupt items at each pause, every interrupt-state publication, the exact
request bodies the client POSTed and the raw SSE it read.  The tests below assert on those
summaries; ``test_ag_ui_validate.py`` validates the same captured streams.

A missing ``node`` or npm install fails loudly (``npm ci --prefix tests/interop/js``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from chat_app.interrupts import collation_key
from tests.live_server import free_port
from tests.server.test_fuzz import resolved

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = Path(__file__).resolve().parent / "js"
SCENARIO_SCRIPT = JS_DIR / "chatclient_scenarios.mjs"
INSTALL_HINT = "run `npm ci --prefix tests/interop/js` (from the repository root)"
PINNED = {
    "@tanstack/ai": "0.58.0",
    "@tanstack/ai-client": "0.33.2",
    "@ag-ui/core": "1.0.0",
    "@ag-ui/client": "1.0.0",
    "zod": "4.6.7",
}
SERVER_START_TIMEOUT = 30.0
NODE_TIMEOUT = 120.0

#: Every scenario the node script plays (its `SCENARIOS` keys).
SCENARIOS = (
    "transfer_approve",
    "transfer_reject",
    "delete_cancel",
    "delete_reject_bulk",
    "email_edit",
    "email_refused_then_fixed",
    "invoices_bulk",
    "invoices_each",
    "invoices_fn",
    "ship_order",
    "deploy",
    "local_time",
    "location",
)

#: What the scenario script's client tools return (chatclient_scenarios.mjs).
LOCAL_TIME = {"time": "09:41", "timeZone": "Europe/Paris"}
LOCATION = {"latitude": 48.8566, "longitude": 2.3522, "accuracy": 12, "label": "Paris, France"}
EDITED_EMAIL = {
    "to": "ada@example.com",
    "subject": "Launch day",
    "body": "Hi Ada,\n\nLaunch day is Thursday.\n\nBest,\nThe ops desk",
}
INVOICES = ["INV-1001", "INV-1002", "INV-1003"]
CONTINUATION_KEY = "tanstack:interruptContinuation"
BINDING_KEY = "tanstack:interruptBinding"


# -- the server ---------------------------------------------------------------------------------


class ChatServer:
    """``python -m chat_app.server`` in a subprocess, logging to a temporary file."""

    def __init__(self, **settings: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile(  # closed in stop()
            prefix="chat-server-", suffix=".log", delete=False
        )
        env = dict(os.environ)
        env["CHAT_APP_DEMO_TOKEN_DELAY_MS"] = "0"
        # The server runs sealed, with a ledger, as deployed: TanStack's client must not notice.
        env["CHAT_APP_SECURE"] = "1"
        env.update(settings)
        self._data_dir = env["CHAT_APP_DATA_DIR"] = tempfile.mkdtemp(prefix="chat-server-data-")
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chat_app.server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log_tail(self) -> str:
        try:
            return Path(self._log.name).read_text(errors="replace")[-4000:]
        except OSError:
            return "(no log)"

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"chat server exited with {self._proc.returncode}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/api/tools", timeout=2) as response:
                    if response.status == 200:
                        json.loads(response.read())
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                pass
            time.sleep(0.05)
        raise RuntimeError(
            f"chat server did not answer GET /api/tools within {SERVER_START_TIMEOUT}s:\n"
            f"{self.log_tail()}"
        )

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._log.close()
        with contextlib.suppress(OSError):
            os.unlink(self._log.name)
        shutil.rmtree(self._data_dir, ignore_errors=True)


@contextlib.contextmanager
def running_server(**settings: str) -> Iterator[str]:
    """Start our server (with `settings` in its environment), wait until `GET /api/tools`
    answers, yield its URL, stop it."""
    server = ChatServer(**settings)
    try:
        try:
            server.wait_ready()
        except RuntimeError as error:
            pytest.fail(str(error), pytrace=False)
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def chat_server() -> Iterator[str]:
    """Base URL of our server, started once per session with no token delay."""
    with running_server() as url:
        yield url


def _run_scenarios(base_url: str, names: tuple[str, ...] = SCENARIOS) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"`node` is not on PATH; install Node 20 and {INSTALL_HINT}", pytrace=False)
    for package in PINNED:
        if not (JS_DIR / "node_modules" / package / "package.json").is_file():
            pytest.fail(
                f"npm package {package} is missing from tests/interop/js/node_modules; "
                f"{INSTALL_HINT}",
                pytrace=False,
            )
    try:
        done = subprocess.run(
            [node, str(SCENARIO_SCRIPT), base_url, *names],
            cwd=JS_DIR,
            capture_output=True,
            text=True,
            timeout=NODE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"chatclient_scenarios.mjs ran over {NODE_TIMEOUT}s: {error}", pytrace=False)
    if done.returncode != 0:
        pytest.fail(
            f"chatclient_scenarios.mjs exited with {done.returncode}:\n{done.stderr[-4000:]}",
            pytrace=False,
        )
    result: dict[str, Any] = json.loads(done.stdout)
    result["stderr"] = done.stderr
    if result["versions"] != PINNED:
        pytest.fail(
            f"installed npm versions {result['versions']} != pinned {PINNED}; {INSTALL_HINT}",
            pytrace=False,
        )
    return result


#: Where a session keeps the node run, so `test_ag_ui_validate.py` reuses it.  (pytest
#: imports this file under its own module name, so module-level state would not be shared.)
RUN_FILE = "chatclient-scenarios.json"


def cached_scenario_run(
    tmp_path_factory: pytest.TempPathFactory, base_url: Callable[[], AbstractContextManager[str]]
) -> dict[str, Any]:
    """This session's node run: read back if it exists, else made against `base_url()`."""
    path = tmp_path_factory.getbasetemp() / RUN_FILE
    if path.is_file():
        cached: dict[str, Any] = json.loads(path.read_text())
        return cached
    with base_url() as url:
        run = _run_scenarios(url)
    path.write_text(json.dumps(run))
    return run


@pytest.fixture(scope="session")
def chatclient_run(chat_server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The node script's output for every scenario (run once per session)."""
    return cached_scenario_run(tmp_path_factory, lambda: contextlib.nullcontext(chat_server))


# -- reading a summary ------------------------------------------------------------------------


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The events of an SSE body (``data:`` lines of each frame)."""
    events: list[dict[str, Any]] = []
    for frame in text.split("\n\n"):
        data = [
            line[5:].removeprefix(" ") for line in frame.split("\n") if line.startswith("data:")
        ]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def scenario(run: dict[str, Any], name: str) -> dict[str, Any]:
    summary: dict[str, Any] = run["scenarios"][name]
    assert summary["error"] is None, f"{name} failed in node: {summary['error']}\n{run['stderr']}"
    return summary


def bodies(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [request["body"] for request in summary["requests"]]


def streams(summary: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [parse_sse(request["stream"]) for request in summary["requests"]]


def interrupt_outcome(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The interrupts of a pause stream (which must end with one interrupt RUN_FINISHED)."""
    last = events[-1]
    assert last["type"] == "RUN_FINISHED", [e["type"] for e in events]
    assert last["outcome"]["type"] == "interrupt", last
    assert sum(1 for e in events if e["type"] == "RUN_FINISHED") == 1
    interrupts: list[dict[str, Any]] = last["outcome"]["interrupts"]
    return interrupts


def kinds(items: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    return [(item["kind"], item["canResolve"]) for item in items]


def assert_finished_cleanly(summary: dict[str, Any], *, expected_requests: int) -> None:
    """Every request answered 200 SSE, the client ends idle with no interrupt or error."""
    assert len(summary["requests"]) == expected_requests, [
        request["body"].get("resume") for request in summary["requests"]
    ]
    for request in summary["requests"]:
        assert request["method"] == "POST"
        assert request["url"].endswith("/api/chat")
        assert request["status"] == 200
        assert request["contentType"].startswith("text/event-stream")
    assert summary["clientError"] is None
    assert summary["status"] == "ready"
    assert summary["final"] == {"interrupts": [], "interruptErrors": [], "resuming": False}
    last = streams(summary)[-1]
    assert last[0]["type"] == "RUN_STARTED"
    assert last[-1]["type"] == "RUN_FINISHED"
    assert last[-1].get("outcome", {"type": "success"})["type"] == "success"


def assert_no_interrupt_errors(summary: dict[str, Any]) -> None:
    """No publication ever carried a root or item interrupt error."""
    for publication in summary["publications"]:
        assert publication["interruptErrors"] == [], publication
        for item in publication["interrupts"]:
            assert item["errors"] == [], item
            assert item["status"] != "error", item


def assert_continuation(
    summary: dict[str, Any], index: int, *, paused: int, resume: list[dict[str, Any]]
) -> None:
    """Request `index` continues the run of request `paused` with exactly `resume`.

    Fresh runId (also in X-Run-Id), same threadId, parentRunId = the paused run (the runId
    its interrupt RUN_FINISHED and every binding name), full history, TanStack's shape.
    """
    sent = bodies(summary)
    body, first = sent[index], sent[0]
    paused_events = streams(summary)[paused]
    paused_run = sent[paused]["runId"]
    assert paused_events[-1]["runId"] == paused_run
    for item in interrupt_outcome(paused_events):
        binding = item["metadata"].get(BINDING_KEY)
        if binding is not None:
            assert binding["interruptedRunId"] == paused_run
    assert body["threadId"] == first["threadId"]
    assert body["runId"] not in {earlier["runId"] for earlier in sent[:index]}
    assert summary["requests"][index]["headers"]["X-Run-Id"] == body["runId"]
    assert body["parentRunId"] == paused_run
    assert body["resume"] == resume
    assert body["tools"] and body["context"] == [] and body["state"] == {}
    # Full history: the paused request's messages (by id and role) come first.  Their
    # content may change: TanStack's approval placeholder tool message becomes the output.
    before = [(m["id"], m["role"]) for m in sent[paused]["messages"]]
    assert [(m["id"], m["role"]) for m in body["messages"]][: len(before)] == before
    # Our continuation opens with RUN_STARTED naming its parent (or is a refusal).
    events = streams(summary)[index]
    if events[0]["type"] == "RUN_STARTED":
        assert events[0]["runId"] == body["runId"]
        assert events[0]["threadId"] == body["threadId"]
        assert events[0]["parentRunId"] == paused_run


def first_request_is_plain(summary: dict[str, Any], phrase: str) -> None:
    body = bodies(summary)[0]
    assert "resume" not in body and "parentRunId" not in body
    assert body["messages"][-1]["role"] == "user"
    assert body["messages"][-1]["content"] == phrase
    assert summary["requests"][0]["headers"]["X-Run-Id"] == body["runId"]


def approval_id(item: dict[str, Any]) -> str:
    return f"approval_{item['toolCallId']}"


# -- the session's prerequisites ------------------------------------------------------------------


def test_every_scenario_ran(chatclient_run: dict[str, Any]) -> None:
    assert sorted(chatclient_run["scenarios"]) == sorted(SCENARIOS)
    assert chatclient_run["tools"] == [
        "transfer",
        "delete_project",
        "send_email",
        "pay_invoice",
        "deploy",
        "ship_order",
        "get_local_time",
        "get_location",
        "refund",
        "rotate_keys",
    ]
    for name in SCENARIOS:
        scenario(chatclient_run, name)


# -- approvals ----------------------------------------------------------------------------------


def test_transfer_approve(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "transfer_approve")
    first_request_is_plain(summary, "transfer 25 to Ada")
    [pause] = summary["pauses"]
    [item] = pause["interrupts"]
    assert kinds([item]) == [("tool-approval", True)]
    assert item["status"] == "pending" and item["hasResolve"] and item["hasCancel"]
    assert item["toolName"] == "transfer"
    assert item["originalArgs"] == {"recipient": "Ada", "amount": 25}
    assert item["id"] == approval_id(item)
    assert_continuation(summary, 1, paused=0, resume=[resolved(item["id"], {"approved": True})])
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    assert "Sent 25 to Ada. Receipt id: rcpt-" in summary["assistantText"]


def test_transfer_reject_with_reason(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "transfer_reject")
    [pause] = summary["pauses"]
    [item] = pause["interrupts"]
    assert kinds([item]) == [("tool-approval", True)]
    # The client refuses bulk `false` by itself: the reject branch needs a payload.
    refused = summary["observations"]["afterBulkFalse"]
    assert refused["requestCount"] == 1
    assert [(e["code"], e["interruptIds"]) for e in refused["interruptErrors"]] == [
        ("unsupported-bulk-operation", [item["id"]])
    ]
    assert [i["status"] for i in refused["interrupts"]] == ["pending"]
    assert_continuation(
        summary,
        1,
        paused=0,
        resume=[resolved(item["id"], {"approved": False, "payload": {"reason": "Wrong account"}})],
    )
    assert_finished_cleanly(summary, expected_requests=2)
    assert "Reason: Wrong account" in summary["assistantText"]
    result = next(e for e in streams(summary)[1] if e["type"] == "TOOL_CALL_RESULT")
    assert json.loads(result["content"]) == {"reason": "Wrong account"}
    assert result["metadata"] == {"tanstack": {"state": "output-error"}}


def test_delete_cancel(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "delete_cancel")
    first_request_is_plain(summary, "delete project apollo")
    [pause] = summary["pauses"]
    [item] = pause["interrupts"]
    assert kinds([item]) == [("tool-approval", True)]
    assert item["toolName"] == "delete_project"
    # A cancel carries no payload key at all.
    assert_continuation(
        summary, 1, paused=0, resume=[{"interruptId": item["id"], "status": "cancelled"}]
    )
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    assert "Cancelled: delete project did not run." in summary["assistantText"]
    assert "is deleted" not in summary["assistantText"]


def test_delete_reject_with_bulk_false(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "delete_reject_bulk")
    [item] = summary["pauses"][0]["interrupts"]
    assert kinds([item]) == [("tool-approval", True)]
    assert_continuation(summary, 1, paused=0, resume=[resolved(item["id"], {"approved": False})])
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    assert "delete project was not run" in summary["assistantText"]


def test_email_approve_with_edited_args(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "email_edit")
    [item] = summary["pauses"][0]["interrupts"]
    assert kinds([item]) == [("tool-approval", True)]
    assert item["toolName"] == "send_email"
    assert item["originalArgs"]["subject"] == "Launch"
    assert_continuation(
        summary,
        1,
        paused=0,
        resume=[resolved(item["id"], {"approved": True, "editedArgs": EDITED_EMAIL})],
    )
    # The history keeps the original arguments; the edit travels only in `resume`.
    assistant = next(m for m in bodies(summary)[1]["messages"] if m["role"] == "assistant")
    assert json.loads(assistant["toolCalls"][0]["function"]["arguments"])["subject"] == "Launch"
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    assert 'Email "Launch day" sent to ada@example.com' in summary["assistantText"]


def test_email_refused_continuation_then_fixed(chatclient_run: dict[str, Any]) -> None:
    """Edited args that break the raw input schema: one RUN_ERROR the client correlates."""
    summary = scenario(chatclient_run, "email_refused_then_fixed")
    first, after_refusal = summary["pauses"]
    [item] = first["interrupts"]
    bad_edit = {**EDITED_EMAIL, "subject": ""}
    assert_continuation(
        summary,
        1,
        paused=0,
        resume=[resolved(item["id"], {"approved": True, "editedArgs": bad_edit})],
    )
    refused_run = bodies(summary)[1]["runId"]
    started, error = streams(summary)[1]
    assert started["type"] == "RUN_STARTED" and started["runId"] == refused_run
    assert error["type"] == "RUN_ERROR" and error["code"] == "invalid-edited-args"
    tanstack = error["metadata"]["tanstack"]
    assert tanstack["runId"] == refused_run
    assert tanstack["threadId"] == bodies(summary)[0]["threadId"]
    # The client put our item error on the item and our batch error at the root, with no
    # "did not match the active batch" protocol error: the correlation is right.
    [errored] = after_refusal["interrupts"]
    assert errored["id"] == item["id"] and errored["status"] == "error"
    assert errored["canResolve"] is True
    assert [(e["code"], e["path"]) for e in errored["errors"]] == [
        ("invalid-edited-args", ["editedArgs", "subject"])
    ]
    assert [(e["code"], e["interruptIds"]) for e in after_refusal["interruptErrors"]] == [
        ("item-validation-failed", [item["id"]])
    ]
    assert "edited arguments are invalid" in summary["observations"]["afterRefusal"]["clientError"]
    # Answering again continues the SAME paused run, with a fresh runId.
    assert_continuation(
        summary,
        2,
        paused=0,
        resume=[resolved(item["id"], {"approved": True, "editedArgs": EDITED_EMAIL})],
    )
    assert_finished_cleanly(summary, expected_requests=3)
    assert 'Email "Launch day" sent to ada@example.com' in summary["assistantText"]


# -- batches ----------------------------------------------------------------------------------


def _invoice_items(summary: dict[str, Any]) -> list[dict[str, Any]]:
    [pause] = summary["pauses"]
    items: list[dict[str, Any]] = pause["interrupts"]
    assert kinds(items) == [("tool-approval", True)] * 3
    assert [item["toolName"] for item in items] == ["pay_invoice"] * 3
    assert [item["originalArgs"]["invoice"] for item in items] == INVOICES
    return items


def _approvals(items: list[dict[str, Any]], decisions: list[bool]) -> list[dict[str, Any]]:
    entries = [
        resolved(item["id"], {"approved": approved})
        for item, approved in zip(items, decisions, strict=True)
    ]
    # The client sends the batch in locale order of the ids (sealed ids are random).
    return sorted(entries, key=lambda entry: collation_key(entry["interruptId"]))


def test_invoices_bulk_true(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "invoices_bulk")
    items = _invoice_items(summary)
    assert_continuation(summary, 1, paused=0, resume=_approvals(items, [True, True, True]))
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    text = summary["assistantText"]
    assert text.count("Paid INV-") == 3
    for invoice in INVOICES:
        assert f"Paid {invoice}" in text


def test_invoices_item_by_item(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "invoices_each")
    items = _invoice_items(summary)
    steps = summary["observations"]["steps"]
    # Nothing is sent until the third item is staged, then exactly one continuation.
    assert [(s["requestsBefore"], s["requestsAfter"]) for s in steps[:2]] == [(1, 1), (1, 1)]
    assert steps[2]["requestsBefore"] == 1
    assert steps[0]["statuses"] == ["staged", "pending", "pending"]
    assert steps[1]["statuses"] == ["staged", "staged", "pending"]
    assert_continuation(summary, 1, paused=0, resume=_approvals(items, [True, True, True]))
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    assert summary["assistantText"].count("Paid INV-") == 3


def test_invoices_transaction(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "invoices_fn")
    items = _invoice_items(summary)
    assert_continuation(summary, 1, paused=0, resume=_approvals(items, [True, False, True]))
    # TanStack's client also writes a placeholder tool message per decision into the
    # history; the server must replace them with the real results (one result per call).
    placeholders = [
        (m["toolCallId"], json.loads(m["content"]))
        for m in bodies(summary)[1]["messages"]
        if m["role"] == "tool"
    ]
    approved = {"approved": True, "pendingExecution": True, "message": "User approved this action"}
    denied = {"approved": False, "message": "User denied this action"}
    assert placeholders == [
        (item["toolCallId"], approved if decision else denied)
        for item, decision in zip(items, [True, False, True], strict=True)
    ]
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    text = summary["assistantText"]
    assert "Paid INV-1001" in text and "Paid INV-1003" in text
    assert "Paid INV-1002" not in text
    assert "pay invoice was not run" in text


# -- generic, unbound and client tools -----------------------------------------------------------


def test_ship_order_generic_form(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "ship_order")
    first_request_is_plain(summary, "ship order 42")
    [item] = summary["pauses"][0]["interrupts"]
    assert kinds([item]) == [("generic", True)]
    assert item["bindingKind"] == "generic" and item["hasResolve"]
    [descriptor] = interrupt_outcome(streams(summary)[0])
    binding = descriptor["metadata"][BINDING_KEY]
    # The sealed server's key is `order-42.<seal>` and every interrupt expires; the client
    # must echo both exactly as the pause carried them.
    assert binding["key"].startswith("order-42.")
    assert descriptor["expiresAt"] == binding["expiresAt"]
    continuation = {
        "batchIndex": 0,
        "definitionId": "shipping-speed",
        "expiresAt": descriptor["expiresAt"],
        "key": binding["key"],
        "message": "How should order 42 ship?",
        "reason": "shipping_speed",
        "responseSchemaHash": binding["responseSchemaHash"],
        "v": 1,
    }
    assert_continuation(
        summary,
        1,
        paused=0,
        resume=[
            {
                "interruptId": item["id"],
                "metadata": {CONTINUATION_KEY: continuation},
                "payload": {"giftWrap": True, "speed": "express"},
                "status": "resolved",
            }
        ],
    )
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    assert "Order 42 ships express, gift-wrapped." in summary["assistantText"]


def test_deploy_unbound_item_does_not_block(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "deploy")
    approval, unbound = summary["pauses"][0]["interrupts"]
    assert kinds([approval, unbound]) == [("tool-approval", True), ("unbound", False)]
    assert approval["toolName"] == "deploy"
    assert unbound["id"].startswith("workflow-freeze-")
    assert unbound["reason"] == "workflow:change_freeze"
    assert unbound["bindingKind"] is None
    assert not unbound["hasResolve"] and not unbound["hasCancel"]
    # Only the bound approval is answered; resolving it alone submits the batch.
    assert_continuation(summary, 1, paused=0, resume=[resolved(approval["id"], {"approved": True})])
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    assert "Deployed checkout 2.4.1" in summary["assistantText"]


def test_local_time_client_tool_runs_by_itself(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "local_time")
    # No decision is ever shown.
    assert summary["pauses"][0]["interrupts"] == []
    assert all(publication["interrupts"] == [] for publication in summary["publications"])
    [descriptor] = interrupt_outcome(streams(summary)[0])
    assert descriptor["metadata"]["kind"] == "client_tool"
    call_id = descriptor["toolCallId"]
    assert summary["clientToolRuns"] == [
        {"tool": "get_local_time", "toolCallId": call_id, "input": {}}
    ]
    assert_continuation(
        summary, 1, paused=0, resume=[resolved(f"client_tool_{call_id}", LOCAL_TIME)]
    )
    # The client also writes the output into the history it sends.
    tool_messages = [m for m in bodies(summary)[1]["messages"] if m["role"] == "tool"]
    assert [(m["toolCallId"], json.loads(m["content"])) for m in tool_messages] == [
        (call_id, LOCAL_TIME)
    ]
    assert_finished_cleanly(summary, expected_requests=2)
    assert_no_interrupt_errors(summary)
    assert "It's 09:41 where you are (Europe/Paris)." in summary["assistantText"]


def test_location_approval_then_client_execution(chatclient_run: dict[str, Any]) -> None:
    summary = scenario(chatclient_run, "location")
    [item] = summary["pauses"][0]["interrupts"]
    assert kinds([item]) == [("tool-approval", True)]
    assert item["toolName"] == "get_location"
    call_id = item["toolCallId"]
    assert_continuation(summary, 1, paused=0, resume=[resolved(item["id"], {"approved": True})])
    # The approved continuation pauses again for the client execution (hidden from people)…
    [execution] = interrupt_outcome(streams(summary)[1])
    assert execution["id"] == f"client_tool_{call_id}"
    assert execution["metadata"]["kind"] == "client_tool"
    for publication in summary["publications"]:
        assert [i["id"] for i in publication["interrupts"]] in ([], [item["id"]])
    assert summary["clientToolRuns"] == [
        {"tool": "get_location", "toolCallId": call_id, "input": {}}
    ]
    # …and the third request continues the SECOND run with the output.
    assert_continuation(summary, 2, paused=1, resume=[resolved(f"client_tool_{call_id}", LOCATION)])
    assert_finished_cleanly(summary, expected_requests=3)
    assert_no_interrupt_errors(summary)
    assert "Got it: you're at Paris, France (±12 m)." in summary["assistantText"]


def test_pause_streams_end_with_one_interrupt_after_snapshot(
    chatclient_run: dict[str, Any],
) -> None:
    """Every pause the client saw: MESSAGES_SNAPSHOT, then the one interrupt RUN_FINISHED."""
    for name in SCENARIOS:
        summary = scenario(chatclient_run, name)
        for events in streams(summary):
            last = events[-1]
            if (
                last["type"] == "RUN_FINISHED"
                and last.get("outcome", {}).get("type") == "interrupt"
            ):
                assert events[-2]["type"] == "MESSAGES_SNAPSHOT", name
                assert [e["type"] for e in events].count("RUN_FINISHED") == 1, name


def test_heartbeats_in_a_quiet_stream_change_nothing_for_tanstacks_client(
    chatclient_run: dict[str, Any],
) -> None:
    """A server that sends an SSE comment whenever its stream is quiet for 5 ms (words paced
    at 25 ms, so between nearly every two): TanStack's client reads the same events, pauses
    and answers as from the server that sends none."""
    names = ("transfer_approve", "ship_order")
    paced = {"CHAT_APP_HEARTBEAT_SECONDS": "0.005", "CHAT_APP_DEMO_TOKEN_DELAY_MS": "25"}
    with running_server(**paced) as url:
        run = _run_scenarios(url, names)
    for name in names:
        beating, plain = scenario(run, name), scenario(chatclient_run, name)
        raw = [request["stream"] for request in beating["requests"]]
        assert sum(text.count(": keep-alive\n\n") for text in raw) > 10, name
        assert [[e["type"] for e in events] for events in streams(beating)] == [
            [e["type"] for e in events] for events in streams(plain)
        ]
        assert all(not request.get("schemaIssues") for request in beating["requests"])
        assert shape(beating["pauses"]) == shape(plain["pauses"]), name
        assert_finished_cleanly(beating, expected_requests=len(plain["requests"]))


#: What differs between two runs of one scenario: the ids each run makes.
_RUN_OWN = frozenset({"id", "interruptedRunId", "toolCallId"})


def shape(value: Any) -> Any:
    """`value` without the ids a run makes for itself."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items() if key not in _RUN_OWN}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return value

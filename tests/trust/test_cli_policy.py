"""`python -m chat_app policy check`: a policy read as a start reads it, said in words, with
the start's warnings and where a sample call falls, before anyone restarts the app on it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from chat_app.agent import Agent, ScriptedModel, tool
from chat_app.cli import main
from chat_app.demo import POLICY_PATH
from chat_app.demo.script import demo_script
from chat_app.server import create_app
from chat_app.trust import Policy
from chat_app.trust.policy_summary import describe_rule, judge_call, who_decides
from tests.live_server import free_port, serve_asgi
from tests.trust.test_cli import ROOT, Result

#: A policy that the demo agent takes but a start warns of: a quorum its own people cannot
#: reach, a misspelt `editable`, and (with interrupts living an hour, `HOUR`) a reminder due
#: after its requests expire.
WARNED = """
[roles]
ops = ["sam@example.com", "olive@example.com"]

[[rules]]
name = "key-rotation"
tool = "rotate_keys"
approvers = ["role:ops"]
quorum = 2
not_requester = true

[[rules]]
name = "transfers"
tool = "transfer"
approvers = ["ada@example.com"]
editable = ["amout"]
remind_after = "2h"

[[rules]]
name = "shipping"
interrupt = "shipping-speed"
when = { properties = { order = { const = "42" } } }
approvers = ["role:ops"]
"""


HOUR = {"CHAT_APP_INTERRUPT_TTL_SECONDS": "3600"}


class Check(Protocol):
    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Result: ...


@pytest.fixture
def check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Check:
    """`main(["policy", "check", ARGS…])` in this process, with no `CHAT_APP_` setting but
    those given (`env`, for that call alone) and a data folder nobody may create (the check
    opens no database)."""
    never = str(tmp_path / "never" / "made")

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        for key in [key for key in os.environ if key.startswith("CHAT_APP_")]:
            monkeypatch.delenv(key)
        for key, value in {"CHAT_APP_DATA_DIR": never, **(env or {})}.items():
            monkeypatch.setenv(key, value)
        capsys.readouterr()
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
        status = main(["policy", "check", *args])
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return run


@pytest.fixture
def warned(tmp_path: Path) -> Path:
    path = tmp_path / "warned.toml"
    path.write_text(WARNED)
    return path


def test_the_demo_policy_in_words(check: Check, tmp_path: Path) -> None:
    done = check()
    assert (done.status, done.err) == (0, "")
    assert done.out.startswith(
        "Read as the app (make run) starts: sign-in demo (CHAT_APP_AUTH unset: its default); "
        "interrupts expire after 1 day (CHAT_APP_INTERRUPT_TTL_SECONDS).\n\n"
        f"{POLICY_PATH}: 3 rules. The first whose tool"
    )
    assert "  finance  ada@example.com\n" in done.out
    assert "  ops      olive@example.com, sam@example.com, theo@example.com\n" in done.out
    assert (
        "  2. large-transfers: transfer, when "
        '{"properties": {"amount": {"exclusiveMinimum": 1000}}}\n'
        "     Needs approval from role finance, not the requester. An approver may change "
        "only amount.\n"
        "     Expires after 1 day (the interrupt TTL). Reminds the approvers after 30 min. "
        "After 2 h, role admin may decide too.\n"
    ) in done.out
    assert "  1. small-refunds: refund, when" in done.out
    assert "     Approved by the policy: nobody is asked.\n" in done.out
    assert (
        "     Needs 2 approvals from role ops, not the requester; any rejection decides.\n"
    ) in done.out
    # What no rule covers is said, since whoever asked decides it.
    assert (
        "No rule names delete_project, deploy, get_location, pay_invoice, send_email: "
        "whoever asked approves them.\n"
    ) in done.out
    assert "No rule names the questions release-plan, shipping-speed" in done.out
    assert done.out.endswith("\nNo warnings.\n")
    assert not (tmp_path / "never").exists()


def test_the_ttl_in_force_is_the_one_said(check: Check) -> None:
    done = check(env={"CHAT_APP_INTERRUPT_TTL_SECONDS": "5400"})
    assert "interrupts expire after 1 h 30 min (CHAT_APP_INTERRUPT_TTL_SECONDS)." in done.out
    assert "Expires after 1 h 30 min (the interrupt TTL)." in done.out
    # The demo's escalation after 2 h can no longer come: the start's own warning.
    assert "1 warning:\n" in done.out
    assert "escalate_after is 2 h, but its decisions expire after 1 h 30 min" in done.out
    assert done.status == 0
    assert check("--strict", env={"CHAT_APP_INTERRUPT_TTL_SECONDS": "5400"}).status == 1
    assert check("--strict").status == 0
    off = check(env={"CHAT_APP_SECURE": "0"})
    assert off.out.startswith(
        "Read as the app (make run) starts: sign-in demo (CHAT_APP_AUTH unset: its default); "
        "CHAT_APP_SECURE=0: nothing is sealed, so the engine cannot tell who asked a call and "
        "not_requester keeps nobody out.\n"
    )
    assert "Expires after" not in off.out and off.out.endswith("No warnings.\n")


def test_sample_calls_fall_under_the_rule_the_engine_would_pick(check: Check) -> None:
    done = check(
        "--call", "transfer", '{"recipient": "Bob", "amount": 5300}',
        "--call", "transfer", '{"recipient": "Bob", "amount": 50}',
        "--call", "refund", '{"order": "42", "amount": 20}',
        "--call", "ship_order", '{"order": "42", "speed": "express", "giftWrap": false}',
    )  # fmt: skip
    assert done.status == 0, done.err
    assert (
        '\n--call transfer {"recipient": "Bob", "amount": 5300}\n'
        "  Rule large-transfers. Needs approval from role finance, not the requester. "
        "An approver may change only amount.\n"
    ) in done.out
    assert (
        '\n--call transfer {"recipient": "Bob", "amount": 50}\n'
        "  No rule matches: whoever asked decides.\n"
    ) in done.out
    assert "  Rule small-refunds. Approved by the policy: nobody is asked.\n" in done.out
    assert "  ship_order runs without asking anyone: no rule applies.\n" in done.out


def test_a_question_is_matched_on_its_display_payload(check: Check, warned: Path) -> None:
    done = check(
        str(warned),
        "--call", "shipping-speed", '{"order": "42"}',
        "--call", "shipping-speed", '{"order": "7"}',
    )  # fmt: skip
    assert "  Rule shipping. Needs an answer from role ops.\n" in done.out
    assert done.out.count("No rule matches: whoever asked decides.") == 1


def test_a_mistyped_call_refuses_the_command_before_anything_is_said(check: Check) -> None:
    unknown = check("--call", "transfr", "{}")
    assert unknown.status == 1 and unknown.out == ""
    assert unknown.err.startswith("python -m chat_app: error: --call transfr: the agent has no ")
    assert "it has: delete_project, deploy," in unknown.err
    not_json = check("--call", "transfer", "{amount: 5}")
    assert not_json.status == 1 and not_json.out == ""
    assert "--call transfer: '{amount: 5}' is not JSON" in not_json.err


def test_the_starts_warnings_are_listed_and_strict_fails_on_them(
    check: Check, warned: Path
) -> None:
    done = check(str(warned), env=HOUR)
    assert done.status == 0
    assert "\n3 warnings:\n" in done.out
    assert "rule 'key-rotation': `quorum` is 2, but of the 2 people" in done.out
    assert "rule 'transfers': editable names amout, which transfer does not take" in done.out
    assert "rule 'transfers': remind_after is 2 h, but its decisions expire after 1 h" in done.out
    assert (
        "     Needs approval from ada@example.com. Whoever asked may approve it themselves if "
        "they are among these (no not_requester). An approver may change only amout.\n"
    ) in done.out
    assert (
        "     Expires after 1 h (the interrupt TTL). Reminds the approvers after 2 h.\n"
    ) in done.out
    strict = check(str(warned), "--strict", env=HOUR)
    assert (strict.status, strict.out) == (1, done.out)
    # Without sign-in, a rule that names approvers refuses every answer: a fourth.
    none = check(str(warned), env={**HOUR, "CHAT_APP_AUTH": "none"})
    assert "\n4 warnings:\n" in none.out and "sign-in is off (CHAT_APP_AUTH=none)" in none.out


def test_a_policy_a_start_would_refuse_exits_1_with_the_starts_words(
    check: Check, tmp_path: Path
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[rules]]\nname = "x"\ntool = "transfer"\napprover = ["role:ops"]\n')
    done = check(str(path))
    assert (done.status, done.out) == (1, "")
    assert done.err.startswith(f"python -m chat_app: error: {path}, rule 'x': unknown key ")
    assert "(did you mean `approvers`?)" in done.err
    # Read, but naming a tool the agent lacks: the agent's own refusal at start.
    path.write_text('[[rules]]\nname = "x"\ntool = "wire"\napprovers = ["ada@example.com"]\n')
    done = check(str(path))
    assert done.status == 1
    assert "names tool 'wire', which this agent does not have" in done.err
    missing = check(str(tmp_path / "missing.toml"))
    assert missing.status == 1 and "cannot be read" in missing.err


def test_the_policy_in_force_is_the_one_the_app_would_read(check: Check, warned: Path) -> None:
    done = check(env={"CHAT_APP_POLICY": str(warned)})
    assert f"\n\n{warned}: 3 rules. " in done.out
    off = check("--call", "transfer", '{"recipient": "Bob", "amount": 5300}',
                env={"CHAT_APP_POLICY": "none"})  # fmt: skip
    assert off.status == 0
    assert (
        "\nNo policy is in force (CHAT_APP_POLICY=none): whoever asked decides every call.\n"
        '\n--call transfer {"recipient": "Bob", "amount": 5300}\n'
        "  No rule matches: whoever asked decides.\n\nNo warnings.\n"
    ) in off.out
    # A mistyped call is refused with no policy too, and nothing is said before it.
    typo = check("--call", "transfr", "{}", env={"CHAT_APP_POLICY": "none"})
    assert (typo.status, typo.out) == (1, "") and "no tool or question transfr" in typo.err
    bad = check(env={"CHAT_APP_INTERRUPT_TTL_SECONDS": "soon"})
    assert bad.status == 1 and "CHAT_APP_INTERRUPT_TTL_SECONDS='soon'" in bad.err


#: A policy for the remote agent (`remote_agent`): a tool it has, with a misspelt `editable`; a
#: tool of its that asks nobody; a tool it lacks; a tool whose manifest entry cannot be read;
#: a question (its questions are not listed).
REMOTE_POLICY = """
[[rules]]
name = "wires"
tool = "wire"
when = { properties = { amount = { exclusiveMinimum = 1000 } } }
approvers = ["ada@example.com"]
editable = ["amout"]

[[rules]]
name = "lookups"
tool = "lookup"
approvers = ["ada@example.com"]

[[rules]]
name = "payouts"
tool = "payout"
approvers = ["ada@example.com"]

[[rules]]
name = "closures"
tool = "close_all"
approvers = ["ada@example.com"]

[[rules]]
name = "audits"
interrupt = "audit-scope"
approvers = ["ada@example.com"]
"""

#: A manifest entry the app cannot use (its schema is no JSON Schema): left out, named.
UNREADABLE = {"name": "close_all", "inputSchema": {"type": "nope"}, "needsApproval": True}


class Wire(BaseModel):
    iban: str
    amount: float


@pytest.fixture(scope="module")
def remote_agent() -> Iterator[str]:
    """Another agent's server, with tools the demo lacks (and one its manifest describes so
    that the app leaves it out): its chat route's URL."""
    tools = [
        tool("wire", description="Send money abroad", input=Wire, needs_approval=True,
             execute=lambda args: "sent"),
        tool("lookup", description="Read an account", execute=lambda args: "found"),
        tool("close_account", description="Close an account", needs_approval=True,
             execute=lambda args: "closed"),
    ]  # fmt: skip
    agent = Agent(model=ScriptedModel(demo_script), tools=tools)

    async def manifest(request: Request) -> JSONResponse:
        return JSONResponse({"tools": [*agent.tool_manifest(), UNREADABLE]})

    app = Starlette(routes=[Route("/api/tools", manifest), Mount("/", create_app(agent))])
    with serve_asgi(app, name="the remote agent") as base:
        yield base + "/api/chat"


#: What the check says of what it finds in a remote agent's manifest alone.
FROM_MANIFEST = " (from the agent's manifest: the app's start does not check this)"


def test_with_a_remote_agent_the_rules_are_read_against_its_manifest(
    check: Check, tmp_path: Path, remote_agent: str
) -> None:
    remote = {"CHAT_APP_AGENT_URL": remote_agent}
    path = tmp_path / "remote.toml"
    path.write_text(REMOTE_POLICY)
    calls = (
        "--call", "wire", '{"iban": "DE89", "amount": 5000}',
        "--call", "wire", '{"iban": "DE89", "amount": "lots"}',
        "--call", "lookup", "{}",
        "--call", "close_all", "{}",
        "--call", "audit-scope", '{"scope": "all"}',
    )  # fmt: skip
    done = check(str(path), *calls, env=remote)
    assert done.status == 0, done.err
    manifest = remote_agent.removesuffix("/chat") + "/tools"
    assert (
        f"The agent is at {remote_agent}: its policy decides its calls; this one routes them to "
        f"people at the desk.\nIts tools, from its manifest at {manifest}: close_account, lookup, "
        f"wire.\n  Tool entry 4 (close_all) in the tool manifest at {manifest} was left out: its "
        "inputSchema is not a valid JSON Schema.\n"
    ) in done.out
    assert '--call wire {"iban": "DE89", "amount": 5000}\n  Rule wires. Needs approval from ' in (
        done.out
    )
    assert (
        "  Refused before anyone is asked (its schema, in the manifest): Tool wire arguments are "
        "invalid at amount: 'lots' is not of type 'number'\n"
    ) in done.out
    assert "\n--call lookup {}\n  lookup runs without asking anyone: no rule applies.\n" in done.out
    # The tool the app could not read is the agent's still: judged by its name.
    assert "\n--call close_all {}\n  Rule closures. Needs approval from ada@example.com." in (
        done.out
    )
    assert "  Rule audits. Needs an answer from ada@example.com.\n" in done.out
    assert "\nNo rule names close_account: whoever asked approves them.\n" in done.out
    # A start takes it (the app's own agent serves no call): what the manifest shows is a
    # warning of the check's own.
    warnings = done.out.split("\n3 warnings:\n", 1)[1]
    assert warnings == (
        f"  {path}, rule 'lookups': names tool 'lookup', which runs without asking anyone; give "
        f"the tool needs_approval, or remove the rule{FROM_MANIFEST}\n"
        f"  {path}, rule 'payouts': names tool 'payout', which the agent at {remote_agent} does "
        f"not have; its tools that need approval are: close_account, wire{FROM_MANIFEST}\n"
        f"  {path}, rule 'wires': editable names amout, which wire does not take (its "
        f"arguments: iban, amount); check the spelling.{FROM_MANIFEST}\n"
    )
    assert check(str(path), "--strict", env=remote).status == 1
    # A call the manifest does not list refuses the command, naming what it does list.
    typo = check(str(path), "--call", "wir", "{}", env=remote)
    assert typo.status == 1 and typo.out == ""
    assert typo.err.endswith(
        "--call wir: the agent's manifest lists no tool wir; it lists: close_account, close_all, "
        "lookup, wire (and a question is one a rule names).\n"
    )
    # With no policy in force the manifest is read all the same, and calls are judged.
    none = check("--call", "wire", '{"iban": "DE89", "amount": 5}',
                 env={**remote, "CHAT_APP_POLICY": "none"})  # fmt: skip
    assert none.status == 0, none.err
    assert "No policy is in force (CHAT_APP_POLICY=none)" in none.out
    assert "\n  No rule matches: whoever asked decides.\n" in none.out
    # Without the remote agent, the app's own agent lacks the tool: the start would stop.
    refused = check(str(path))
    assert refused.status == 1
    assert "names tool 'wire', which this agent does not have" in refused.err


def test_a_remote_agents_manifest_that_cannot_be_read_is_a_warning(
    check: Check, tmp_path: Path
) -> None:
    remote = {"CHAT_APP_AGENT_URL": f"http://127.0.0.1:{free_port()}/api/chat?key=s3cret"}
    path = tmp_path / "remote.toml"
    path.write_text(REMOTE_POLICY)
    done = check(str(path), "--call", "payout", "{}", "--call", "audit-scope", "{}", env=remote)
    assert done.status == 0, done.err
    assert "s3cret" not in done.out  # a key in the agent's address is not shown
    assert "Its tools are not checked here: Could not read the tool manifest at " in done.out
    # The rules are taken as they name tools and questions.
    assert "\n--call payout {}\n  Rule payouts. Needs approval from ada@example.com." in done.out
    assert "  Rule audits. Needs an answer from ada@example.com.\n" in done.out
    assert "No rule names" not in done.out
    assert "\n1 warning:\n  The agent's tools could not be checked: Could not read " in done.out
    # A deploy pipeline cannot take "not checked" for "checked and clean".
    assert check(str(path), "--strict", env=remote).status == 1
    # Elsewhere: CHAT_APP_TOOLS_URL names it.
    moved = check(str(path), env={**remote, "CHAT_APP_TOOLS_URL": "http://127.0.0.1:9/tools"})
    assert moved.status == 0, moved.err
    assert "Could not read the tool manifest at http://127.0.0.1:9/tools" in moved.out


def test_the_standalone_servers_start_is_read_with_its_own_default_sign_in(check: Check) -> None:
    done = check("--server", env={"CHAT_APP_AGENT_URL": "http://agent:9/api/chat"})
    assert done.out.startswith(
        "Read as python -m chat_app.server starts: sign-in none (CHAT_APP_AUTH unset: its "
        "default); interrupts expire after 1 day (CHAT_APP_INTERRUPT_TTL_SECONDS).\n"
        'With sign-in off everyone is the same visitor: "whoever asked" is anyone who can open '
        "the app.\n\n"
    )
    assert "The agent is at" not in done.out  # the server has no remote agent
    assert "\n1 warning:\n" in done.out and "sign-in is off (CHAT_APP_AUTH=none)" in done.out
    assert check("--server", "--strict").status == 1
    signed = check("--server", env={"CHAT_APP_AUTH": "password"})
    assert "sign-in password (CHAT_APP_AUTH); " in signed.out
    assert signed.out.endswith("No warnings.\n")


def test_arguments_the_tool_refuses_are_refused_before_any_rule(check: Check) -> None:
    done = check(
        "--call", "transfer", '{"recipient": "Bob", "amount": "lots"}',
        "--call", "transfer", "[1]",
    )  # fmt: skip
    assert done.status == 0, done.err
    assert (
        "  Refused before anyone is asked, and the model is told: Tool transfer arguments are "
        "invalid at amount: 'lots' is not of type 'number'\n"
    ) in done.out
    assert "Tool transfer arguments are not a JSON object." in done.out
    assert "Rule large-transfers" not in done.out.split("--call", 1)[1]


def test_the_command_as_a_person_runs_it(tmp_path: Path, warned: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CHAT_APP_")}
    done = subprocess.run(
        [sys.executable, "-m", "chat_app", "policy", "check", str(warned), "--strict"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**env, **HOUR, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 1 and done.stderr == ""
    assert "3 warnings:" in done.stdout
    helped = subprocess.run(
        [sys.executable, "-m", "chat_app", "policy", "check", "--help"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**env, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert helped.returncode == 0 and "--call TOOL ARGS" in helped.stdout


def test_rules_of_every_shape_in_words() -> None:
    policy = Policy.parse(
        """
known_roles = ["ops"]

[[rules]]
name = "no-deploys"
tool = "deploy"
decide = "reject"
reason = "Deploys are frozen this week."

[[rules]]
name = "mail"
tool = "send_email"
approvers = ["sam@example.com", "role:ops"]
not_requester = true
editable = []

[[rules]]
name = "plans"
interrupt = "release-plan"
approvers = ["role:ops"]
expires_after = "3h"
escalate_after = "1h30m"
escalate_to = ["boss@example.com", "role:ops"]
""",
        "p.toml",
    )
    frozen, mail, plans = policy.rules
    assert describe_rule(policy, plans, ttl_seconds=60) == [
        "plans: question release-plan",
        "Needs an answer from role ops.",  # a question's asker may well answer it
        # The approvers already decide: the escalation names only whom it adds.
        "Expires after 3 h. After 1 h 30 min, boss@example.com may decide too.",
    ]
    assert describe_rule(policy, frozen, ttl_seconds=60) == [
        "no-deploys: deploy",
        "Rejected by the policy: nobody is asked. The model reads: Deploys are frozen this week.",
    ]
    assert who_decides(policy, mail) == (
        "Needs approval from sam@example.com or role ops, not the requester. "
        "An approver may change nothing."
    )
    assert describe_rule(policy, mail, ttl_seconds=None)[2:] == []
    verdict = judge_call(policy, "deploy", {})
    assert verdict.rule is frozen and verdict.words.startswith("Rule no-deploys. Rejected")

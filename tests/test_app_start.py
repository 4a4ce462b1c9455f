"""The Reflex app's start (`chat_app/chat_app.py`, read at import) against a policy naming
tools: its own agent's, or, with `CHAT_APP_AGENT_URL`, the remote agent's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A policy for an agent of one's own, whose tools the demo agent does not have.
WIRE_POLICY = '[[rules]]\nname = "wires"\ntool = "wire"\napprovers = ["ada@example.com"]\n'


def _start(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """Imports the app's module as Reflex does at start, with `settings` and no other
    `CHAT_APP_` variable of this shell."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CHAT_APP_")}
    env.update(CHAT_APP_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT), **settings)
    return subprocess.run(
        [sys.executable, "-c", "import chat_app.chat_app"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip


def test_a_policy_naming_a_tool_the_apps_agent_lacks_stops_the_start(tmp_path: Path) -> None:
    policy = tmp_path / "wires.toml"
    policy.write_text(WIRE_POLICY)
    done = _start(tmp_path, CHAT_APP_POLICY=str(policy))
    assert done.returncode == 1
    assert "rule 'wires': names tool 'wire', which this agent does not have" in done.stderr


def test_with_a_remote_agent_the_policy_names_that_agents_tools(tmp_path: Path) -> None:
    """The remote agent runs each call under its own policy, of its own tools; the app's
    (often the same file) routes its requests to people, so it is not checked against the
    demo agent's tools, which the app then does not run."""
    policy = tmp_path / "wires.toml"
    policy.write_text(WIRE_POLICY)
    done = _start(
        tmp_path, CHAT_APP_POLICY=str(policy), CHAT_APP_AGENT_URL="http://127.0.0.1:9/api/chat"
    )
    assert done.returncode == 0, done.stderr
    assert "does not have" not in done.stderr

"""Choosing the model with `CHAT_APP_MODEL`, and running without the optional extras."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chat_app.agent import ScriptedModel
from chat_app.agent.models import model_from_env, model_from_spec
from chat_app.agent.models.anthropic import AnthropicModel
from chat_app.agent.models.openai import OpenAIModel
from chat_app.demo import INSTRUCTIONS, build_demo_agent, demo_model

ROOT = Path(__file__).resolve().parents[3]


def test_nothing_set_means_no_model_and_the_demo_keeps_its_scripted_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CHAT_APP_MODEL", raising=False)
    assert model_from_env({}) is None
    assert model_from_env({"CHAT_APP_MODEL": "  "}) is None
    model = demo_model()
    assert isinstance(model, ScriptedModel) and model.name == "demo-scripted"


def test_openai_uses_the_usual_key_and_base_url_variables() -> None:
    env = {"OPENAI_API_KEY": "sk-live", "OPENAI_BASE_URL": "https://example.test/v1"}
    model = model_from_spec("openai:gpt-4o-mini", env=env)
    assert isinstance(model, OpenAIModel)
    assert (model.name, model.provider_name) == ("gpt-4o-mini", "OpenAI")
    assert model.client.api_key == "sk-live"
    assert str(model.client.base_url) == "https://example.test/v1/"


def test_openai_without_a_base_url_talks_to_openai() -> None:
    model = model_from_spec("openai:gpt-4o-mini", env={"OPENAI_API_KEY": "sk-live"})
    assert isinstance(model, OpenAIModel)
    assert str(model.client.base_url) == "https://api.openai.com/v1/"


def test_ollama_is_openai_compatible_on_the_local_port() -> None:
    model = model_from_spec("ollama:llama3.1:8b", env={})
    assert isinstance(model, OpenAIModel)
    assert (model.name, model.provider_name) == ("llama3.1:8b", "Ollama")
    assert str(model.client.base_url) == "http://localhost:11434/v1/"
    assert model.timeout == 300  # room for a cold model to load


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("gpu-box", "http://gpu-box:11434/v1/"),
        ("10.0.0.5:9999", "http://10.0.0.5:9999/v1/"),
        ("https://ollama.example.test", "https://ollama.example.test/v1/"),
    ],
)
def test_ollama_follows_ollama_host(host: str, url: str) -> None:
    model = model_from_spec("ollama:llama3.1", env={"OLLAMA_HOST": host})
    assert isinstance(model, OpenAIModel)
    assert str(model.client.base_url) == url


def test_anthropic_uses_the_usual_key_and_base_url_variables() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": "https://proxy.example.test"}
    model = model_from_spec("anthropic:claude-sonnet-4-5", env=env)
    assert isinstance(model, AnthropicModel)
    assert model.name == "claude-sonnet-4-5"
    assert model.client.api_key == "sk-ant"
    assert str(model.client.base_url) == "https://proxy.example.test"


@pytest.mark.parametrize(
    ("spec", "env", "says"),
    [
        ("gpt-4o-mini", {}, "CHAT_APP_MODEL must look like provider:model"),
        ("openai:", {}, "CHAT_APP_MODEL must look like provider:model"),
        ("mistral:large", {}, "unknown provider 'mistral'; use one of openai, anthropic, ollama"),
        ("openai:gpt-4o-mini", {}, "CHAT_APP_MODEL=openai:gpt-4o-mini needs OPENAI_API_KEY."),
        ("anthropic:claude-sonnet-4-6", {}, "needs ANTHROPIC_API_KEY."),
    ],
)
def test_a_bad_choice_fails_at_startup_saying_what_to_fix(
    spec: str, env: dict[str, str], says: str
) -> None:
    with pytest.raises(ValueError) as raised:
        model_from_spec(spec, env=env)
    assert says in str(raised.value)


def test_the_demo_agent_runs_on_the_model_the_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHAT_APP_MODEL", "ollama:llama3.1")
    agent = build_demo_agent()
    assert isinstance(agent.model, OpenAIModel)
    assert agent.model.instructions == INSTRUCTIONS
    assert {"transfer", "pay_invoice"} <= set(agent.tools)


def _without_extras(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where `openai` and `anthropic` cannot be imported."""
    prelude = "import sys\nsys.modules['openai'] = None\nsys.modules['anthropic'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )


def test_the_app_imports_and_runs_the_scripted_demo_without_the_extras() -> None:
    done = _without_extras(
        """
        import asyncio
        from chat_app.demo import build_demo_agent
        from chat_app.server.app import create_app
        from tests.agent.builders import collect, user

        agent = build_demo_agent()
        create_app(agent)
        body = {"threadId": "t", "runId": "r", "messages": [user("transfer 25 to Ada", "u1")]}
        events = asyncio.run(collect(agent, body))
        print(events[-1]["outcome"]["type"])
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupt"


@pytest.mark.parametrize(
    ("spec", "package"),
    [("openai:gpt-4o-mini", "openai"), ("ollama:llama3.1", "openai"),
     ("anthropic:claude-sonnet-4-6", "anthropic")],
)  # fmt: skip
def test_choosing_a_provider_without_its_extra_names_the_file_to_install(
    spec: str, package: str
) -> None:
    done = _without_extras(
        f"""
        from chat_app.agent.models import model_from_spec
        env = {{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}}
        try:
            model_from_spec({spec!r}, env=env)
        except ImportError as error:
            print(error)
        """
    )
    assert done.returncode == 0, done.stderr
    assert f"needs the {package!r} package, an optional extra" in done.stdout
    assert "pip install -r requirements-models.txt" in done.stdout

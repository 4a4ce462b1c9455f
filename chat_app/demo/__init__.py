"""The ops desk demo: an agent whose scripted model plays every scenario offline."""

from __future__ import annotations

import math
import os
from pathlib import Path

from chat_app.agent import Agent, Model, ScriptedModel
from chat_app.agent.models import model_from_env
from chat_app.trust import Ledger, Policy, Sealer

from .interrupts import RELEASE_PLAN, SHIPPING, DemoInterrupts
from .script import HELP, demo_script
from .tools import DEMO_TOOLS

DEFAULT_TOKEN_DELAY_MS = 25.0
_TOKEN_DELAY_ENV = "CHAT_APP_DEMO_TOKEN_DELAY_MS"

#: What a real model is told about the ops desk (the scripted model needs no telling).
INSTRUCTIONS = (
    "You are the ops desk agent. Act through your tools. Tools that move money, delete, send "
    "email or deploy pause for a person to approve, so call them directly when asked instead "
    "of asking for confirmation in text. When a person rejects or cancels a call, the tool "
    "result says why: acknowledge it and do not retry unless asked. Be brief."
)


def demo_model() -> Model:
    """The model `CHAT_APP_MODEL` names (e.g. `openai:gpt-4o-mini`), else the scripted one.

    The scripted model paces tokens by `CHAT_APP_DEMO_TOKEN_DELAY_MS` (0 in tests).

    Raises:
        ValueError: that delay is not a finite number of milliseconds, 0 or more (the message
            names it).
    """
    chosen = model_from_env(instructions=INSTRUCTIONS)
    if chosen is not None:
        return chosen
    text = os.environ.get(_TOKEN_DELAY_ENV, "").strip()
    try:
        delay_ms = float(text) if text else DEFAULT_TOKEN_DELAY_MS
    except ValueError:
        delay_ms = math.nan
    if not 0 <= delay_ms < math.inf:
        raise ValueError(
            f"{_TOKEN_DELAY_ENV}={text!r} is not a finite number of milliseconds, 0 or more "
            f"(default {DEFAULT_TOKEN_DELAY_MS:g})."
        )
    model = ScriptedModel(demo_script, token_delay=delay_ms / 1000)
    model.name = "demo-scripted"
    return model


#: The demo's policy: large transfers need finance, small refunds approve themselves, key
#: rotation needs two people from ops (`CHAT_APP_POLICY` names another file).
POLICY_PATH = Path(__file__).with_name("policy.toml")


def describe_model(model: Model) -> str:
    """The agent's model in words, for the log at start: `OpenAI model gpt-4o-mini`, or the
    scripted one."""
    if isinstance(model, ScriptedModel):
        return "the scripted demo model (offline)"
    provider = getattr(model, "provider_name", "")
    return f"{provider} model {model.name}".strip()


def build_demo_agent(
    model: Model | None = None,
    *,
    sealer: Sealer | None = None,
    ledger: Ledger | None = None,
    policy: Policy | None = None,
) -> Agent:
    """The ops desk agent; the app and the standalone server pass a sealer, a ledger and the
    policy."""
    return Agent(
        model=model or demo_model(),
        tools=DEMO_TOOLS,
        interrupts=[SHIPPING, RELEASE_PLAN],
        middleware=[DemoInterrupts()],
        sealer=sealer,
        ledger=ledger,
        policy=policy,
    )


__all__ = [
    "DEFAULT_TOKEN_DELAY_MS",
    "HELP",
    "INSTRUCTIONS",
    "POLICY_PATH",
    "build_demo_agent",
    "demo_model",
    "describe_model",
]

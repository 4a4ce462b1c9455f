"""The ops desk demo: an agent whose scripted model plays every scenario offline."""

from __future__ import annotations

import os

from chat_app.agent import Agent, Model, ScriptedModel

from .interrupts import RELEASE_PLAN, SHIPPING, DemoInterrupts
from .script import HELP, demo_script
from .tools import DEMO_TOOLS

DEFAULT_TOKEN_DELAY_MS = 25.0


def demo_model() -> Model:
    """The scripted model, pacing tokens by `CHAT_APP_DEMO_TOKEN_DELAY_MS` (0 in tests)."""
    delay_ms = float(os.environ.get("CHAT_APP_DEMO_TOKEN_DELAY_MS", DEFAULT_TOKEN_DELAY_MS))
    model = ScriptedModel(demo_script, token_delay=delay_ms / 1000)
    model.name = "demo-scripted"
    return model


def build_demo_agent(model: Model | None = None) -> Agent:
    return Agent(
        model=model or demo_model(),
        tools=DEMO_TOOLS,
        interrupts=[SHIPPING, RELEASE_PLAN],
        middleware=[DemoInterrupts()],
    )


__all__ = ["HELP", "build_demo_agent", "demo_model"]

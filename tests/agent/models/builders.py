"""Builders for the adapter tests: models pointed at the fake provider, demo runs, resumes."""

from __future__ import annotations

from typing import Any

from chat_app.agent.models.anthropic import AnthropicModel, AnthropicModelSettings
from chat_app.agent.models.openai import OpenAIModel, OpenAIModelSettings
from chat_app.demo import build_demo_agent
from tests.agent.builders import collect, user
from tests.agent.fakes.provider import FakeProvider

INSTRUCTIONS = "You are a careful ops agent."
#: Small enough to keep a hanging provider short; behaviour, not time, is asserted.
QUICK: dict[str, Any] = {"timeout": 2.0, "max_retries": 2}


def openai_model(fake: FakeProvider, **settings: Any) -> OpenAIModel:
    chosen: OpenAIModelSettings = {**QUICK, **settings}  # type: ignore[typeddict-item]
    return OpenAIModel(
        "gpt-4o-mini",
        api_key="sk-test-key",
        base_url=f"{fake.base_url}/v1",
        instructions=INSTRUCTIONS,
        settings=chosen,
    )


def anthropic_model(fake: FakeProvider, **settings: Any) -> AnthropicModel:
    chosen: AnthropicModelSettings = {**QUICK, **settings}  # type: ignore[typeddict-item]
    return AnthropicModel(
        "claude-sonnet-4-6",
        api_key="sk-ant-test-key",
        base_url=fake.base_url,
        instructions=INSTRUCTIONS,
        settings=chosen,
    )


async def say(
    model: Any, text: str, *, history: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """One run of the demo agent on `model`: the history (if any), then the user's `text`."""
    messages = [*(history or []), user(text, f"u{len(history or []) + 1}")]
    return await collect(
        build_demo_agent(model), {"threadId": "t", "runId": "r1", "messages": messages}
    )


async def resume(
    model: Any, paused: list[dict[str, Any]], entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The continuation answering `paused` (the events of a run that ended in an interrupt)."""
    return await collect(
        build_demo_agent(model),
        {
            "threadId": "t",
            "runId": "r2",
            "parentRunId": paused[-1]["runId"],
            "messages": paused[-2]["messages"],
            "resume": entries,
        },
    )


def interrupts_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = events[-1]
    assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "interrupt", last
    return list(last["outcome"]["interrupts"])


def approve(item: dict[str, Any]) -> dict[str, Any]:
    return {"interruptId": item["id"], "status": "resolved", "payload": {"approved": True}}


def reject(item: dict[str, Any], reason: str) -> dict[str, Any]:
    payload = {"approved": False, "payload": {"reason": reason}}
    return {"interruptId": item["id"], "status": "resolved", "payload": payload}


def deny(item: dict[str, Any]) -> dict[str, Any]:
    """A rejection without a reason (for tools whose reject branch takes no payload)."""
    return {"interruptId": item["id"], "status": "resolved", "payload": {"approved": False}}


def cancel(item: dict[str, Any]) -> dict[str, Any]:
    return {"interruptId": item["id"], "status": "cancelled"}


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def types_of(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def run_error(events: list[dict[str, Any]]) -> str:
    """The message of the run's single RUN_ERROR, which must end the stream."""
    assert events[-1]["type"] == "RUN_ERROR", types_of(events)
    assert types_of(events).count("RUN_ERROR") == 1
    return str(events[-1]["message"])

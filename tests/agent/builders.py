"""Builders for engine tests: the tools of the captured TanStack scenarios, a scripted model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ag_ui.core import RunAgentInput

from chat_app.agent import (
    Agent,
    ModelRequest,
    ScriptedCall,
    ScriptedModel,
    ScriptedTurn,
    event_to_wire,
)
from chat_app.trust import ANONYMOUS, Identity

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def obj(
    properties: dict[str, Any], required: Sequence[str], *, draft: bool = True
) -> dict[str, Any]:
    schema: dict[str, Any] = {"$schema": DRAFT} if draft else {}
    schema.update({"type": "object", "properties": properties, "required": list(required)})
    return schema


def turns(*script: ScriptedTurn) -> ScriptedModel:
    """A model that plays `script` turn by turn, counting assistant turns already in history."""

    def play(request: ModelRequest) -> ScriptedTurn:
        # Each turn after a user message: the number of assistant messages since it.
        count = 0
        for message in reversed(request.messages):
            if message.role == "user":
                break
            if message.role == "assistant":
                count += 1
        return script[min(count, len(script) - 1)]

    model = ScriptedModel(play)
    model.name = "mock-model"
    return model


def say(text: str, *calls: tuple[str, str, dict[str, Any]]) -> ScriptedTurn:
    return ScriptedTurn(
        text=text,
        calls=[
            ScriptedCall(id=call_id, name=name, arguments=args) for call_id, name, args in calls
        ],
    )


def run_input(**fields: Any) -> RunAgentInput:
    return RunAgentInput.model_validate({"tools": [], "context": [], **fields})


async def collect(
    agent: Agent, body: dict[str, Any], identity: Identity = ANONYMOUS
) -> list[dict[str, Any]]:
    """The wire events of one run of `agent` on `body`, as `identity` (verified elsewhere)."""
    return [
        event_to_wire(event) async for event in agent.run(run_input(**body), identity=identity)
    ]


def user(text: str, message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def dumps(events: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(event) for event in events)

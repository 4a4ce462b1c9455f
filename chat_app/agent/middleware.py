"""Middleware: hooks at the four run boundaries, and the hook that reads generic answers.

Owns `Middleware` and `RunContext`. A boundary hook returns interrupt requests to pause the
run there. On a continuation, `on_interrupt_resolution` reads the typed answers and returns
`"continue"`, `"cancel"` (cancel every pending tool call) or `"stop"` (end the run now);
across middleware, stop > cancel > continue.

To apply an answer to the next model turn, call `ctx.tell_model(text)` from
`on_interrupt_resolution`: the model sees the text as a system note for this run only (it is
not written into the history).
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any

from chat_app.interrupts import BoundaryPhase, ToolResume

from .definitions import InterruptRequest, Resolutions

HookResult = Sequence[InterruptRequest] | None


@dataclass(kw_only=True)
class RunContext:
    """What hooks can see of the run, and the notes they leave for the model."""

    thread_id: str
    run_id: str
    parent_run_id: str | None
    #: The conversation, as a list of `ag_ui` messages (a `History`: each is built when read).
    messages: MutableSequence[Any]
    state: Any = None
    phase: BoundaryPhase | None = None
    iteration: int = 0
    resolutions: Resolutions = field(default_factory=lambda: Resolutions([]))
    model_notes: list[str] = field(default_factory=list)
    #: Pauses owned by other systems (no binding), shown beside ours on the next pause.
    foreign_interrupts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def is_continuation(self) -> bool:
        return self.parent_run_id is not None

    def tell_model(self, text: str) -> None:
        self.model_notes.append(text)


class Middleware:
    """Override the hooks you need; every default does nothing."""

    async def before_model(self, ctx: RunContext) -> HookResult:
        return None

    async def after_model(self, ctx: RunContext) -> HookResult:
        return None

    async def before_tools(self, ctx: RunContext) -> HookResult:
        return None

    async def after_tools(self, ctx: RunContext) -> HookResult:
        return None

    async def on_interrupt_resolution(
        self, ctx: RunContext, resolutions: Resolutions
    ) -> ToolResume | None:
        return None


_PRECEDENCE: dict[ToolResume, int] = {"continue": 0, "cancel": 1, "stop": 2}


def combine_tool_resumes(results: Sequence[ToolResume | None]) -> ToolResume:
    """stop > cancel > continue; no answer means continue."""
    chosen: ToolResume = "continue"
    for result in results:
        if result is not None and _PRECEDENCE[result] > _PRECEDENCE[chosen]:
            chosen = result
    return chosen


async def run_boundary(
    middleware: Sequence[Middleware], phase: BoundaryPhase, ctx: RunContext
) -> list[InterruptRequest]:
    ctx.phase = phase
    hook_name = {
        "beforeModel": "before_model",
        "afterModel": "after_model",
        "beforeTools": "before_tools",
        "afterTools": "after_tools",
    }[phase]
    requests: list[InterruptRequest] = []
    for item in middleware:
        result = await getattr(item, hook_name)(ctx)
        if result:
            requests.extend(result)
    return requests

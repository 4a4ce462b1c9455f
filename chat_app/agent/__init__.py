"""The agent engine: tools, interrupt definitions, middleware, the run loop, resume validation.

Imports `chat_app.interrupts`, `chat_app.trust` and `ag_ui.core`; never the client, the server
or the UI.
"""

from .definitions import (
    GenericResolution,
    InterruptDefinition,
    InterruptRequest,
    Resolutions,
    define_interrupt,
)
from .events import event_to_wire
from .middleware import Middleware, RunContext, combine_tool_resumes
from .models import (
    Model,
    ModelEvent,
    ModelRequest,
    ScriptedCall,
    ScriptedModel,
    ScriptedTurn,
    TextDelta,
    ToolCallDelta,
    last_user_text,
)
from .run import Agent
from .tools import Tool, tool

__all__ = [
    "Agent",
    "GenericResolution",
    "InterruptDefinition",
    "InterruptRequest",
    "Middleware",
    "Model",
    "ModelEvent",
    "ModelRequest",
    "Resolutions",
    "RunContext",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedTurn",
    "TextDelta",
    "Tool",
    "ToolCallDelta",
    "combine_tool_resumes",
    "define_interrupt",
    "event_to_wire",
    "last_user_text",
    "tool",
]

"""Model adapters behind one small protocol (`Model.stream`)."""

from .base import Model, ModelEvent, ModelRequest, TextDelta, ToolCallDelta
from .scripted import ScriptedCall, ScriptedModel, ScriptedTurn, last_user_text

__all__ = [
    "Model",
    "ModelEvent",
    "ModelRequest",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedTurn",
    "TextDelta",
    "ToolCallDelta",
    "last_user_text",
]

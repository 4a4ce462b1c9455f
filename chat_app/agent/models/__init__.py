"""Model adapters behind one small protocol (`Model.stream`).

The provider adapters (`models.openai`, `models.anthropic`) need optional extras and are
imported only when chosen: use `model_from_env()` / `model_from_spec()`, or import them by path.
"""

from .base import Model, ModelEvent, ModelRequest, TextDelta, ToolCallDelta
from .errors import ModelError, ModelErrorCode
from .scripted import ScriptedCall, ScriptedModel, ScriptedTurn, last_user_text
from .select import MODEL_ENV, model_from_env, model_from_spec

__all__ = [
    "MODEL_ENV",
    "Model",
    "ModelError",
    "ModelErrorCode",
    "ModelEvent",
    "ModelRequest",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedTurn",
    "TextDelta",
    "ToolCallDelta",
    "last_user_text",
    "model_from_env",
    "model_from_spec",
]

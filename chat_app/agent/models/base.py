"""The model seam: one small protocol every adapter implements.

A model turns the conversation into a stream of `TextDelta` and `ToolCallDelta` events. The
engine turns those into AG-UI events; adapters never see AG-UI.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from ..tools import Tool


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call; the first piece of a call carries its name."""

    id: str
    name: str | None = None
    arguments: str = ""


ModelEvent: TypeAlias = TextDelta | ToolCallDelta


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """The conversation so far (AG-UI messages), the tools, and notes from middleware."""

    messages: Sequence[Any]
    tools: Sequence[Tool]
    notes: Sequence[str] = field(default_factory=tuple)


class Model(ABC):
    """A language model adapter."""

    name: str = "model"

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one assistant turn."""

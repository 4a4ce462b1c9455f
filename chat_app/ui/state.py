"""UI state for the chat shell.

Only plain, picklable data lives here (Reflex persists state to disk or
redis). Agent runs and other live objects belong outside the state.
"""

from __future__ import annotations

import dataclasses
import uuid

import reflex as rx


@dataclasses.dataclass
class ChatMessage:
    """One line of the transcript."""

    id: str
    role: str  # "user" | "assistant"
    content: str


class ChatState(rx.State):
    """Transcript and composer draft for one browser tab."""

    messages: list[ChatMessage] = []
    draft: str = ""

    @rx.var
    def has_messages(self) -> bool:
        """Whether the transcript has anything to show."""
        return len(self.messages) > 0

    @rx.event
    def set_draft(self, value: str) -> None:
        """Track the composer's text (auto-setters are off in Reflex 0.10)."""
        self.draft = value

    @rx.event
    def send(self) -> None:
        """Append the draft to the transcript as a user message."""
        text = self.draft.strip()
        if not text:
            return
        self.messages.append(ChatMessage(id=uuid.uuid4().hex, role="user", content=text))
        self.draft = ""

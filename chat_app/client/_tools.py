"""What the client registers: client tools and generic interrupt definitions.

Owns `ClientTool` and `ClientInterruptDefinition`. Both hold raw JSON Schemas and compute, once,
the same schema hashes the server stamps into bindings (`docs/protocol.md` §2.5): the
interrupt manager trusts an approval or a typed generic only when these hashes match.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from chat_app.interrupts import (
    ApprovalSchema,
    JSONSchema,
    definition_schema_identity,
    hash_schema_input,
    normalize_approval_schema,
)

__all__ = ["ClientTool", "ClientToolFunction", "DefinitionLike", "ClientInterruptDefinition"]

#: A client tool's implementation: arguments in, JSON-compatible output (sync or async).
ClientToolFunction = Callable[[dict[str, object]], object]


@dataclass(frozen=True, kw_only=True)
class ClientTool:
    """A tool the client knows: to run it (`execute`) or to type its approvals.

    Register every tool whose approvals the person decides, even server tools (without
    `execute`): the schema hashes must match the server's for the approval to be typed.

    Example::

        clock = ClientTool(name="get_local_time", output_schema={...}, execute=read_clock)
        chat = ChatClient(connection, tools=[clock, *ClientTool.from_manifest(manifest)])
    """

    name: str
    description: str = ""
    input_schema: JSONSchema | None = None
    output_schema: JSONSchema | None = None
    needs_approval: bool = False
    #: One schema for both decisions, or `{"approve": ..., "reject": ...}`.
    approval_schema: JSONSchema | None = None
    execute: ClientToolFunction | None = field(default=None, compare=False)
    approval: ApprovalSchema = field(init=False, repr=False, compare=False)
    input_schema_hash: str = field(init=False, repr=False, compare=False)
    output_schema_hash: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "approval", normalize_approval_schema(self.approval_schema, self.input_schema)
        )
        object.__setattr__(self, "input_schema_hash", hash_schema_input(self.input_schema))
        object.__setattr__(self, "output_schema_hash", hash_schema_input(self.output_schema))

    def branch_schema(self, approved: bool) -> JSONSchema | None:
        """The payload schema of the approve or reject decision (`None`: no payload)."""
        return self.approval.branch(approved)

    def wire(self) -> dict[str, object]:
        """The AG-UI `Tool` entry sent in `RunAgentInput.tools` (as `@tanstack/ai-client`).

        `parameters` is the input schema without `$schema` (LLM providers do not want it).
        """
        parameters = (
            {k: v for k, v in self.input_schema.items() if k != "$schema"}
            if self.input_schema
            else {"type": "object"}
        )
        return {"name": self.name, "description": self.description, "parameters": parameters}

    async def run(self, args: dict[str, object]) -> object:
        """Call `execute` (sync or async) with the tool arguments."""
        if self.execute is None:
            raise RuntimeError(f"Client tool {self.name} has no implementation.")
        result = self.execute(args)
        if inspect.isawaitable(result):
            result = await result
        return result

    @classmethod
    def from_manifest(
        cls,
        manifest: object,
        functions: Mapping[str, ClientToolFunction] | None = None,
    ) -> list[ClientTool]:
        """Tools from a `GET /api/tools` answer: `{"tools": [...]}`, a bare list of entries,
        or one entry.

        `functions` maps tool names to implementations; the other tools are registered
        without one (their approvals are typed, nothing runs in the client). Strict: raises
        `ValueError` naming each entry it cannot use and why (`read_manifest` uses the rest
        and returns the problems instead).
        """
        from ._manifest import read_manifest  # it builds ClientTools: imported when used

        read = read_manifest(manifest, functions)
        if read.problems:
            raise ValueError(" ".join(read.problems))
        return list(read.tools)


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """A client tool call the agent waits for this client to answer (`add_tool_result`)."""

    call_id: str
    name: str
    args: dict[str, object]


def _schema(value: object) -> JSONSchema | None:
    return dict(value) if isinstance(value, Mapping) else None


class DefinitionLike(Protocol):
    """Anything with an id and raw response/payload schemas (e.g. the agent's definitions)."""

    @property
    def id(self) -> str: ...

    @property
    def response_schema(self) -> Mapping[str, object] | None: ...

    @property
    def payload_schema(self) -> Mapping[str, object] | None: ...


@dataclass(frozen=True, kw_only=True)
class ClientInterruptDefinition:
    """A generic interrupt the client can answer with a typed, validated response.

    Example::

        shipping = ClientInterruptDefinition(id="shipping-speed", response_schema={...})
    """

    id: str
    response_schema: JSONSchema | None = None
    payload_schema: JSONSchema | None = None
    response_schema_hash: str | None = field(init=False, compare=False)
    payload_schema_hash: str | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        _, response_hash = definition_schema_identity(self.response_schema)
        _, payload_hash = definition_schema_identity(self.payload_schema)
        object.__setattr__(self, "response_schema_hash", response_hash)
        object.__setattr__(self, "payload_schema_hash", payload_hash)

    @classmethod
    def of(cls, definition: DefinitionLike) -> ClientInterruptDefinition:
        """Copy any definition-like object (such as `chat_app.agent.InterruptDefinition`)."""
        if isinstance(definition, ClientInterruptDefinition):
            return definition
        return cls(
            id=definition.id,
            response_schema=_schema(definition.response_schema),
            payload_schema=_schema(definition.payload_schema),
        )

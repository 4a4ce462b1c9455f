"""Tools the model may call: schemas, approval, and where they run.

Owns `Tool` and its constructor `tool()`. A tool with `execute` runs on the server; a tool
without one is a client tool, run by whichever client drives the conversation.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from chat_app.interrupts import (
    ApprovalSchema,
    JSONSchema,
    client_tool_response_schema,
    hash_schema_input,
    normalize_approval_schema,
    schema_problem,
)

from ._schema import SchemaLike, to_approval_schema, to_json_schema

ToolFunction = Callable[[dict[str, Any]], Any | Awaitable[Any]]


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A tool definition. Build it with `tool(...)`.

    Example::

        transfer = tool("transfer", description="Move money", input=TransferArgs,
                        needs_approval=True, execute=do_transfer)
    """

    name: str
    description: str = ""
    input_schema: JSONSchema | None = None
    output_schema: JSONSchema | None = None
    needs_approval: bool = False
    #: One schema for both decisions, or `{"approve": ..., "reject": ...}`.
    approval_schema: JSONSchema | None = None
    execute: ToolFunction | None = None
    approval: ApprovalSchema = field(init=False, repr=False)
    input_schema_hash: str = field(init=False, repr=False)
    output_schema_hash: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Hashes are computed once, over exactly the JSON that goes on the wire.
        object.__setattr__(
            self, "approval", normalize_approval_schema(self.approval_schema, self.input_schema)
        )
        object.__setattr__(self, "input_schema_hash", hash_schema_input(self.input_schema))
        object.__setattr__(self, "output_schema_hash", hash_schema_input(self.output_schema))

    @property
    def runs_on(self) -> Literal["server", "client"]:
        return "server" if self.execute is not None else "client"

    @property
    def client_response_schema(self) -> JSONSchema:
        return client_tool_response_schema(self.output_schema)

    async def run(self, args: dict[str, Any]) -> Any:
        assert self.execute is not None, f"{self.name} is a client tool"
        result = self.execute(args)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, BaseModel):
            return result.model_dump(mode="json")
        return result

    def arguments_problem(self, args: object) -> str | None:
        """Why the engine refuses a call of this tool with `args` before anyone is asked (the
        model is told), or `None`: they are not an object, or not what its input schema
        takes."""
        if not isinstance(args, dict):
            return f"Tool {self.name} arguments are not a JSON object."
        if self.input_schema is None:
            return None
        problem = schema_problem(self.input_schema, args)
        if problem is None:
            return None
        where = "/".join(str(part) for part in problem.path)
        place = f" at {where}" if where else ""
        return f"Tool {self.name} arguments are invalid{place}: {problem.message}"

    def manifest(self) -> dict[str, object]:
        """The tool as `GET /api/tools` describes it (camelCase, raw schemas)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "approvalSchema": self.approval_schema,
            "needsApproval": self.needs_approval,
            "runsOn": self.runs_on,
        }

    def wire(self) -> dict[str, object]:
        """The tool as an AG-UI `Tool` entry (what a client sends in `tools`)."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.input_schema or {"type": "object", "properties": {}},
        }


def tool(
    name: str,
    *,
    description: str = "",
    input: SchemaLike | None = None,
    output: SchemaLike | None = None,
    needs_approval: bool = False,
    approval: SchemaLike | Mapping[str, SchemaLike] | None = None,
    execute: ToolFunction | None = None,
) -> Tool:
    """Define a tool. Schemas are JSON Schema dicts or pydantic models."""
    return Tool(
        name=name,
        description=description,
        input_schema=to_json_schema(input),
        output_schema=to_json_schema(output),
        needs_approval=needs_approval,
        approval_schema=to_approval_schema(approval),
        execute=execute,
    )

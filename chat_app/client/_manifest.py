"""The tool manifest: which tools an agent has, as its `GET …/tools` answers.

Owns `ToolManifest`, `read_manifest` (an answer, already parsed, as tools plus what could not
be used) and `fetch_manifest` (the GET itself). A manifest is `{"tools": [...]}` (ours) or a
bare list of the same entries (what many servers answer). Nothing here raises for what a
server sends: each problem is a sentence in `problems`, saying which entry and why, and the
entries that can be used are used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import httpx

from chat_app.interrupts import schema_is_usable

from ._http import network_reason, seconds, status_words
from ._tools import ClientTool, ClientToolFunction, _schema

__all__ = ["ToolManifest", "fetch_manifest", "read_manifest"]

_SCHEMAS = ("inputSchema", "outputSchema")


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolManifest:
    """The tools an agent's manifest lists, and what was wrong with it.

    Example::

        manifest = fetch_manifest("http://127.0.0.1:8001/api/tools")
        for problem in manifest.problems:
            print(problem)  # Tool entry 2 (transfer) in … was left out: its inputSchema …
        client = ChatClient(connection, tools=manifest.tools)
    """

    tools: tuple[ClientTool, ...] = ()
    #: Each thing that could not be used, in words a person understands.
    problems: tuple[str, ...] = ()
    #: The names of the entries left out (those that had one): the agent has these tools,
    #: but not as anything here can use.
    left_out: tuple[str, ...] = ()
    #: A manifest was read (a list of tools, maybe with entries left out); `False` when it is
    #: missing, unreachable, not JSON or not a list of tools: the caller falls back.
    found: bool = False

    def with_functions(self, functions: Mapping[str, ClientToolFunction]) -> list[ClientTool]:
        """The tools, each with its implementation from `functions` when it has one."""
        return [
            replace(tool, execute=functions[tool.name]) if tool.name in functions else tool
            for tool in self.tools
        ]


def read_manifest(
    manifest: object,
    functions: Mapping[str, ClientToolFunction] | None = None,
    *,
    source: str = "the tool manifest",
) -> ToolManifest:
    """The tools of a parsed manifest: `{"tools": [...]}`, a bare list of entries, or one entry.

    `functions` maps tool names to implementations; the other tools have none (their
    approvals are typed, nothing runs in the client). `source` names the manifest in problems.
    """
    entries: Sequence[object]
    if isinstance(manifest, list):
        entries = manifest
    elif isinstance(manifest, Mapping) and "tools" in manifest:
        listed = manifest["tools"]
        if not isinstance(listed, list):
            return ToolManifest(
                problems=(f"{_capital(source)} has no list of tools: its \"tools\" is "
                          f"{_kind(listed)}.",),
            )  # fmt: skip
        entries = listed
    elif isinstance(manifest, Mapping) and "name" in manifest:
        entries = [manifest]
    else:
        return ToolManifest(
            problems=(f"{_capital(source)} is not a list of tools: it is {_kind(manifest)}.",)
        )
    functions = functions or {}
    tools: list[ClientTool] = []
    problems: list[str] = []
    left_out: list[str] = []
    for number, entry in enumerate(entries, start=1):
        tool, why = _tool(entry, functions, {tool.name for tool in tools})
        if tool is not None:
            tools.append(tool)
            continue
        name = entry.get("name") if isinstance(entry, Mapping) else None
        named = isinstance(name, str) and bool(name.strip())
        if named and name not in left_out and all(tool.name != name for tool in tools):
            left_out.append(str(name))
        label = f" ({name})" if named else ""
        problems.append(f"Tool entry {number}{label} in {source} was left out: {why}.")
    return ToolManifest(
        tools=tuple(tools), problems=tuple(problems), left_out=tuple(left_out), found=True
    )


def fetch_manifest(
    url: str,
    functions: Mapping[str, ClientToolFunction] | None = None,
    *,
    timeout: float = 5.0,
    headers: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> ToolManifest:
    """GET the manifest at `url` and read it (see `read_manifest`); never raises.

    Synchronous: it is read once, when a client is made, with a short `timeout`.
    """
    where = f"the tool manifest at {url}"
    try:
        with httpx.Client(timeout=timeout, transport=transport) as http:
            response = http.get(url, headers={"Accept": "application/json", **(headers or {})})
    except httpx.TimeoutException:
        return _missing(f"{_capital(where)} did not arrive within {seconds(timeout)}.")
    except httpx.HTTPError as error:
        return _missing(f"Could not read {where}: {network_reason(error)}.")
    content_type = response.headers.get("content-type", "")
    if response.status_code == 404:
        return _missing(f"There is no tool manifest at {url} (HTTP 404).")
    if response.status_code != 200:
        words = status_words(response.status_code, response.content, content_type)
        return _missing(f"Could not read {where}: it answered {words}.")
    try:
        data = json.loads(response.content)
    except ValueError as error:
        why = (
            "it is a web page (text/html)"
            if "html" in content_type.lower()
            else (error.msg if isinstance(error, json.JSONDecodeError) else str(error))
        )
        return _missing(f"{_capital(where)} is not JSON: {why}.")
    return read_manifest(data, functions, source=where)


def _missing(problem: str) -> ToolManifest:
    return ToolManifest(problems=(problem,))


def _tool(
    entry: object, functions: Mapping[str, ClientToolFunction], taken: set[str]
) -> tuple[ClientTool | None, str]:
    """The tool an entry describes, or `None` and why it cannot be used."""
    if not isinstance(entry, Mapping):
        return None, f"it is {_kind(entry)}, not an object"
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, "it has no name"
    if name in taken:
        return None, f"an earlier entry is also named {name}"
    for key in (*_SCHEMAS, "approvalSchema"):
        value = entry.get(key)
        if value is not None and not isinstance(value, Mapping):
            return None, f"its {key} is {_kind(value)}, not a JSON Schema object"
    for key in _SCHEMAS:
        value = entry.get(key)
        if isinstance(value, Mapping) and not schema_is_usable(dict(value)):
            return None, f"its {key} is not a valid JSON Schema"
    needs_approval = entry.get("needsApproval")
    if needs_approval is not None and not isinstance(needs_approval, bool):
        return None, f"its needsApproval is {_kind(needs_approval)}, not true or false"
    description = entry.get("description")
    try:
        tool = ClientTool(
            name=name,
            description=description if isinstance(description, str) else "",
            input_schema=_schema(entry.get("inputSchema")),
            output_schema=_schema(entry.get("outputSchema")),
            approval_schema=_schema(entry.get("approvalSchema")),
            needs_approval=needs_approval is True,
            execute=functions.get(name),
        )
    except (TypeError, ValueError) as error:  # a schema the wire layer cannot hash or split
        return None, f"its schemas cannot be used: {str(error).rstrip('.')}"
    for approved in (True, False):
        branch = tool.branch_schema(approved)
        if branch is not None and not schema_is_usable(branch):
            return None, "its approvalSchema is not a valid JSON Schema"
    return tool, ""


def _kind(value: object) -> str:
    """A JSON value's kind, for a sentence: `a list`, `a string`, `null`, …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]

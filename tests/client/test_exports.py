"""The public surface is pinned, and the client never imports the layers above or beside it."""

from __future__ import annotations

import ast
from pathlib import Path

import chat_app.client as client

PACKAGE = Path(client.__file__).parent
FORBIDDEN = ("chat_app.agent", "chat_app.server", "chat_app.ui", "chat_app.demo")


def test_all_lists_exactly_the_public_names_in_sorted_order() -> None:
    public = {name for name in vars(client) if not name.startswith("_")}
    assert client.__all__ == sorted(client.__all__)
    assert set(client.__all__) == public


def test_the_client_imports_neither_the_agent_nor_the_server_nor_the_ui() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )  # fmt: skip
            for name in names:
                assert not name.startswith(FORBIDDEN), f"{path.name} imports {name}"

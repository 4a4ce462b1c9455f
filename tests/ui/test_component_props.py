"""Components are functions of their props: nothing under `chat_app/ui/components` reads a
page's state; the pages (`chat_app/ui/pages`) bind the state to them.

Plain `ast` over the sources, so nothing is imported and no browser is needed. Relative
imports (`from ..state import ChatState`, `from .. import state`) count as absolute ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = ROOT / "chat_app" / "ui" / "components"
#: The modules that hold the pages' states and the tabs' live sessions.
STATEFUL = ("chat_app.ui.state", "chat_app.ui.audit_state", "chat_app.ui.session")


def _module_name(path: Path) -> str:
    dotted = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(dotted[:-1] if dotted[-1] == "__init__" else dotted)


def imported_names(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """Every module or name `source` imports, dotted and absolute (`chat_app.ui.state`,
    `chat_app.ui.state.ChatState`); `module` is the dotted name of the module it is."""
    package = module if is_package else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def stateful_imports(names: list[str]) -> list[str]:
    return [n for n in names if any(n == m or n.startswith(m + ".") for m in STATEFUL)]


def test_the_check_reads_absolute_and_relative_imports() -> None:
    module = "chat_app.ui.components.card"
    for source in (
        "from chat_app.ui.state import ChatState",
        "import chat_app.ui.session",
        "from chat_app.ui import audit_state",
        "from ..state import ChatState",
        "from .. import session",
    ):
        assert stateful_imports(imported_names(source, module)), source
    fine = "from chat_app.ui.views import DecisionView\nfrom ._types import Prop"
    assert stateful_imports(imported_names(fine, module)) == []


def test_no_component_module_imports_a_state_or_the_session() -> None:
    modules = sorted(COMPONENTS.rglob("*.py"))
    assert modules, f"no modules under {COMPONENTS}"
    found = {
        str(path.relative_to(ROOT)): bad
        for path in modules
        if (
            bad := stateful_imports(
                imported_names(
                    path.read_text(encoding="utf-8"),
                    _module_name(path),
                    is_package=path.name == "__init__.py",
                )
            )
        )
    }
    assert found == {}, "components take Vars and handlers as arguments; pages bind the state"

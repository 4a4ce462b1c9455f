"""The packages import in one direction: the README's "Layout" table is the map, read from there.

Plain `ast` over `chat_app/**/*.py`: nothing is imported, so Reflex is not needed. Imports under
`if TYPE_CHECKING:` and inside functions count like any other.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "chat_app"
ANYTHING = None
"""What a "May import" cell of `anything` reads as."""


@dataclass(frozen=True)
class Row:
    """One row of the Layout table that names code under `chat_app/`."""

    name: str
    paths: tuple[str, ...]
    """Dotted, without `.py`: `chat_app.trust`, `chat_app.config`."""
    may_import: frozenset[str] | None


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    """Dotted and absolute, with the imported name: `chat_app.trust.ledger.Ledger`."""
    line: int

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.target}"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def layout_rows() -> list[Row]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.lower() for cell in _cells(table[0])]
    column = header.index("may import")
    rows = []
    for line in table[2:]:
        cells = _cells(line)
        paths = re.findall(r"`(chat_app/[^`]*)`", cells[0])
        if not paths:
            continue
        allowed = cells[column]
        dotted = tuple(path.removesuffix(".py").replace("/", ".") for path in paths)
        rows.append(
            Row(
                name=dotted[0].rpartition(".")[2],
                paths=dotted,
                may_import=(
                    ANYTHING
                    if allowed.strip().lower() == "anything"
                    else frozenset(re.findall(r"`([a-z_]+)`", allowed))
                ),
            )
        )
    return rows


def row_of(name: str, rows: list[Row]) -> Row | None:
    """The row whose path is the longest prefix of a dotted module (or imported) name."""
    matches = [
        (len(path), row)
        for row in rows
        for path in row.paths
        if name == path or name.startswith(path + ".")
    ]
    return max(matches, key=lambda match: match[0])[1] if matches else None


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def chat_app_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path) -> list[Import]:
    """Every import in a module, absolute, one entry per imported name."""
    importer = module_name(path)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [Import(importer, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found += [
                Import(importer, f"{module}.{alias.name}", node.lineno) for alias in node.names
            ]
    return found


def all_imports() -> list[Import]:
    return [found for path in chat_app_modules().values() for found in imports_of(path)]


def test_the_layout_table_covers_every_module_and_names_only_its_own_rows() -> None:
    rows = layout_rows()
    names = {row.name for row in rows}
    unmapped = [
        module for module in chat_app_modules() if module != "chat_app" and not row_of(module, rows)
    ]
    assert not unmapped, f"modules with no row in the README's Layout table: {unmapped}"
    for row in rows:
        assert row.may_import is ANYTHING or row.may_import <= names, row
    assert {"interrupts", "trust", "agent", "client", "server", "ui"} <= names


def test_every_module_imports_only_the_packages_its_layout_row_allows() -> None:
    rows = layout_rows()
    problems = []
    for found in all_imports():
        if not found.target.startswith("chat_app.") and found.target != "chat_app":
            continue
        source = row_of(found.importer, rows)
        target = row_of(found.target, rows)
        if source is None or source is target or source.may_import is ANYTHING:
            continue
        if target is None or target.name not in source.may_import:
            problems.append(f"{found} ({source.name} -> {target.name if target else '?'})")
    assert not problems, "imports the Layout table does not allow:\n" + "\n".join(problems)


def _is_reflex(target: str) -> bool:
    top = target.partition(".")[0]
    return top == "reflex" or top.startswith("reflex_")


def test_only_the_ui_and_the_entry_points_import_reflex() -> None:
    allowed = ("chat_app.ui", "chat_app.chat_app", "chat_app.launch")
    problems = [
        str(found)
        for found in all_imports()
        if _is_reflex(found.target)
        and not any(found.importer == a or found.importer.startswith(a + ".") for a in allowed)
    ]
    assert not problems, "Reflex imported below chat_app/ui:\n" + "\n".join(problems)


def _packages() -> set[str]:
    return {module_name(path) for path in PACKAGE.rglob("__init__.py")}


def owner_of_private(target: str, packages: set[str]) -> str | None:
    """The package a `_private` module or name belongs to, or None when nothing is private."""
    parts = target.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            owner = ".".join(parts[:index])
            return owner if owner in packages else owner.rpartition(".")[0]
    return None


def test_no_module_reaches_into_another_packages_private_modules() -> None:
    packages = _packages()
    problems = []
    for found in all_imports():
        if not found.target.startswith("chat_app."):
            continue
        owner = owner_of_private(found.target, packages)
        inside = found.importer == owner or found.importer.startswith(f"{owner}.")
        if owner is not None and not inside:
            problems.append(f"{found} (private to {owner})")
    assert not problems, "private modules used from outside:\n" + "\n".join(problems)


def test_ui_components_are_stateless() -> None:
    stateful = ("chat_app.ui.state", "chat_app.ui.audit_state", "chat_app.ui.session")
    problems = [
        str(found)
        for found in all_imports()
        if found.importer.startswith("chat_app.ui.components.")
        and any(found.target == s or found.target.startswith(s + ".") for s in stateful)
    ]
    assert not problems, "components that import UI state:\n" + "\n".join(problems)

"""Every section citation in the code, the tests, the benchmarks and the README names a
numbered heading of `docs/protocol.md`.

Code cites the protocol as the path `docs/protocol.md` in backticks followed by a section sign
and a section number; several are joined by commas, "and" or "or", and a range uses an en
dash (4.4 to 4.6). A section sign anywhere else in those files is a citation in some other
form, or of a document a reader cannot open, and fails too. The characters are written as
escapes here, so this file cites nothing itself.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
SIGN = "\u00a7"
DASH = "\u2013"

_NUMBER = r"\d+(?:\.\d+)*"
_REFERENCE = re.compile(rf"{SIGN}({_NUMBER})(?:{DASH}({_NUMBER}))?")
_ONE = rf"{SIGN}{_NUMBER}(?:{DASH}{_NUMBER})?"
_PATH = r"(?:\[`docs/protocol\.md`\]\([^)\s]*\)|`docs/protocol\.md`)"
_CITATION = re.compile(rf"{_PATH}\s+{_ONE}(?:(?:,\s+|\s+and\s+|\s+or\s+){_ONE})*")
_HEADING = re.compile(rf"^#{{2,4}} ({_NUMBER})\.?\s", re.MULTILINE)
_SUFFIXES = (".py", ".md", ".mjs")


def cited_files() -> list[Path]:
    """README.md, and the sources and notes under chat_app/, tests/ and benchmarks/."""
    files = [ROOT / "README.md"]
    for top in ("chat_app", "tests", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*")):
            parts = path.relative_to(ROOT).parts
            if (
                path.suffix not in _SUFFIXES
                or not path.is_file()
                or "node_modules" in parts
                or "__pycache__" in parts
                or parts[:3] == ("tests", "interop", "js")
            ):
                continue
            files.append(path)
    return files


def headings(text: str) -> list[str]:
    return _HEADING.findall(text)


def expand(start: str, end: str | None) -> list[str]:
    """The sections a reference names: one, or every one of a range (4.4 to 4.6)."""
    if not end:
        return [start]
    first, last = start.split("."), end.split(".")
    if len(last) == 1 and len(first) > 1:
        last = [*first[:-1], *last]
    if first[:-1] != last[:-1]:
        return [start, end]
    return [".".join([*first[:-1], str(n)]) for n in range(int(first[-1]), int(last[-1]) + 1)]


def citations(text: str) -> list[tuple[int, str]]:
    """`(line, section)` for every section a citation in `text` names."""
    found: list[tuple[int, str]] = []
    for citation in _CITATION.finditer(text):
        line = text.count("\n", 0, citation.start()) + 1
        for reference in _REFERENCE.finditer(citation.group()):
            found.extend((line, section) for section in expand(*reference.groups()))
    return found


def problems(text: str, known: set[str], where: str) -> list[str]:
    """What is wrong with the citations in `text`: sections missing from the doc, and
    section signs outside a `docs/protocol.md` citation."""
    found = [
        f"{where}:{line}: section {section} is not a heading of docs/protocol.md"
        for line, section in citations(text)
        if section not in known
    ]
    inside = {
        citation.start() + offset
        for citation in _CITATION.finditer(text)
        for offset, char in enumerate(citation.group())
        if char == SIGN
    }
    for index, char in enumerate(text):
        if char == SIGN and index not in inside:
            line = text.count("\n", 0, index) + 1
            snippet = text[max(0, index - 30) : index + 10].replace("\n", " ")
            found.append(f"{where}:{line}: not a docs/protocol.md citation: ...{snippet}...")
    return found


def test_the_protocol_doc_exists_with_numbered_sections() -> None:
    assert DOC.is_file(), "docs/protocol.md is missing"
    numbers = headings(DOC.read_text(encoding="utf-8"))
    assert len(numbers) >= 10
    assert len(numbers) == len(set(numbers)), "a section number is used twice"
    for number in numbers:
        parent = number.rpartition(".")[0]
        assert not parent or parent in numbers, f"section {number} has no section {parent}"


def test_every_citation_names_a_section_of_the_doc() -> None:
    known = set(headings(DOC.read_text(encoding="utf-8")))
    found: list[str] = []
    cited = 0
    for path in cited_files():
        text = path.read_text(encoding="utf-8")
        cited += len(citations(text))
        found.extend(problems(text, known, str(path.relative_to(ROOT))))
    assert not found, "\n".join(found)
    assert cited >= 20, f"only {cited} citations found: is the collector still looking?"


def test_the_doc_own_references_name_its_sections() -> None:
    text = DOC.read_text(encoding="utf-8")
    known = set(headings(text))
    missing = [
        f"docs/protocol.md:{text.count(chr(10), 0, match.start()) + 1}: {section}"
        for match in _REFERENCE.finditer(text)
        for section in expand(*match.groups())
        if section not in known
    ]
    assert not missing, "\n".join(missing)


def test_the_checker_catches_a_missing_section_and_a_stray_sign() -> None:
    known = {"3", "3.4", "4", "4.4", "4.5", "4.6"}
    good = f"see `docs/protocol.md` {SIGN}3.4 and {SIGN}4.4{DASH}4.6"
    assert citations(good) == [(1, "3.4"), (1, "4.4"), (1, "4.5"), (1, "4.6")]
    assert problems(good, known, "x") == []
    assert problems(f"`docs/protocol.md` {SIGN}9.9", known, "x") == [
        "x:1: section 9.9 is not a heading of docs/protocol.md"
    ]
    assert len(problems(f"(contract {SIGN}3.4)", known, "x")) == 1

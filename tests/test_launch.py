"""`make run`'s launcher keeps the pages' states across a restart of the same code, and
empties them, as Reflex would, for another release (`chat_app.launch`)."""

from __future__ import annotations

from pathlib import Path

from chat_app.launch import RELEASE_FILE, keep_states, release_digest


def test_states_are_kept_for_the_same_release_and_emptied_for_another(tmp_path: Path) -> None:
    states = tmp_path / ".states"
    resets: list[str] = []

    def reset() -> None:  # Reflex's: every file in the folder goes
        resets.append("reset")
        for path in states.glob("*") if states.exists() else ():
            path.unlink()

    assert keep_states(states, "release-1", reset) is False  # a first start: nothing to keep
    (states / "tab.pkl").write_bytes(b"a draft")
    assert keep_states(states, "release-1", reset) is True
    assert (states / "tab.pkl").read_bytes() == b"a draft" and resets == ["reset"]
    assert keep_states(states, "release-2", reset) is False
    assert not (states / "tab.pkl").exists() and resets == ["reset", "reset"]
    assert (states / RELEASE_FILE).read_text() == "release-2"


def test_the_release_is_the_code(tmp_path: Path) -> None:
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "state.py").write_text("A = 1\n")
    first = release_digest(tmp_path)
    assert release_digest(tmp_path) == first
    (tmp_path / "ui" / "state.py").write_text("A = 2\n")
    assert release_digest(tmp_path) != first
    (tmp_path / "ui" / "state.py").write_text("A = 1\n")
    (tmp_path / "ui" / "other.py").write_text("")
    assert release_digest(tmp_path) != first

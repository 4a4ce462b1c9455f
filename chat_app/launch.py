"""`reflex …`, with granian replacing a backend worker that dies and pages' state kept across
a restart: how the app is served.

`python -m chat_app.launch run --env prod --single-port` in place of `reflex run …` (`make run`
does this). It changes two things and nothing else:

- Reflex 0.10.1 builds its granian server without `respawn_failed_workers`, which granian
  leaves off by default, and then ONE worker that dies (SIGKILL, out of memory) makes granian
  shut the whole server down: every other worker is stopped and `reflex run` exits. With
  several workers behind Redis, a worker that dies mid-pause must cost nothing: the setting
  is turned on (tests/ui/test_many_workers.py kills one).
- `reflex run` empties the folder where Reflex keeps each tab's state on disk (`.states`, the
  default without Redis) at every start, and with it what people had typed into decision
  forms: a restart lost their drafts. The folder is kept while the app's code is the same
  (`keep_states`: a digest of `chat_app/`'s sources, stored beside the states). Another
  release empties it as Reflex would: Reflex's own check compares only a state's frontend
  variables, and a pickled backend object of an older shape would fail on every event.
  Reflex still purges states untouched for its token expiry, an hour
  (tests/ui/test_restart_ui.py, tests/test_launch.py).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from granian.server import common
from reflex.istate import manager as state_manager
from reflex.utils import prerequisites

_init = common.AbstractServer.__init__


@functools.wraps(_init)
def _respawning_init(self: Any, *args: Any, **kwargs: Any) -> None:
    kwargs["respawn_failed_workers"] = True
    _init(self, *args, **kwargs)


common.AbstractServer.__init__ = _respawning_init  # type: ignore[method-assign]


#: Beside the states: the digest of the code that wrote them.
RELEASE_FILE = ".release"
_SOURCES = Path(__file__).resolve().parent
_reset_states = state_manager.reset_disk_state_manager


def release_digest(sources: Path = _SOURCES) -> str:
    """A digest of every Python source under `sources`, names and contents."""
    digest = hashlib.sha256()
    for path in sorted(sources.rglob("*.py")):
        digest.update(path.relative_to(sources).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def keep_states(states: Path, release: str, reset: Callable[[], None] = _reset_states) -> bool:
    """Keep the states in `states` if the code of `release` wrote them; otherwise `reset`
    them (Reflex's emptying) and mark the folder as `release`'s. Whether they were kept."""
    stamp = states / RELEASE_FILE
    try:
        kept = stamp.read_text() == release
    except OSError:
        kept = False
    if not kept:
        reset()
        states.mkdir(parents=True, exist_ok=True)
        stamp.write_text(release)
    return kept


def _keep_states_of_this_release() -> None:
    """In place of Reflex's emptying of the states folder at `reflex run`."""
    keep_states(prerequisites.get_states_dir(), release_digest())


state_manager.reset_disk_state_manager = _keep_states_of_this_release

if __name__ == "__main__":
    from reflex.reflex import cli

    cli()

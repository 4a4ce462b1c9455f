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
  forms: a restart lost their drafts. The folder is kept. Reflex still drops a stored state
  whose shape this version of the app no longer has, and states untouched for its token
  expiry (an hour), so a new release starts those tabs afresh (tests/ui/test_restart_ui.py).
"""

from __future__ import annotations

import functools
from typing import Any

from granian.server import common
from reflex.istate import manager as state_manager

_init = common.AbstractServer.__init__


@functools.wraps(_init)
def _respawning_init(self: Any, *args: Any, **kwargs: Any) -> None:
    kwargs["respawn_failed_workers"] = True
    _init(self, *args, **kwargs)


common.AbstractServer.__init__ = _respawning_init  # type: ignore[method-assign]


def _keep_states() -> None:
    """In place of Reflex's emptying of the states folder at `reflex run`."""


state_manager.reset_disk_state_manager = _keep_states

if __name__ == "__main__":
    from reflex.reflex import cli

    cli()

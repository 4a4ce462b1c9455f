"""`reflex …`, with granian replacing a backend worker that dies: how the app is served.

`python -m chat_app.launch run --env prod --single-port` in place of `reflex run …` (`make run`
does this).

Reflex 0.10.1 builds its granian server without `respawn_failed_workers`, which granian
leaves off by default, and then ONE worker that dies (SIGKILL, out of memory) makes granian
shut the whole server down: every other worker is stopped and `reflex run` exits. With
several workers behind Redis, a worker that dies mid-pause must cost nothing: this launcher
turns that one setting on and changes nothing else (tests/ui/test_many_workers.py kills one).
"""

from __future__ import annotations

import functools
from typing import Any

from granian.server import common

_init = common.AbstractServer.__init__


@functools.wraps(_init)
def _respawning_init(self: Any, *args: Any, **kwargs: Any) -> None:
    kwargs["respawn_failed_workers"] = True
    _init(self, *args, **kwargs)


common.AbstractServer.__init__ = _respawning_init  # type: ignore[method-assign]

if __name__ == "__main__":
    from reflex.reflex import cli

    cli()

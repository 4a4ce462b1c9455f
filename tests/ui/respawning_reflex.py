"""`reflex …` with granian respawning a backend worker that dies (used by test_many_workers).

Run as a script in place of the `reflex` command: `python respawning_reflex.py run --env prod`.

Reflex 0.10.1 builds its granian server without `respawn_failed_workers`, which granian
leaves off by default, and then ONE worker that dies (SIGKILL, out of memory) makes granian
shut the whole server down: every other worker is stopped and `reflex run` exits. A
deployment runs the workers under a supervisor that replaces a dead one; this script is that
supervisor for the test, and changes nothing else.
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

"""`python reuse_build.py FOLDER MODULE ARG...`: `python -m MODULE ARG...` (`reflex`, or
`chat_app.launch`) from a copy of the app in the working folder, building its frontend only
when no earlier copy built the same pages.

Reflex builds the frontend at every `reflex run --env prod` (`bun run export`: Vite, the
prerender, compression), about 5 of the 9 seconds a copy takes to serve on an idle machine and
three times that beside a running browser test; the browser tests serve some forty copies of
the app, most differing from the last only in their settings and port. Here Reflex still
compiles the pages (so a setting that changes what a page is made of is built), and its
`build` step is replaced by `build_or_reuse`: where the compiled sources are the same as
those of the build kept in FOLDER, that build is copied and pointed at this copy's address;
otherwise Reflex builds, and the first build is kept in FOLDER for the next copies. Only the
`env.json` addresses differ between such builds, and each must be found in the bundle, or the
copy is built.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import runpy
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

#: Under `.web`, what is not the compiled pages: the packages, the build's output and its
#: intermediate types, and the files holding this copy's address and start time.
NOT_SOURCES = frozenset({"node_modules", "build", ".react-router", "env.json", "reflex.json"})
DIGEST = "digest"
ENV_JSON = "env.json"
BUILD = "build"


def sources_digest(web: Path) -> str:
    """A digest of the compiled pages under `web` (names and contents)."""
    digest = hashlib.sha256()
    for folder, subfolders, files in os.walk(web):
        here = Path(folder)
        if here == web:
            subfolders[:] = [name for name in subfolders if name not in NOT_SOURCES]
            files = [name for name in files if name not in NOT_SOURCES]
        subfolders.sort()
        for name in sorted(files):
            path = here / name
            digest.update(path.relative_to(web).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _addresses(env_json: Path) -> dict[str, str]:
    return {k: v for k, v in json.loads(env_json.read_text()).items() if isinstance(v, str)}


def reuse(kept: Path, web: Path) -> bool:
    """Copy the build in `kept` into `web`, its addresses replaced by `web`'s own; whether
    it could be (every address that differs was found in the bundle)."""
    old, new = _addresses(kept / ENV_JSON), _addresses(web / ENV_JSON)
    moves = [(old[k].encode(), new[k].encode()) for k in old if new.get(k, old[k]) != old[k]]
    target = web / BUILD
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(kept / BUILD, target)
    found: set[bytes] = set()
    for path in target.rglob("*"):
        if not path.is_file() or path.suffix not in (".js", ".html", ".json"):
            continue
        data = changed = path.read_bytes()
        for before, after in moves:
            if before in changed:
                found.add(before)
                changed = changed.replace(before, after)
        if changed != data:
            path.write_bytes(changed)
            _compressed_again(path, changed)
    if found != {before for before, _ in moves}:
        shutil.rmtree(target, ignore_errors=True)
        return False
    return True


def _compressed_again(path: Path, data: bytes) -> None:
    """The file's pre-compressed siblings made from `data` (gzip, the app's only format;
    another is removed, so the server sends the file itself)."""
    for sibling in path.parent.glob(path.name + ".*"):
        if sibling.suffix == ".gz":
            sibling.write_bytes(gzip.compress(data, mtime=0))
        else:
            sibling.unlink()


def keep(web: Path, kept: Path, digest: str) -> None:
    """Keep `web`'s fresh build in `kept` for the copies after it (the digest written last:
    a folder without one holds nothing usable)."""
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    shutil.copytree(web / BUILD, kept / BUILD)
    shutil.copy2(web / ENV_JSON, kept / ENV_JSON)
    (kept / DIGEST).write_text(digest)


def build_or_reuse(kept: Path, web: Path, build: Callable[[], None]) -> None:
    """Reflex's `build` for the pages compiled in `web`, or the build kept in `kept`."""
    digest = sources_digest(web)
    stored = kept / DIGEST
    if stored.exists() and stored.read_text() == digest and reuse(kept, web):
        print(f"Reused the frontend built in {kept}", flush=True)
        return
    build()
    if not stored.exists():
        keep(web, kept, digest)


def main() -> None:
    kept, module, *args = sys.argv[1:]
    # Run from the copy: its `chat_app`, not this folder's modules, is the one imported.
    sys.path[0] = os.getcwd()
    from reflex.utils import build, prerequisites

    real = build.build
    build.build = lambda: build_or_reuse(Path(kept), prerequisites.get_web_dir(), real)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

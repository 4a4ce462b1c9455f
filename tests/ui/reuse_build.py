"""`python reuse_build.py FOLDER MODULE ARG...`: `python -m MODULE ARG...` (`reflex`, or
`chat_app.launch`) from a copy of the app in the working folder, building its frontend only
when no earlier copy built the same pages.

Reflex builds the frontend at every `reflex run --env prod` (`bun run export`: Vite, the
prerender, compression), about 5 of the 9 seconds a copy takes to serve on an idle machine and
three times that beside a running browser test; the browser tests serve some thirty copies of
the app, most differing from the last only in their settings and port. Here Reflex still
compiles the pages (so a setting that changes what a page is made of is built), and its
`build` step is replaced by `build_or_reuse`: where the compiled sources are the same as
those of the build kept in FOLDER, that build is copied and pointed at this copy's address;
otherwise Reflex builds, and the first build is kept in FOLDER for the next copies. Only the
`env.json` addresses differ between such builds, and each must be found in the bundle, or the
copy is built.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
import runpy
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

#: Under `.web`, what is not the compiled pages: the packages, the build's output and its
#: intermediate types, and the files holding this copy's address and start time.
NOT_SOURCES = frozenset({"node_modules", "build", ".react-router", "env.json", "reflex.json"})
#: Settings the build reads itself rather than from `.web`: Vite's, and Reflex's frontend
#: ones (not all `REFLEX_`: Reflex puts each copy's port there too).
BUILD_SETTINGS = frozenset({
    "REFLEX_ENV_MODE", "REFLEX_FRONTEND_PATH", "REFLEX_FRONTEND_COMPRESSION_FORMATS",
    "REFLEX_NO_AUTOPREFIXER",
})  # fmt: skip
#: The pre-compressed copies Reflex may write beside a file (`frontend_compression_formats`).
COMPRESSED = (".gz", ".br", ".zst")
DIGEST = "digest"
ENV_JSON = "env.json"
BUILD = "build"


def sources_digest(web: Path, environ: Mapping[str, str] = os.environ) -> str:
    """A digest of the compiled pages under `web` (names and contents, each length first),
    of the app's `rxconfig.py` beside it and of the settings the build reads from
    `environ`."""
    digest = hashlib.sha256()

    def add(data: bytes) -> None:
        digest.update(len(data).to_bytes(8, "big") + data)

    for name in sorted(environ):
        if name.startswith("VITE_") or name in BUILD_SETTINGS:
            add(f"{name}={environ[name]}".encode())
    config = web.parent / "rxconfig.py"
    add(config.read_bytes() if config.exists() else b"")
    for folder, subfolders, files in os.walk(web, followlinks=True):
        here = Path(folder)
        if here == web:
            subfolders[:] = [name for name in subfolders if name not in NOT_SOURCES]
            files = [name for name in files if name not in NOT_SOURCES]
        subfolders.sort()
        for name in sorted(files):
            path = here / name
            add(path.relative_to(web).as_posix().encode())
            add(path.read_bytes())
    return digest.hexdigest()


def _moves(kept_env: Path, web_env: Path) -> list[tuple[bytes, bytes]] | None:
    """The addresses to replace to make the kept build this copy's: each value of the kept
    `env.json` that differs; None when more than the host and port differ (another transport,
    a key more or less: a build of other settings)."""
    old, new = json.loads(kept_env.read_text()), json.loads(web_env.read_text())
    old_host, new_host = urlsplit(old["PING"]).netloc, urlsplit(new["PING"]).netloc
    if json.loads(kept_env.read_text().replace(old_host, new_host)) != new:
        return None
    return [(old[key].encode(), new[key].encode()) for key in old if old[key] != new[key]]


def reuse(kept: Path, web: Path) -> bool:
    """Copy the build in `kept` into `web`, its addresses replaced by `web`'s own; whether
    it could be (nothing but the address differs, each old address was found, and no file
    names the old host after)."""
    moves = _moves(kept / ENV_JSON, web / ENV_JSON)
    if moves is None:
        return False
    old_host = urlsplit(json.loads((kept / ENV_JSON).read_text())["PING"]).netloc.encode()
    target = web / BUILD
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(kept / BUILD, target)
    found: set[bytes] = set()
    left: list[Path] = []
    for path in target.rglob("*"):
        if not path.is_file() or path.suffix in COMPRESSED:
            continue
        data = changed = path.read_bytes()
        for before, after in moves:
            if before in changed:
                found.add(before)
                changed = changed.replace(before, after)
        if changed != data:
            path.write_bytes(changed)
            _compressed_again(path, changed)
        if moves and old_host in changed:
            left.append(path)
    if left or found != {before for before, _ in moves}:
        shutil.rmtree(target, ignore_errors=True)
        return False
    return True


def _compressed_again(path: Path, data: bytes) -> None:
    """The file's pre-compressed copies made from `data` (gzip, the app's only format;
    another is removed, so the server sends the file itself)."""
    for suffix in COMPRESSED:
        copy = path.with_name(path.name + suffix)
        if not copy.exists():
            continue
        if suffix == ".gz":
            copy.write_bytes(gzip.compress(data, mtime=0))
        else:
            copy.unlink()


def keep(web: Path, kept: Path, digest: str) -> None:
    """Keep `web`'s fresh build in `kept` for the copies after it (the digest written last:
    a folder without one holds nothing usable). Under the caller's `_locked`."""
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    shutil.copytree(web / BUILD, kept / BUILD)
    shutil.copy2(web / ENV_JSON, kept / ENV_JSON)
    (kept / DIGEST).write_text(digest)


@contextmanager
def _locked(kept: Path) -> Iterator[None]:
    """`kept` to this process alone: the test processes of a run share it, and one may be
    keeping its build while another copies it."""
    kept.parent.mkdir(parents=True, exist_ok=True)
    with open(kept.with_name(kept.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_or_reuse(kept: Path, web: Path, build: Callable[[], None]) -> None:
    """Reflex's `build` for the pages compiled in `web`, or the build kept in `kept`. The
    build itself runs unlocked: another process's copy of other pages need not wait."""
    digest = sources_digest(web)
    stored = kept / DIGEST
    with _locked(kept):
        if stored.exists() and stored.read_text() == digest and reuse(kept, web):
            print(f"Reused the frontend built in {kept}", flush=True)
            return
    build()
    with _locked(kept):
        if not stored.exists():
            keep(web, kept, digest)


def main() -> None:
    kept, module, *args = sys.argv[1:]
    # Run from the copy: its `chat_app`, not this folder's modules, is the one imported.
    here = Path(__file__).resolve().parent
    if sys.path and sys.path[0] and Path(sys.path[0]).resolve() == here:
        sys.path[0] = os.getcwd()
    else:  # `python -P`: the script's folder is not on the path
        sys.path.insert(0, os.getcwd())
    from reflex.utils import build, prerequisites

    real = build.build
    build.build = lambda: build_or_reuse(Path(kept), prerequisites.get_web_dir(), real)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

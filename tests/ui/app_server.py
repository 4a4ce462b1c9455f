"""The real app, built and served for the browser tests and the browser benchmark.

Owns `served_app` (the app in production single-port mode, in its own process group, waited
for until `/ping` and `/` answer), `copy_app` (the work tree's app files, for a build of its
own), `app_env` (what the Makefile exports) and the Chromium settings. Plain functions: a
failure is `AppDidNotStart` with the log's tail, which the pytest fixtures turn into a test
failure and the benchmark reports as is.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from tests.live_server import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT = float(os.environ.get("CHAT_APP_UI_START_TIMEOUT", "600"))
#: `reflex run`, as the tests and benchmark serve the app (the launcher adds worker respawn).
REFLEX = "reflex"
#: As `make run` serves it: `reflex run` with worker respawn and pages' state kept across a
#: restart (`chat_app.launch`).
LAUNCHER = "chat_app.launch"
#: Runs either with the frontend built only when no earlier copy built the same pages.
REUSE_BUILD = Path(__file__).resolve().with_name("reuse_build.py")
#: Where the build `reuse_build.py` reuses is kept (the UI tests' conftest sets it per test
#: process); None: every copy is built.
builds_kept_in: Path | None = None


class AppDidNotStart(RuntimeError):
    """The app exited or did not serve in time; the message ends with its log's tail."""


def get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read().decode("utf-8", "replace")


def app_env() -> dict[str, str]:
    """Environment for `reflex run`, matching what the Makefile exports."""
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)  # Reflex treats this as "inside a unit test"
    env["REFLEX_TELEMETRY_ENABLED"] = "false"
    env["REFLEX_CHECK_LATEST_VERSION"] = "false"
    # Sealed, with a ledger, as deployed; the secret and ledger live outside the checkout.
    if "CHAT_APP_DATA_DIR" not in env:
        data_dir = env["CHAT_APP_DATA_DIR"] = tempfile.mkdtemp(prefix="chat-app-data-")
        atexit.register(shutil.rmtree, data_dir, ignore_errors=True)
    bun_bin = REPO_ROOT / "tools" / "bun" / "node_modules" / ".bin"
    if (bun_bin / "bun").exists():
        env["PATH"] = f"{bun_bin}{os.pathsep}{env.get('PATH', '')}"
        env["REFLEX_USE_SYSTEM_BUN"] = "1"
    return env


_LEFT_OUT = ("tests/", "tools/", "docs/", "benchmarks/")


def copy_app(target: Path) -> None:
    """The app's files as they are in the work tree (new ones too) copied to `target`."""
    listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    files = subprocess.run(listing, cwd=REPO_ROOT, check=True, capture_output=True)
    for name in sorted(set(filter(None, files.stdout.decode().split("\0")))):
        source = REPO_ROOT / name
        if source.is_file() and not name.startswith(_LEFT_OUT):
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def log_tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End the process and its group (the app's workers), politely first."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


#: What react-router's build prints when its prerender of `/` outlasts its 10 s limit: the
#: build's own server answering slowly on a loaded machine, not the app failing.
PRERENDER_TIMED_OUT = "Prerender: Request failed for /: The operation timed out"


@contextmanager
def served_app(
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    *,
    module: str = REFLEX,
    timeout: float = START_TIMEOUT,
    port: int | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`python -m module run --env prod --single-port` from `cwd` on `port` (a free one by
    default; a restart keeps the pages' origin only on the same one), its frontend the one
    kept in `builds_kept_in` where that has the same pages; yield its base URL and process
    once `/ping` and `/` answer. A build whose prerender timed out is run once more; any
    other failure is `AppDidNotStart`."""
    port = port or free_port()
    kept = builds_kept_in
    runner = ["-m", module] if kept is None else [str(REUSE_BUILD), str(kept), module]
    cmd = [sys.executable, *runner, "run", "--env", "prod", "--single-port",
           "--backend-port", str(port)]  # fmt: skip
    for attempt in (1, 2):
        proc = _start(cmd, cwd, env, log_path)
        try:
            _wait_until_served(proc, cmd, port, log_path, timeout)
        except BaseException as error:
            stop(proc)
            again = isinstance(error, AppDidNotStart) and attempt == 1
            if again and PRERENDER_TIMED_OUT in log_path.read_text(errors="replace"):
                kept = log_path.with_suffix(".prerender-timed-out.log")
                log_path.replace(kept)
                print(f"The build's prerender timed out ({kept}); building again", file=sys.stderr)
                continue
            raise
        break
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:
        stop(proc)


def _start(
    cmd: Sequence[str], cwd: Path, env: dict[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so `stop` reaps the workers too
        )  # fmt: skip


def _wait_until_served(
    proc: subprocess.Popen[bytes], cmd: Sequence[str], port: int, log_path: Path, timeout: float
) -> None:
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    while True:
        if proc.poll() is not None:
            raise AppDidNotStart(
                f"`{' '.join(cmd)}` exited with code {proc.returncode} before serving.\n"
                f"Log tail ({log_path}):\n{log_tail(log_path)}"
            )
        try:
            ping, page = get(f"{base}/ping"), get(f"{base}/")
            if ping[0] == 200 and "pong" in ping[1] and page[0] == 200:
                return
        except OSError:  # not listening yet (URLError and timeouts are OSErrors too)
            pass
        if time.monotonic() - started > timeout:
            raise AppDidNotStart(
                f"The app did not answer /ping and / within {timeout:.0f} s.\n"
                f"Log tail ({log_path}):\n{log_tail(log_path)}"
            )
        time.sleep(0.5)


T = TypeVar("T")


def run_on_own_loop(steps: Coroutine[Any, Any, T]) -> T:
    """Run `steps` on a loop and thread of their own: the session's sync Playwright fixtures
    own this thread's loop. In this thread's context: Reflex keeps its registry of states in
    a context variable."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(contextvars.copy_context().run, asyncio.run, steps).result()

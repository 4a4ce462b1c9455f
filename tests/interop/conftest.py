"""Fixtures for differential tests against the real ``@tanstack/ai`` npm package.

``wire_oracle`` starts ``node tests/interop/js/wire_oracle.mjs`` once per session and talks
to it over JSON lines (see the protocol comment at the top of that script).  Requests are
sent with ``ensure_ascii=True`` so lone surrogates travel as ``\\udxxx`` escapes, and the
answers are parsed with :func:`json.loads`, which turns those escapes back into lone
surrogates.

The Node dependencies are pinned in ``tests/interop/js/package-lock.json``; install them
with ``npm ci --prefix tests/interop/js``.  A missing install fails the session loudly: a
differential test that silently skips proves nothing.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

JS_DIR = Path(__file__).resolve().parent / "js"
ORACLE_SCRIPT = JS_DIR / "wire_oracle.mjs"
INSTALL_HINT = "run `npm ci --prefix tests/interop/js` (from the repository root)"

#: Seconds to wait for any single answer before declaring the node process dead/hung.
ANSWER_TIMEOUT = float(os.environ.get("WIRE_ORACLE_TIMEOUT", "30"))

_EOF = object()


class WireOracleError(RuntimeError):
    """The node oracle died, hung, or answered something that is not a library outcome."""


class WireOracle:
    """A JSON-lines client for ``wire_oracle.mjs``.

    ``call(op, **fields)`` sends one request and returns its answer (a dict with ``ok`` and
    either the op's result fields or ``error``).  ``call_many(requests)`` writes a whole
    batch before reading the answers, which is what keeps thousands of hypothesis examples
    fast.
    """

    def __init__(self, argv: Sequence[str], cwd: Path) -> None:
        env = dict(os.environ)
        env["TZ"] = "UTC"  # Date.parse of local-time forms must not depend on the machine.
        self._proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        self._answers: queue.Queue[object] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=200)
        self._next_id = 0
        self._lock = threading.Lock()
        self._dead: str | None = None
        threading.Thread(target=self._pump_stdout, name="wire-oracle-stdout", daemon=True).start()
        threading.Thread(target=self._pump_stderr, name="wire-oracle-stderr", daemon=True).start()

    # -- plumbing -------------------------------------------------------------------------

    def _pump_stdout(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            self._answers.put(raw)
        self._answers.put(_EOF)

    def _pump_stderr(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            self._stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def _fail(self, why: str) -> WireOracleError:
        self._dead = why
        self.close()
        tail = "\n".join(self._stderr) or "(no stderr)"
        return WireOracleError(f"wire oracle {why}; node stderr:\n{tail}")

    def _write(self, payload: bytes) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(payload)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise self._fail(f"stdin closed ({exc!r})") from exc

    # -- public API -------------------------------------------------------------------------

    def call_many(self, requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Send every request, then return the answers in request order."""
        if not requests:
            return []
        with self._lock:
            if self._dead is not None:
                raise WireOracleError(f"wire oracle is unusable: {self._dead}")
            ids: list[int] = []
            lines: list[str] = []
            for request in requests:
                self._next_id += 1
                ids.append(self._next_id)
                message = {**request, "id": self._next_id}
                # ensure_ascii=True: lone surrogates become \udxxx escapes, never raw bytes.
                lines.append(json.dumps(message, ensure_ascii=True, allow_nan=False))
            writer_error: list[BaseException] = []

            def write_all() -> None:
                try:
                    self._write(("\n".join(lines) + "\n").encode("ascii"))
                except BaseException as exc:  # re-raised below, on the test's thread
                    writer_error.append(exc)

            # Write on a helper thread so a huge batch cannot deadlock against a full
            # stdout pipe; the stdout pump keeps draining answers meanwhile.
            writer = threading.Thread(target=write_all, name="wire-oracle-stdin", daemon=True)
            writer.start()
            answers: list[dict[str, Any]] = []
            for expected_id in ids:
                try:
                    raw = self._answers.get(timeout=ANSWER_TIMEOUT)
                except queue.Empty:
                    raise self._fail(f"gave no answer within {ANSWER_TIMEOUT}s") from None
                if raw is _EOF:
                    code = self._proc.poll()
                    raise self._fail(f"exited (code {code}) before answering")
                assert isinstance(raw, bytes)
                answer = json.loads(raw.decode("utf-8"))
                if answer.get("id") != expected_id:
                    raise self._fail(f"answered id {answer.get('id')!r}, expected {expected_id}")
                answers.append(answer)
            writer.join(timeout=ANSWER_TIMEOUT)
            if writer_error:
                raise writer_error[0]
        for request, answer in zip(requests, answers, strict=True):
            if answer.get("oracleError"):
                raise WireOracleError(f"oracle could not handle {request!r}: {answer['error']}")
        return answers

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        return self.call_many([{"op": op, **fields}])[0]

    def close(self) -> None:
        proc = self._proc
        if proc.poll() is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(timeout=5)


@pytest.fixture(scope="session")
def wire_oracle() -> Iterator[WireOracle]:
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"`node` is not on PATH; install Node 20 and {INSTALL_HINT}", pytrace=False)
    if not (JS_DIR / "node_modules" / "@tanstack" / "ai" / "package.json").is_file():
        pytest.fail(
            f"tests/interop/js/node_modules is missing or incomplete; {INSTALL_HINT}",
            pytrace=False,
        )
    oracle = WireOracle([node, str(ORACLE_SCRIPT)], cwd=JS_DIR)
    try:
        info = oracle.call("info")
    except WireOracleError as exc:
        oracle.close()
        pytest.fail(f"wire oracle failed to start ({exc}); {INSTALL_HINT}", pytrace=False)
    versions = info["result"]["versions"]
    expected = {
        "@tanstack/ai": "0.58.0",
        "@tanstack/ai-client": "0.33.2",
        "@ag-ui/core": "1.0.0",
        "@ag-ui/client": "1.0.0",
        "zod": "4.6.7",
    }
    if versions != expected:
        oracle.close()
        pytest.fail(
            f"installed npm versions {versions} != pinned {expected}; {INSTALL_HINT}", pytrace=False
        )
    try:
        yield oracle
    finally:
        oracle.close()

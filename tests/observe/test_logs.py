"""JSON log lines (`CHAT_APP_LOG_FORMAT=json`): each record one JSON object on stderr, with the
call's extras, the exception, the current span's ids, and the HTTP servers' own lines too.

Each case runs in a fresh interpreter: it sets up the root logger and the servers' loggers,
which the test process must keep as they are.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from chat_app.observe import Seldom, configure_logging, server_log_config
from tests.server.process_app import first_log_line, start_log

ROOT = Path(__file__).resolve().parents[2]


def stderr_of(code: str, **env: str) -> list[str]:
    """Run `code` in a fresh interpreter with `env`; the lines it wrote to stderr."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CHAT_APP_LOG_")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


def json_lines(code: str, **env: str) -> list[dict[str, Any]]:
    lines = stderr_of(code, **env)
    parsed = []
    for line in lines:
        value = json.loads(line)  # every line is JSON, or this fails naming it
        assert isinstance(value, dict), line
        parsed.append(value)
    return parsed


def test_json_lines_carry_time_level_logger_message_extras_and_the_exception() -> None:
    [info, warning, error] = json_lines(
        """
        import logging, os
        from chat_app.observe import configure_logging
        configure_logging(os.environ)
        configure_logging(os.environ)  # again: still one line per record
        log = logging.getLogger("chat_app.desk")
        log.info("decided %s", "d1", extra={"decision_id": "d1", "wait_seconds": 4.5})
        log.debug("not at INFO")
        log.warning("ünïcode stays")
        try:
            1 / 0
        except ZeroDivisionError:
            log.exception("failed", extra={"thread_id": "t1"})
        """,
        CHAT_APP_LOG_FORMAT="json",
    )
    assert list(info) == [
        "time", "level", "logger", "pid", "message", "decision_id", "wait_seconds",
    ]  # fmt: skip
    # The process that wrote it (several workers write to one stream), on every line.
    assert isinstance(info["pid"], int) and info["pid"] not in (0, os.getpid())
    assert info["time"].endswith("Z") and info["time"][:2] == "20"
    assert (info["level"], info["logger"], info["message"]) == (
        "INFO",
        "chat_app.desk",
        "decided d1",
    )
    assert (info["decision_id"], info["wait_seconds"]) == ("d1", 4.5)
    assert warning["level"] == "WARNING"
    assert warning["message"] == "ünïcode stays"
    assert (error["level"], error["thread_id"]) == ("ERROR", "t1")
    assert error["exception"].startswith("Traceback") and "ZeroDivisionError" in error["exception"]
    assert "trace_id" not in info


def test_a_current_span_puts_its_ids_on_the_line_and_the_level_is_read() -> None:
    [line] = json_lines(
        """
        import logging, os
        from opentelemetry import trace
        from chat_app.observe import configure_logging
        configure_logging(os.environ)
        context = trace.SpanContext(0xABC, 0xDEF, is_remote=False)
        with trace.use_span(trace.NonRecordingSpan(context)):
            logging.getLogger("x").debug("inside")
        """,
        CHAT_APP_LOG_FORMAT="JSON",
        CHAT_APP_LOG_LEVEL="debug",
    )
    assert line["message"] == "inside" and line["level"] == "DEBUG"
    assert (line["trace_id"], line["span_id"]) == (f"{0xABC:032x}", f"{0xDEF:016x}")


def test_uvicorns_lines_are_json_before_and_after_it_configures_its_loggers() -> None:
    lines = json_lines(
        """
        import logging, logging.config, os
        from uvicorn.config import LOGGING_CONFIG
        from chat_app.observe import configure_logging, server_log_config
        # uvicorn configured first (an app imported by the server), then ours.
        logging.config.dictConfig(LOGGING_CONFIG)
        configure_logging(os.environ)
        logging.getLogger("uvicorn.error").info("Started server process [%d]", 1)
        # ours first, then uvicorn applying what the entry point passes it as log_config.
        logging.config.dictConfig(server_log_config(os.environ))
        logging.getLogger("uvicorn.access").info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", "/metrics", "1.1", 200
        )
        logging.getLogger("chat_app").info("ours")
        """,
        CHAT_APP_LOG_FORMAT="json",
    )
    assert [(line["logger"], line["message"]) for line in lines] == [
        ("uvicorn.error", "Started server process [1]"),
        ("uvicorn.access", '127.0.0.1:5 - "GET /metrics HTTP/1.1" 200'),
        ("chat_app", "ours"),
    ]
    assert "color_message" not in lines[0]


def test_a_granian_worker_started_afresh_writes_json_from_its_dictconfig() -> None:
    [line] = json_lines(
        """
        import logging, os
        from granian.log import LogLevels, configure_logging
        from chat_app.observe import server_log_config
        configure_logging(LogLevels.info, server_log_config(os.environ))
        logging.getLogger("_granian").info("Spawning worker-1")
        """,
        CHAT_APP_LOG_FORMAT="json",
    )
    assert (line["logger"], line["message"], line["level"]) == (
        "_granian", "Spawning worker-1", "INFO"
    )  # fmt: skip


def test_text_changes_nothing() -> None:
    lines = stderr_of(
        """
        import logging, os
        from chat_app.observe import configure_logging
        logging.basicConfig(format="%(levelname)s %(message)s")
        configure_logging(os.environ)
        logging.getLogger("x").warning("plain")
        """
    )
    assert lines == ["WARNING plain"]
    assert server_log_config({}) is None
    assert server_log_config({"CHAT_APP_LOG_FORMAT": "text"}) is None


def test_text_writes_the_apps_info_lines_where_nobody_set_up_a_handler() -> None:
    """As `make run` starts the app: no handler anywhere. The app's lines come with their
    level (INFO by default); a library's INFO stays out, its warning as Python writes it."""
    code = """
        import logging, os
        from chat_app.observe import configure_logging
        configure_logging(os.environ)
        logging.getLogger("chat_app.desk").info("sign-in: demo")
        logging.getLogger("chat_app").debug("not at INFO")
        logging.getLogger("somelib").info("chatter")
        logging.getLogger("somelib").warning("careful")
        """
    assert stderr_of(code) == ["INFO:     sign-in: demo", "careful"]
    assert stderr_of(code, CHAT_APP_LOG_LEVEL="warning") == ["careful"]


def test_a_format_or_level_that_is_neither_is_refused_naming_the_variable() -> None:
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    with pytest.raises(ValueError) as refused:
        configure_logging({"CHAT_APP_LOG_FORMAT": "yaml"})
    assert str(refused.value) == (
        "CHAT_APP_LOG_FORMAT='yaml' is not a log format; use text or json."
    )
    with pytest.raises(ValueError, match="^CHAT_APP_LOG_LEVEL='loud' is not a log level"):
        configure_logging({"CHAT_APP_LOG_FORMAT": "json", "CHAT_APP_LOG_LEVEL": "loud"})
    with pytest.raises(ValueError, match="CHAT_APP_LOG_FORMAT"):
        server_log_config({"CHAT_APP_LOG_FORMAT": "yaml"})
    assert (list(root.handlers), root.level) == before  # a refusal changes nothing


#: Reflex's own `emit_update` for a tab that has closed, as a reply streaming on calls it.
UPDATES_TO_CLOSED_TABS = """
    import asyncio, os
    from chat_app.observe import configure_logging
    configure_logging(os.environ)
    import reflex as rx
    from reflex.app import EventNamespace
    from reflex.state import StateUpdate

    async def main():
        events = EventNamespace("/_event", rx.App())
        for token in ("tab-1", "tab-1", "tab-1", "tab-2", "tab-1"):
            await events.emit_update(StateUpdate(delta={}), token)

    asyncio.run(main())
    """


def test_reflexs_warning_of_a_closed_tab_comes_once_per_tab_not_once_a_token() -> None:
    said = "Attempting to send delta to disconnected client"
    assert stderr_of(UPDATES_TO_CLOSED_TABS) == [f"{said} 'tab-1'", f"{said} 'tab-2'"]
    debugged = stderr_of(UPDATES_TO_CLOSED_TABS, CHAT_APP_LOG_LEVEL="debug")
    assert [line for line in debugged if line.startswith(said)] == [
        f"{said} 'tab-{n}'" for n in (1, 1, 1, 2, 1)
    ]


def test_a_seldom_line_is_written_again_once_its_time_has_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    each_minute, once, kept_two = Seldom(every=60.0), Seldom(), Seldom(every=60.0, keep=2)
    written = []
    for at in (0.0, 30.0, 59.9, 60.0, 61.0, 120.0):
        now[0] = 100.0 + at
        written.append((each_minute.first("refused"), once.first("refused")))
    assert written == [(True, True), (False, False), (False, False), (True, False),
                       (False, False), (True, False)]  # fmt: skip
    assert each_minute.first("another") is True  # each key on its own
    for key in ("a", "b", "c"):
        assert kept_two.first(key)
    assert kept_two.first("a") is True  # forgotten: only the last two are remembered
    assert kept_two.first("c") is False


#: Alembic's lines at every start, under a root that writes INFO (as a host app's may).
ALEMBIC_AT_START = """
    import logging, os
    from chat_app.observe import configure_logging
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    configure_logging(os.environ)
    migration = logging.getLogger("alembic.runtime.migration")
    migration.info("Context impl SQLiteImpl.")
    migration.warning("Revision x is present more than once.")
    logging.getLogger("chat_app").info("ours")
    """


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_alembics_info_lines_are_left_out_and_its_warnings_kept(log_format: str) -> None:
    lines = stderr_of(ALEMBIC_AT_START, CHAT_APP_LOG_FORMAT=log_format)
    messages = [json.loads(line)["message"] for line in lines] if log_format == "json" else lines
    assert messages == ["Revision x is present more than once.", "ours"]


def test_at_debug_alembics_info_lines_are_written() -> None:
    lines = json_lines(ALEMBIC_AT_START, CHAT_APP_LOG_FORMAT="json", CHAT_APP_LOG_LEVEL="debug")
    assert [line["message"] for line in lines] == [
        "Context impl SQLiteImpl.", "Revision x is present more than once.", "ours"
    ]  # fmt: skip


def test_the_servers_first_json_line_says_which_sign_in_is_on(tmp_path: Path) -> None:
    """Its first start migrates a new database: Alembic's lines do not come before it."""
    first = json.loads(first_log_line(tmp_path / "data", CHAT_APP_LOG_FORMAT="json"))
    assert (first["level"], first["logger"], first["message"]) == (
        "INFO", "chat_app.server", "sign-in: none \u2014 anyone who can reach this port can "
        "answer any pause"
    )  # fmt: skip


#: httpx's line for each request names its whole URL: a webhook's can be its secret.
HTTPX_REQUEST = """
    import logging, os
    from chat_app.observe import configure_logging
    configure_logging(os.environ)
    logging.getLogger("httpx").info(
        'HTTP Request: POST https://hooks.example/services/T0/B0/SECRET "HTTP/1.1 200 OK"'
    )
    logging.getLogger("httpx").warning("a warning")
    logging.getLogger("chat_app").info("ours")
    """


@pytest.mark.parametrize("level", ["info", "debug"])
def test_httpx_request_lines_with_their_urls_are_left_out_at_every_level(level: str) -> None:
    lines = json_lines(HTTPX_REQUEST, CHAT_APP_LOG_FORMAT="json", CHAT_APP_LOG_LEVEL=level)
    assert [line["message"] for line in lines] == ["a warning", "ours"]


def test_an_access_log_its_server_turned_off_stays_off() -> None:
    """A worker of `--workers N` builds the app (and sets up logging) after uvicorn has set
    up its own without the access log: that log stays off."""
    lines = json_lines(
        """
        import logging, logging.config, os
        from chat_app.observe import configure_logging, server_log_config
        logging.config.dictConfig(server_log_config(os.environ))
        access = logging.getLogger("uvicorn.access")
        access.handlers, access.propagate = [], False  # uvicorn.Config(access_log=False)
        configure_logging(os.environ)
        access.info('127.0.0.1:5 - "GET / HTTP/1.1" 200')
        logging.getLogger("uvicorn.error").info("Started server process [1]")
        """,
        CHAT_APP_LOG_FORMAT="json",
    )
    assert [line["logger"] for line in lines] == ["uvicorn.error"]


def test_the_standalone_servers_own_lines_follow_the_level_asked_for() -> None:
    lines = stderr_of(
        """
        import logging
        from chat_app.server.__main__ import _configure_logs
        _configure_logs()
        logging.getLogger("chat_app.server").info("starting")
        logging.getLogger("chat_app.desk").warning("a warning")
        """,
        CHAT_APP_LOG_LEVEL="warning",
    )
    assert lines == ["WARNING:     a warning"]


def test_the_standalone_server_starts_at_the_lowest_level(tmp_path: Path) -> None:
    """uvicorn is given the level as a number: by name it refuses "notset" (and stops)."""
    lines = start_log(tmp_path, {"CHAT_APP_LOG_LEVEL": "notset"}, until=_started_or_stopped)
    assert any("Application startup complete" in line for line in lines), lines


def _started_or_stopped(line: str) -> bool:
    return "Application startup complete" in line or "Error" in line

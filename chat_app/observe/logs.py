"""Log lines as JSON (`CHAT_APP_LOG_FORMAT=json`), one object per line on stderr, for a log
pipeline to read without parsing prose.

Each line has `time` (ISO 8601, UTC), `level`, `logger`, `message`, `exception` (the
traceback's text) when there is one, whatever the call passed with `extra=`, and `trace_id` and
`span_id` when a span is current (a continuation run's, `tracing.run_span`), so that a line
leads to its trace.

The HTTP servers configure their own loggers with handlers of their own (uvicorn: `uvicorn`,
`uvicorn.access`; granian: `_granian`, `granian.access`), which would keep their lines as
text: `configure_logging` strips those handlers and lets the loggers propagate to the root's,
and `server_log_config` is the same as a `dictConfig` for a server to apply when it starts
(uvicorn's `log_config=`, granian's `log_dictconfig=`), since both re-apply their own then.

Imports nothing of ours.
"""

from __future__ import annotations

import logging
import logging.config
import sys
import threading
import time
from collections.abc import Hashable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, TextIO, TypeAlias, get_args

from opentelemetry import trace
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

__all__ = [
    "LOG_FORMATS",
    "LOG_FORMAT_ENV",
    "LOG_LEVEL_ENV",
    "QUIET_LOGGERS",
    "REPEATING",
    "SERVER_LOGGERS",
    "URL_LOGGERS",
    "JsonLines",
    "LogFormat",
    "OnceEach",
    "Seldom",
    "configure_logging",
    "log_level",
    "server_log_config",
]

LogFormat: TypeAlias = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = get_args(LogFormat)
LOG_FORMAT_ENV = "CHAT_APP_LOG_FORMAT"
LOG_LEVEL_ENV = "CHAT_APP_LOG_LEVEL"
#: The app's own loggers' parent.
APP_LOGGER = "chat_app"
#: The loggers uvicorn and granian give handlers of their own.
SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "_granian", "granian.access")
#: Libraries whose INFO lines are chatter to an operator: Alembic names each plugin it sets up
#: and each step of the migrations at every start, before the app's own first line.
QUIET_LOGGERS = ("alembic",)
#: Libraries whose INFO and DEBUG lines name the URLs they call, whatever the level asked
#: for: a webhook's URL can be its secret (Slack's is), and the app's own lines say a
#: delivery's host alone.
URL_LOGGERS = ("httpx",)
#: Lines a library repeats for each of many events, said once each: Reflex warns of every
#: update it cannot send to a tab that has closed, which a reply streaming on makes one a
#: token.
REPEATING = (("reflex.app", "Attempting to send delta to disconnected client"),)


class Seldom:
    """Which of many repeated log lines to write: the first of each key, and again once
    `every` seconds have passed since it was written (never again with None); the `keep`
    keys last written are remembered, so the cost stays bounded whatever is repeated."""

    def __init__(self, every: float | None = None, *, keep: int = 1000) -> None:
        self.every = every
        self.keep = keep
        self._written: dict[Hashable, float] = {}
        # A logging filter is called from whichever thread logs.
        self._lock = threading.Lock()

    def first(self, key: Hashable) -> bool:
        """Whether to write the line of `key` now (and, if so, remember it written)."""
        now = time.monotonic()
        with self._lock:
            written = self._written.get(key)
            if written is not None and (self.every is None or now - written < self.every):
                return False
            self._written.pop(key, None)  # moved to the end: the newest is forgotten last
            self._written[key] = now
            if len(self._written) > self.keep:
                del self._written[next(iter(self._written))]
            return True


class OnceEach(logging.Filter):
    """Lets each distinct line that starts with `prefix` through once (the `keep` last let
    through remembered), and every other line."""

    def __init__(self, prefix: str, *, keep: int = 1000) -> None:
        super().__init__()
        self.prefix = prefix
        self._seldom = Seldom(keep=keep)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not message.startswith(self.prefix) or self._seldom.first(message)

#: uvicorn passes its message again with ANSI colours as an extra; the line has it once.
_NOT_EXTRAS = [*RESERVED_ATTRS, "color_message"]


class JsonLines(JsonFormatter):
    """python-json-logger's formatter with this app's fields, in this order: time, level,
    logger, pid, message, exception, the call's extras, trace_id, span_id."""

    def __init__(self) -> None:
        # ASCII (the JSON encoder's default, \u escapes): a line stays valid JSON whatever
        # stderr's encoding.
        super().__init__(
            ["message"],
            reserved_attrs=_NOT_EXTRAS,
            rename_fields={"exc_info": "exception"},
        )

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        moment = datetime.fromtimestamp(record.created, UTC)
        log_data["time"] = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        log_data["level"] = record.levelname
        log_data["logger"] = record.name
        # Which process: `--workers 2` (and Reflex's workers) write to one stream.
        log_data["pid"] = record.process
        super().add_fields(log_data, record, message_dict)
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            log_data["trace_id"] = trace.format_trace_id(context.trace_id)
            log_data["span_id"] = trace.format_span_id(context.span_id)


class _JsonHandler(logging.StreamHandler[TextIO]):
    """The root's JSON handler (its own class, so that configuring twice replaces it)."""


def _json_handler() -> logging.Handler:
    """A handler writing `JsonLines` to stderr (also `server_log_config`'s factory)."""
    handler = _JsonHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    return handler


def _read_format(environ: Mapping[str, str]) -> LogFormat:
    value = environ.get(LOG_FORMAT_ENV, "").strip().lower() or "text"
    for known in LOG_FORMATS:
        if value == known:
            return known
    raise ValueError(
        f"{LOG_FORMAT_ENV}={environ.get(LOG_FORMAT_ENV)!r} is not a log format; use text or json."
    )


def log_level(environ: Mapping[str, str]) -> int:
    """The level `CHAT_APP_LOG_LEVEL` asks for (INFO when none); a `ValueError` names a
    value that is not a level."""
    level = _read_level(environ)
    return logging.INFO if level is None else level


def _read_level(environ: Mapping[str, str]) -> int | None:
    value = environ.get(LOG_LEVEL_ENV, "").strip().upper()
    if not value:
        return None
    level = logging.getLevelNamesMapping().get(value)
    if level is None:
        raise ValueError(
            f"{LOG_LEVEL_ENV}={environ.get(LOG_LEVEL_ENV)!r} is not a log level; "
            "use DEBUG, INFO, WARNING, ERROR or CRITICAL."
        )
    return level


def configure_logging(environ: Mapping[str, str]) -> None:
    """Set up the root logger as `CHAT_APP_LOG_FORMAT` (`text`, the default, or `json`) and
    `CHAT_APP_LOG_LEVEL` (default INFO) say; a `ValueError` names a value that is neither.

    `text` changes the root's level only when one is given, and the app's own lines
    (`chat_app.*`) are written at that level (INFO by default): through the root's handlers
    when the host has set some up, else to stderr each with its level (Python's last resort
    would write warnings alone, bare, and no INFO line at all). `json` gives the root one
    handler on stderr writing `JsonLines` (console handlers already there would write each
    line a second time, as text: they go; others, such as files, stay) and sends the servers'
    loggers to it. In both, `QUIET_LOGGERS` write their warnings and errors only, and
    `REPEATING`'s lines come once each, unless the level is DEBUG.
    """
    log_format = _read_format(environ)
    level = _read_level(environ)
    root = logging.getLogger()
    _quieten(level)
    _say_once(level)
    if log_format == "text":
        if level is not None:
            root.setLevel(level)
        app = logging.getLogger(APP_LOGGER)
        if not root.handlers and not app.handlers:
            console = logging.StreamHandler()
            console.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
            app.addHandler(console)
            app.propagate = False
        app.setLevel(level if level is not None else logging.INFO)
        return
    for handler in list(root.handlers):
        if isinstance(handler, _JsonHandler) or _writes_to_console(handler):
            root.removeHandler(handler)
    root.addHandler(_json_handler())
    root.setLevel(level if level is not None else logging.INFO)
    for name in SERVER_LOGGERS:
        server_logger = logging.getLogger(name)
        if not server_logger.handlers and not server_logger.propagate:
            continue  # turned off by its server (uvicorn's access log without --access-log)
        for own in list(server_logger.handlers):
            server_logger.removeHandler(own)
        server_logger.propagate = True


def _quieten(level: int | None) -> None:
    """`QUIET_LOGGERS` at WARNING, or as the root says when DEBUG was asked for."""
    debugging = level is not None and level <= logging.DEBUG
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if debugging else logging.WARNING)
    for name in URL_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _say_once(level: int | None) -> None:
    """`REPEATING`'s lines once each, unless the level asked for is DEBUG."""
    debugging = level is not None and level <= logging.DEBUG
    for name, prefix in REPEATING:
        logger = logging.getLogger(name)
        for earlier in [f for f in logger.filters if isinstance(f, OnceEach)]:
            logger.removeFilter(earlier)
        if not debugging:
            logger.addFilter(OnceEach(prefix))


def _writes_to_console(handler: logging.Handler) -> bool:
    consoles = (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__)
    return type(handler) is logging.StreamHandler and any(
        handler.stream is console for console in consoles if console is not None
    )


def server_log_config(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """A `logging.config.dictConfig` for uvicorn (`log_config=`) or granian
    (`log_dictconfig=`) that keeps their lines in this app's format, or `None` with `text`
    (for the server to use its own).

    With `json`: their loggers get no handlers of their own and propagate to the root, and the
    root gets the JSON handler (its other handlers go): a worker process a server starts
    afresh (granian's) applies this dictionary before anything of ours runs in it.
    """
    if _read_format(environ) == "text":
        return None
    level = logging.getLevelName(_read_level(environ) or logging.INFO)
    return {
        "version": 1,
        "disable_existing_loggers": False,
        # The factory itself rather than its dotted name: granian pickles this for its workers.
        "handlers": {"json": {"()": _json_handler}},
        "root": {"handlers": ["json"], "level": level},
        "loggers": {
            name: {"handlers": [], "propagate": True, "level": level} for name in SERVER_LOGGERS
        },
    }

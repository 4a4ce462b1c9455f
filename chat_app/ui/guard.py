"""No event handler fails silently: `guarded` and `guarded_task` catch at the handler's edge.

An exception that escapes a Reflex event handler leaves the page half-updated, with a
traceback in Reflex's log and a generic toast. Each handler of the app is wrapped instead:
the exception is logged with its traceback, the state shows a message where the person
looks (`_show_failure`, e.g. the chat's status row), or a toast says it when the state has
no such place, and the page stays usable. Plain, async and async-generator handlers keep
their kind and signature, so Reflex reads their arguments as before.

Usage (the wrapper goes under `@rx.event`)::

    @rx.event
    @guarded
    def toggle_panel(self, interrupt_id: str, panel: str) -> None: ...

    @rx.event(background=True)
    @guarded_task
    async def run(self, text: str) -> AsyncIterator[Any]: ...
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar, cast

import reflex as rx

__all__ = ["failure_message", "guarded", "guarded_task"]

_log = logging.getLogger("chat_app.ui")

F = TypeVar("F", bound=Callable[..., Any])


class _ShowsFailures(Protocol):
    def _show_failure(self, message: str) -> bool: ...


def failure_message(error: BaseException) -> str:
    """What the person reads about an exception on this side (its traceback is in the log)."""
    reason = str(error).strip() or type(error).__name__
    return (
        f"Something went wrong in the app ({reason}). It is in the app's log; "
        "try again, or reload the page."
    )


def _failed(state: object, handler: str, error: Exception) -> Any:
    """Log `error`, show it through the state; a toast when the state did not show it."""
    _log.error("Event handler %s failed", handler, exc_info=error)
    message = failure_message(error)
    show = getattr(state, "_show_failure", None)
    try:
        shown = bool(show(message)) if callable(show) else False
    except Exception:  # the state could not even show it: the toast still does
        _log.exception("Showing the failure of %s failed", handler)
        shown = False
    return None if shown else rx.toast.error(message, id="app-failure")


def guarded(handler: F) -> F:
    """Wrap a foreground handler (it holds the state's lock while it runs)."""
    name = handler.__qualname__
    if inspect.isasyncgenfunction(handler):

        @functools.wraps(handler)
        async def steps(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            try:
                async for event in handler(self, *args, **kwargs):
                    yield event
            except Exception as error:
                yield _failed(self, name, error)

        return cast(F, steps)
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def awaited(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return await handler(self, *args, **kwargs)
            except Exception as error:
                return _failed(self, name, error)

        return cast(F, awaited)

    @functools.wraps(handler)
    def called(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return handler(self, *args, **kwargs)
        except Exception as error:
            return _failed(self, name, error)

    return cast(F, called)


def guarded_task(handler: F) -> F:
    """Wrap a background handler (an async generator): it takes the state's lock to show the
    failure, as it must to change anything."""
    if not inspect.isasyncgenfunction(handler):
        raise TypeError(f"{handler.__qualname__}: a background handler here is a generator.")
    name = handler.__qualname__

    @functools.wraps(handler)
    async def steps(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        try:
            async for event in handler(self, *args, **kwargs):
                yield event
        except Exception as error:
            async with self:
                toast = _failed(self, name, error)
            if toast is not None:
                yield toast

    return cast(F, steps)

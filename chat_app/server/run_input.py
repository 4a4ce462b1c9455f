"""Reading a request into a `RunAgentInput` whose messages are built only when read.

Owns `read_run_input`, and `KeptRunInputReader` for an in-process client's requests. The
messages are checked by msgspec against structs derived from `ag_ui`'s own schema
(`chat_app.interrupts.message_views`), a tenth of the cost of building the models (measured
at 10,000 messages), and `History` builds a model only when something reads it.
Anything msgspec refuses is validated again by pydantic, which has the last word: an error
reads exactly as pydantic words it for `RunAgentInput`, and what msgspec is stricter about
(a number in a string, say) is still taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
from ag_ui.core import Message, RunAgentInput
from pydantic import ConfigDict, SkipValidation, ValidationError, field_serializer

from chat_app.agent.messages import History
from chat_app.interrupts.message_views import LENIENT, REQUEST, SHALLOW, Views
from chat_app.interrupts.strict_json import (
    RepeatedKey,
    has_long_digit_run,
    is_text,
    repeated_key,
    strict_loads,
    too_deep,
)


class LazyRunAgentInput(RunAgentInput):
    """A `RunAgentInput` whose `messages` is a `History` (validated; built when read).

    Dumps as the `RunAgentInput` it stands for. As a class of its own it compares unequal to
    one (pydantic compares classes), and cannot sit in another model's `RunAgentInput` field
    (that field serializes `messages` as a list): dump it, or rebuild one, for that.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: SkipValidation[History]  # type: ignore[assignment]

    @field_serializer("messages")
    def _dump_messages(self, messages: History) -> list[Message]:
        return list(messages)


class TooDeep(ValueError):
    """The request nests deeper than the limit `read_run_input` was given."""


class UnreadableAnswers(ValueError):
    """The request's `resume` (people's answers) names a key twice in one object, or holds
    text that is not Unicode. Read as the desk reads an answer: `{"approved": false,
    "approved": true}` must not mean whichever a reader keeps, and a lone surrogate could not
    be written to the trail."""


def read_answers(text: bytes) -> object:
    """A request's `resume` from its JSON text as msgspec found it in the body (so with no
    lone surrogate: msgspec refuses them); `UnreadableAnswers` when it names a key twice.
    About 3 us for one answer."""
    try:
        return strict_loads(text, unique_keys=True)
    except ValueError as error:
        raise UnreadableAnswers(f"Request body is not valid JSON: {error}.") from None


def check_answers_of(body: bytes) -> None:
    """`UnreadableAnswers` when the `resume` of `body` (a request taken the long way) is not
    read by `read_answers`. Its text found by msgspec, which skips the rest; a body msgspec
    cannot read at all (a lone surrogate, UTF-16) is read whole, strictly."""
    try:
        found = msgspec.json.decode(body, type=_Answers).resume
    except (msgspec.DecodeError, msgspec.ValidationError):
        found = None
    if found is None:
        # Read whole, each object that repeats a key marked, for only those in `resume` to
        # be refused: elsewhere a repeated key means its last value, as on every other path.
        data = strict_loads(body, pairs_hook=_Repeated.of)
        answers = data.get("resume") if isinstance(data, dict) else None
        if (key := _repeated_key(answers)) is not None:
            raise UnreadableAnswers(f"Request body is not valid JSON: {RepeatedKey(key)}.")
        check_answers_text(answers)
    elif found is not msgspec.UNSET:
        read_answers(bytes(found))


class _Repeated(dict[str, Any]):
    """An object that named `key` twice (its last value kept, as JavaScript keeps it)."""

    key = ""

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found = dict(pairs)
        if len(found) == len(pairs):
            return found
        marked = cls(found)
        marked.key = repeated_key(pairs) or ""
        return marked


def _repeated_key(value: object) -> str | None:
    """The repeated key of the first `_Repeated` object in `value`, if any."""
    if isinstance(value, _Repeated):
        return value.key
    children: Iterable[object] = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    )
    return next((key for child in children if (key := _repeated_key(child)) is not None), None)


class _Answers(msgspec.Struct, gc=False):
    """A request body's `resume` as its text; every other field skipped."""

    resume: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


def check_answers_text(answers: object) -> None:
    """`UnreadableAnswers` when `answers` (a parsed `resume`) holds a lone surrogate."""
    if not is_text(answers):
        raise UnreadableAnswers(
            "Request body's resume holds text that is not Unicode (a lone surrogate escape "
            "such as \\ud800)."
        )


def read_run_input(data: Mapping[str, Any], *, depth_limit: int | None = None) -> RunAgentInput:
    """`RunAgentInput.model_validate(data)`, with the messages left unbuilt until read.

    Raises `TooDeep` when `depth_limit` is given and some value in `data` sits deeper (as
    `too_deep` counts), before any other check; then the `ValidationError` that
    `RunAgentInput.model_validate` raises for `data`.
    """
    raw = data.get("messages")
    views = _views_of(raw, SHALLOW)
    if views is not None and (depth_limit is None or _fits_around_messages(data, depth_limit)):
        # A shallow view holds all its message said: the request's dicts need not be kept.
        lazy = _lazy(data, History.checked(views))
    else:
        if depth_limit is not None and too_deep(dict(data), depth_limit):
            raise TooDeep(f"The request nests deeper than {depth_limit} levels.")
        views = _views_of(raw, LENIENT)
        lazy = None if views is None else _lazy(data, History.checked(views, raw))
    if lazy is not None:
        return lazy
    return RunAgentInput.model_validate(data)  # pydantic decides, in its own words


#: What `KeptRunInputReader` finds for a dict it has not kept (no request item is this).
_UNSEEN = (object(),)


class KeptRunInputReader:
    """`read_run_input` for the requests of one in-process client, each message's check
    kept by the identity of its dict.

    Such a client sends the same dicts again with every request (`WireMessages` keeps each
    message's; a connection never changes a body), and every request carries the whole
    history: checking 2,000 messages took ~2 ms of each Approve click at that length. So a
    dict is checked the first time it comes, and its view reused while it keeps coming; the
    views are shared between requests' histories, which build their models from them and
    never change them. A request with a new message neither view takes, or that nests too
    deep around its messages, is read by `read_run_input`, which decides as always.
    """

    def __init__(self, *, depth_limit: int | None = None) -> None:
        self._depth_limit = depth_limit
        #: By `id()` of a message dict: the dict (held, so its id is not reused), its view,
        #: and whether the history needs the dict too (a lenient view does not hold it all).
        self._kept: dict[int, tuple[Mapping[str, Any], Any, bool]] = {}

    def __call__(self, data: Mapping[str, Any]) -> RunAgentInput:
        raw = data.get("messages")
        limit = self._depth_limit
        if type(raw) is not list or (limit is not None and not _fits_around_messages(data, limit)):
            return read_run_input(data, depth_limit=limit)
        kept = self._kept
        new = [message for message in raw if kept.get(id(message), _UNSEEN)[0] is not message]
        if new:
            checked = self._check(new)
            if checked is None:
                return read_run_input(data, depth_limit=limit)
            kept.update((id(entry[0]), entry) for entry in checked)
        entries = [kept[id(message)] for message in raw]
        if len(kept) > 2 * len(raw) + 64:  # forget those no longer in the history
            self._kept = {id(entry[0]): entry for entry in entries}
        views = [view for _, view, _ in entries]
        if any(needs for _, _, needs in entries):
            history = History.checked(views, [m if needs else None for m, _, needs in entries])
        else:
            history = History.checked(views)
        lazy = _lazy(data, history)
        return lazy if lazy is not None else read_run_input(data, depth_limit=limit)

    def _check(self, messages: list[Any]) -> list[tuple[Mapping[str, Any], Any, bool]] | None:
        """New `messages` checked: shallow views, else lenient ones, which keep their dict
        (only where no depth limit applies: the lenient path of `read_run_input` walks the
        whole body first); `None` when neither takes them all."""
        views = _views_of(messages, SHALLOW)
        needs = False
        if views is None and self._depth_limit is None:
            views, needs = _views_of(messages, LENIENT), True
        if views is None:
            return None
        return [(message, view, needs) for message, view in zip(messages, views, strict=True)]


def read_run_input_json(body: bytes, *, depth_limit: int) -> RunAgentInput | None:
    """The request in `body` read straight into views, or `None` if it is not in the usual
    shape: then read it as JSON and give it to `read_run_input`, which decides.

    The usual shape is what AG-UI and TanStack clients send: the aliases, no unknown key,
    free-form values at most `ANY_HEIGHT` levels deep inside the messages, nothing deeper
    than `depth_limit` elsewhere, and a body `RunAgentInput` takes. Reading the JSON and
    checking the messages is then one pass, with no dict made for a message (a third of the
    cost, measured at 10,000 messages). A body with 19 digits in a row goes the long way too:
    msgspec reads integers of any length, which the exact reader refuses past JavaScript's
    range.
    """
    if REQUEST is None or has_long_digit_run(body):
        return None
    try:
        request: Any = msgspec.json.decode(body, type=REQUEST)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    data = {
        wire: value
        for wire, value in zip(_REQUEST_KEYS, msgspec.structs.astuple(request), strict=True)
        if value is not msgspec.UNSET
    }
    if isinstance(answers := data.get("resume"), msgspec.Raw):
        try:
            data["resume"] = read_answers(bytes(answers))
        except RecursionError:
            return None  # the long way says it is nested too deeply
    if not _fits_around_messages(data, depth_limit):
        return None
    return _lazy(data, History.checked(data["messages"]))


def _fits_around_messages(data: Mapping[str, Any], depth_limit: int) -> bool:
    """Whether a body whose messages the shallow views took nests no deeper than
    `depth_limit`: their height is known, so only the fields around them are walked."""
    return (
        SHALLOW is not None
        and 1 + SHALLOW.height <= depth_limit
        and not any(
            too_deep(value, depth_limit - 1)
            for key, value in data.items()
            if key != "messages" and type(value) in (dict, list)
        )
    )


def _lazy(data: Mapping[str, Any], history: History) -> RunAgentInput | None:
    """`data` with `history` for its messages, or `None` where pydantic refuses the rest."""
    try:
        return LazyRunAgentInput.model_validate({**data, "messages": history})
    except ValidationError:
        return None


def _views_of(raw: object, views: Views | None) -> list[Any] | None:
    if views is None or type(raw) is not list:
        return None
    try:
        return msgspec.convert({"messages": raw}, views.holder).messages
    except msgspec.ValidationError:
        return None  # pydantic decides


_REQUEST_KEYS = (
    tuple(field.encode_name for field in msgspec.structs.fields(REQUEST)) if REQUEST else ()
)

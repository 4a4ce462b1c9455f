"""`WireMessages`: a request's history from each message's kept wire form, the same as
`to_wire_messages` builds from scratch, whatever changed in between."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from chat_app.client import (
    ChatMessage,
    TextPart,
    ToolCallPart,
    build_run_input,
    from_wire_messages,
    to_wire_messages,
)
from chat_app.client._messages import ToolResultPart, WireMessages


def _history() -> list[ChatMessage]:
    call = ToolCallPart(
        id="c1", name="delete", arguments='{"cents": 1}', status="awaiting-approval",
        input={"cents": 1}, approval_id="approval_c1",
    )  # fmt: skip
    return [
        ChatMessage(id="u1", role="user", parts=(TextPart(content="hi"),), created_at="2026"),
        ChatMessage(id="a1", role="assistant", parts=(TextPart(content="Sure."), call)),
        ChatMessage(id="r1", role="user", raw={"id": "r1", "role": "user", "content": [1]}),
    ]


def test_the_kept_wire_form_is_the_fresh_one_after_edits_appends_and_removals() -> None:
    wire = WireMessages()
    messages = _history()
    assert wire(messages) == to_wire_messages(messages)
    # A decision flips the call (a new message), a result comes, a message is added.
    call = messages[1].tool_calls[0]
    decided = replace(
        call, status="done", decision="approved", output={"ok": True}, has_output=True
    )
    result = ToolResultPart(tool_call_id="c1", content='{"ok": true}')
    messages[1] = replace(messages[1], parts=(messages[1].parts[0], decided, result))
    messages.append(ChatMessage(id="a2", role="assistant", parts=(TextPart(content="Done."),)))
    assert wire(messages) == to_wire_messages(messages)
    assert any(isinstance(part, ToolResultPart) for part in messages[1].parts)
    # A history cut back (a resend drops what followed), then grown again.
    messages = messages[:1]
    assert wire(messages) == to_wire_messages(messages)
    messages.append(ChatMessage(id="u2", role="user", parts=(TextPart(content="again"),)))
    assert wire(messages) == to_wire_messages(messages)


def test_an_unchanged_message_keeps_its_wire_dicts_and_each_call_is_a_new_list() -> None:
    wire = WireMessages()
    messages = _history()
    first, second = wire(messages), wire(messages)
    assert first == second and first is not second
    assert all(a is b for a, b in zip(first, second, strict=True))
    edited = [replace(messages[0], parts=(TextPart(content="hello"),)), *messages[1:]]
    third = wire(edited)
    assert third[0] is not first[0] and third[0]["content"] == "hello"
    assert third[1] is first[1]


def test_forgotten_messages_do_not_pile_up() -> None:
    wire = WireMessages()
    for index in range(500):
        wire([ChatMessage(id=f"u{index}", role="user", parts=(TextPart(content="x"),))])
    assert len(wire._kept) <= 2 + 64 + 1


def test_a_request_body_carries_the_kept_dicts_as_they_are() -> None:
    """`build_run_input` takes a history's dicts as given (copying each was ~1 ms per 2,000
    messages on every request); other mappings are made dicts, for the JSON."""
    kept = WireMessages()(_history())
    body = build_run_input(
        thread_id="t", run_id="r", messages=[*kept, MappingProxyType({"id": "u2"})], tools=[]
    )
    sent = body["messages"]
    assert isinstance(sent, list) and sent is not kept
    assert all(a is b for a, b in zip(sent, kept, strict=False))
    assert type(sent[-1]) is dict and sent[-1] == {"id": "u2"}


def test_a_user_message_keeps_the_time_its_client_stamped_on_it() -> None:
    """The stamp a client sends (`metadata.tanstack.createdAt`) comes back with the server's
    snapshot and is the message's time; a snapshot whose metadata is the server's own keeps
    the time known before; text that is no time is not taken for one."""
    stamp = "2026-12-05T10:00:00.123Z"
    stamped = {"tanstack": {"createdAt": stamp}}
    wire = [{"id": "u1", "role": "user", "content": "hi", "metadata": stamped}]
    [message] = from_wire_messages(wire)
    assert message.created_at == stamp
    echoed = [{"id": "u1", "role": "user", "content": "hi", "metadata": {"server": {"seq": 3}}}]
    assert from_wire_messages(echoed, [message])[0].created_at == stamp
    nonsense = [{"id": "u2", "role": "user", "content": "hi",
                 "metadata": {"tanstack": {"createdAt": "x-not-a-date"}}}]  # fmt: skip
    assert from_wire_messages(nonsense)[0].created_at is None

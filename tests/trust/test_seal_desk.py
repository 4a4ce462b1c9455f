"""Seals for conversations the approval desk keeps (`Sealer.for_desk`): the desk's pauses are
refused by a client's check, naming the desk; the desk still decides a client's seal."""

from __future__ import annotations

from typing import Any

from chat_app.trust import Sealer

ARGS = {"recipient": "Ada", "amount": 5000}
GENERIC: dict[str, Any] = {
    "thread_id": "t-1",
    "run_id": "r-1",
    "interrupt_id": "int-1",
    "fields": {"definitionId": "plan", "batchIndex": 0},
}


def test_a_tool_call_the_desk_sealed_is_the_desks_to_decide() -> None:
    client = Sealer(b"k" * 32)
    desk = client.for_desk()
    sealed = desk.seal_tool_call("t-1", "transfer", ARGS, tag=desk.requester_tag("rita@x"))
    assert desk.check_tool_call("t-1", sealed.id, "transfer", ARGS) == "ok"
    assert client.check_tool_call("t-1", sealed.id, "transfer", ARGS) == "desk"
    # Changed, or another thread's: stale either way, not the desk's.
    assert client.check_tool_call("t-1", sealed.id, "transfer", {**ARGS, "amount": 1}) == "stale"
    assert desk.check_tool_call("t-2", sealed.id, "transfer", ARGS) == "stale"
    # A seal made for a client (before conversations were sealed apart) the desk still
    # decides; another secret's, nobody.
    plain = client.seal_tool_call("t-1", "transfer", ARGS)
    assert desk.check_tool_call("t-1", plain.id, "transfer", ARGS) == "ok"
    # Expired is expired, whoever's seal it is.
    lapsed = client.seal_tool_call("t-1", "transfer", ARGS, ttl_seconds=-1)
    assert client.check_tool_call("t-1", lapsed.id, "transfer", ARGS) == "expired"
    assert desk.check_tool_call("t-1", lapsed.id, "transfer", ARGS) == "expired"
    gone = desk.seal_tool_call("t-1", "transfer", ARGS, ttl_seconds=-1)
    assert desk.check_tool_call("t-1", gone.id, "transfer", ARGS) == "expired"
    assert Sealer(b"j" * 32).for_desk().check_tool_call("t-1", sealed.id, "transfer", ARGS) == (
        "stale"
    )


def test_a_generic_key_the_desk_sealed_is_the_desks_to_decide() -> None:
    client = Sealer(b"k" * 32)
    desk = client.for_desk()
    key = desk.seal_key("plan", **GENERIC)
    assert desk.check_key(key, **GENERIC) == "ok"
    assert client.check_key(key, **GENERIC) == "desk"
    assert client.check_key(key, **{**GENERIC, "run_id": "r-2"}) == "stale"
    assert desk.check_key(client.seal_key("plan", **GENERIC), **GENERIC) == "ok"


def test_the_desk_view_shares_requester_tags_and_is_made_once() -> None:
    client = Sealer(b"k" * 32, ttl_seconds=60)
    desk = client.for_desk()
    assert desk is client.for_desk() is desk.for_desk()
    assert desk.requester_tag("rita@x") == client.requester_tag("rita@x")
    assert desk.ttl_seconds == 60
    sealed = desk.seal_tool_call("t-1", "transfer", ARGS, tag=client.requester_tag("rita@x"))
    assert client.asked_by(sealed.id, "rita@x") and desk.asked_by(sealed.id, "rita@x")

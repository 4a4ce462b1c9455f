"""A seal's lifetime: the sealer's TTL, or one given for a single seal (a rule's
`expires_after`)."""

from __future__ import annotations

from chat_app.trust import Sealer
from chat_app.trust.policy import LONGEST_DURATION

SECRET = b"seal-ttl-secret-seal-ttl-secret"
NOW = 1_900_000_000.0


def _sealer(clock: list[float]) -> Sealer:
    return Sealer(SECRET, ttl_seconds=86400, clock=lambda: clock[0])


def test_expiry_is_the_sealers_ttl_unless_one_is_given() -> None:
    sealer = _sealer([NOW])
    assert sealer.expiry() == int(NOW) + 86400
    assert sealer.expiry(None) == int(NOW) + 86400
    assert sealer.expiry(600) == int(NOW) + 600


def test_a_call_sealed_with_its_own_ttl_expires_then_and_not_later() -> None:
    clock = [NOW]
    sealer = _sealer(clock)
    args = {"recipient": "Ada", "amount": 5000}
    short = sealer.seal_tool_call("t", "transfer", args, ttl_seconds=600)
    usual = sealer.seal_tool_call("t", "transfer", args)
    assert short.expires_at == "2030-03-17T17:56:40.000Z"
    assert sealer.tool_call_expiry(short.id) == short.expires_at
    assert sealer.tool_call_expiry(usual.id) == "2030-03-18T17:46:40.000Z"
    clock[0] = NOW + 599
    assert sealer.check_tool_call("t", short.id, "transfer", args) == "ok"
    clock[0] = NOW + 600
    assert sealer.check_tool_call("t", short.id, "transfer", args) == "expired"
    assert sealer.check_tool_call("t", usual.id, "transfer", args) == "ok"
    # The expiry is under the seal: the same id with another lifetime is not ours.
    forged = short.id[:10] + usual.id[10:18] + short.id[18:]
    assert sealer.check_tool_call("t", forged, "transfer", args) == "stale"


def test_the_longest_lifetime_any_setting_may_name_still_makes_an_id_that_checks() -> None:
    """A sealed id holds its expiry as eight hex digits of Unix time (until 2106): the longest
    `expires_after` or TTL the app takes must still fit, or every approval under it would be
    refused as not ours (36525 days did not)."""
    sealer = _sealer([NOW])
    args = {"recipient": "Ada", "amount": 5000}
    longest = sealer.seal_tool_call(
        "t", "transfer", args, ttl_seconds=LONGEST_DURATION.total_seconds()
    )
    assert sealer.check_tool_call("t", longest.id, "transfer", args) == "ok"
    century = sealer.seal_tool_call("t", "transfer", args, ttl_seconds=36525 * 86400)
    assert sealer.check_tool_call("t", century.id, "transfer", args) == "stale"

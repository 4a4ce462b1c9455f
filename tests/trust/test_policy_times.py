"""A rule's reminder or escalation that could never come is named at start (config's
`policy_time_problems`): due after its decisions expire, it would silently never fire."""

from __future__ import annotations

from pathlib import Path

from chat_app.config import policy_time_problems
from chat_app.demo import POLICY_PATH
from chat_app.trust import Policy


def _policy(extra: str) -> Policy:
    text = Path(POLICY_PATH).read_text().replace(
        'name = "large-transfers"', f'name = "large-transfers"\n{extra}'
    )
    return Policy.parse(text, "policy.toml")


def test_the_demo_policy_fits_the_default_ttl() -> None:
    assert policy_time_problems(Policy.load(POLICY_PATH), 24 * 3600) == []


def test_an_escalation_after_the_ttl_is_named() -> None:
    # The demo escalates after 2 h: with interrupts living one hour it never could.
    [message] = policy_time_problems(Policy.load(POLICY_PATH), 3600)
    assert "rule 'large-transfers'" in message and "remind_after" not in message
    assert "escalate_after is 2 h" in message and "CHAT_APP_INTERRUPT_TTL_SECONDS" in message


def test_a_rules_own_expiry_is_what_its_timers_must_fit() -> None:
    # Interrupts live an hour, but this rule's live three: its 2 h escalation can come.
    assert policy_time_problems(_policy('expires_after = "3h"'), 3600) == []

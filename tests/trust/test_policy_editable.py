"""A rule's `editable`: which arguments an approver may change by approving with edited
arguments, read from the file with every misuse refused, and what an edit changes."""

from __future__ import annotations

import pytest

from chat_app.config import policy_edit_problems
from chat_app.demo import POLICY_PATH
from chat_app.trust.policy import Policy, PolicyError, changed_arguments

TRANSFERS = """
[roles]
finance = ["ada@example.com"]

[[rules]]
name = "large-transfers"
tool = "transfer"
approvers = ["role:finance"]
not_requester = true
"""

TRANSFER_SCHEMA = {
    "type": "object",
    "properties": {"recipient": {"type": "string"}, "amount": {"type": "number"}},
}


def _rule(editable: str) -> Policy:
    return Policy.parse(TRANSFERS + editable, "ops/policy.toml")


def _refusal(text: str) -> str:
    with pytest.raises(PolicyError) as raised:
        Policy.parse(text, "ops/policy.toml")
    return str(raised.value)


def test_without_editable_any_argument_may_change() -> None:
    rule = _rule("").rules[0]
    assert rule.editable is None
    assert rule.refuses_edit({"recipient": "Bob", "amount": 5}, {"recipient": "Ada"}) is None


def test_an_edit_of_a_listed_argument_passes_and_of_another_is_refused_by_name() -> None:
    rule = _rule('editable = ["amount"]').rules[0]
    shown = {"recipient": "Bob", "amount": 5300}
    assert rule.editable == ("amount",)
    assert rule.refuses_edit(shown, {"recipient": "Bob", "amount": 4000}) is None
    assert rule.refuses_edit(shown, shown) is None  # nothing changed
    assert rule.refuses_edit(shown, {"recipient": "Ada", "amount": 4000}) == (
        "Rule large-transfers lets an approver change only amount, not recipient."
    )


@pytest.mark.parametrize(
    ("edited", "named"),
    [
        ({"recipient": "Bob", "amount": 5300, "memo": "x"}, "memo"),  # added
        ({"amount": 5300}, "recipient"),  # removed
        ({"recipient": "Bob\u202e", "amount": 1}, "recipient"),
    ],
)
def test_an_argument_added_or_removed_is_a_change_too(
    edited: dict[str, object], named: str
) -> None:
    rule = _rule('editable = ["amount"]').rules[0]
    refused = rule.refuses_edit({"recipient": "Bob", "amount": 5300}, edited)
    assert refused is not None and refused.endswith(f"not {named}.")


def test_a_name_added_by_an_edit_is_spelled_out_in_the_refusal() -> None:
    rule = _rule('editable = ["amount"]').rules[0]
    refused = rule.refuses_edit({"amount": 1}, {"amount": 1, "pay\u202eeve": 2})
    assert refused is not None and "pay[U+202E]eve" in refused and "\u202e" not in refused


def test_editable_empty_refuses_every_change() -> None:
    rule = _rule("editable = []").rules[0]
    shown = {"recipient": "Bob", "amount": 5300}
    assert rule.refuses_edit(shown, dict(shown)) is None
    assert rule.refuses_edit(shown, {"recipient": "Bob", "amount": 1}) == (
        "Rule large-transfers lets nobody change the arguments: approve them as shown, or reject."
    )


def test_two_editable_names_are_said_together() -> None:
    rule = _rule('editable = ["amount", "memo"]').rules[0]
    refused = rule.refuses_edit({"recipient": "Bob"}, {"recipient": "Ada"})
    assert refused == (
        "Rule large-transfers lets an approver change only amount and memo, not recipient."
    )


def test_several_kept_arguments_are_named_as_either_and_a_flood_is_counted() -> None:
    rule = _rule('editable = ["amount"]').rules[0]
    shown = {"recipient": "Bob", "amount": 1}
    refused = rule.refuses_edit(shown, {"recipient": "Ada", "amount": 1, "memo": "x"})
    assert refused == (
        "Rule large-transfers lets an approver change only amount, not recipient or memo."
    )
    flood = {**shown, **{f"k{n}": n for n in range(1000)}}
    refused = rule.refuses_edit(shown, flood)
    assert refused is not None and refused.endswith("not k0, k1, k2, k3, k4 or 995 more.")


def test_arguments_that_are_not_an_object_are_refused_as_such() -> None:
    rule = _rule('editable = ["amount"]').rules[0]
    assert rule.refuses_edit({"amount": 1}, [1]) == (
        "Rule large-transfers lets an approver change only amount, and these edited arguments "
        "are not an object of named ones."
    )


def test_what_the_rule_keeps_runs_as_shown_however_a_client_wrote_it() -> None:
    """`1.0` for `1` is no change (JSON has one number), but the tool gets the `1` shown."""
    rule = _rule('editable = ["amount"]').rules[0]
    shown = {"recipient": "Bob", "account": 42, "amount": 5300}
    edited = {"recipient": "Bob", "account": 42.0, "amount": 4000}
    assert rule.refuses_edit(shown, edited) is None
    pinned = rule.pinned(shown, edited)
    assert pinned == {"recipient": "Bob", "account": 42, "amount": 4000}
    assert isinstance(pinned["account"], int)
    assert _rule("").rules[0].pinned(shown, edited) is edited  # no editable: as sent


def test_changes_are_compared_as_json_values() -> None:
    assert changed_arguments({"a": 1}, {"a": 1.0}) == []  # one JSON number
    assert changed_arguments({"a": 1}, {"a": True}) == ["a"]  # a number is not a boolean
    assert changed_arguments({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}) == ["a"]
    assert changed_arguments({"a": 1, "b": 2}, {"b": 2, "a": 1}) == []
    assert changed_arguments([1], [2]) == ["arguments"]
    assert changed_arguments("x", "x") == []


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('decide = "approve"\neditable = ["amount"]', "`editable` applies only with `approvers`"),
        ('approvers = ["role:finance"]\nquorum = 2\neditable = ["amount"]', "quorum of 1"),
        ('approvers = ["role:finance"]\neditable = "amount"', 'editable = ["amount"]'),
        ('approvers = ["role:finance"]\neditable = ["amount", ""]', 'editable = ["amount"]'),
        ('approvers = ["role:finance"]\neditable = [1]', 'editable = ["amount"]'),
        ('approvers = ["role:finance"]\neditable = ["amount", "amount"]', "amount more than once"),
    ],
)
def test_a_misused_editable_stops_the_start_saying_how_to_mend_it(body: str, says: str) -> None:
    message = _refusal(
        f'[roles]\nfinance = ["ada@example.com", "bob@example.com"]\n'
        f'[[rules]]\nname = "r1"\ntool = "transfer"\n{body}\n'
    )
    assert message.startswith("ops/policy.toml") and "rule 'r1'" in message
    assert says in message


def test_a_question_has_no_arguments_to_edit() -> None:
    message = _refusal(
        '[[rules]]\nname = "q"\ninterrupt = "pick"\napprovers = ["ada@example.com"]\n'
        'editable = ["x"]\n'
    )
    assert "`editable` applies only to a `tool` rule" in message


def test_a_name_the_tool_does_not_take_is_a_warning_at_start() -> None:
    policy = _rule('editable = ["amout", "amount"]')
    (warning,) = policy_edit_problems(policy, {"transfer": TRANSFER_SCHEMA})
    assert warning == (
        "ops/policy.toml, rule 'large-transfers': editable names amout, which transfer does "
        "not take (its arguments: recipient, amount); check the spelling."
    )
    assert policy_edit_problems(_rule('editable = ["amount"]'), {"transfer": TRANSFER_SCHEMA}) == []
    # Tools the agent does not have here (a remote agent's) are not judged.
    assert policy_edit_problems(policy, {}) == []


def test_the_demo_lets_finance_change_a_transfers_amount_not_who_is_paid() -> None:
    from chat_app.demo import build_demo_agent

    demo = Policy.load(POLICY_PATH)
    rule = next(rule for rule in demo.rules if rule.name == "large-transfers")
    assert rule.editable == ("amount",)
    assert policy_edit_problems(demo, build_demo_agent(policy=demo).input_schemas()) == []

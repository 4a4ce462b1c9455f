"""The policy file: which rule governs a call, who may decide under it, and every bad file
refused at load with the file, the rule and what to fix."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from chat_app.trust.identity import ANONYMOUS, DEMO_PEOPLE, Identity
from chat_app.trust.policy import (
    Policy,
    PolicyError,
    Rule,
    describe_duration,
    escalation_note,
    parse_duration,
)

DEMO_POLICY = Path(__file__).resolve().parents[2] / "chat_app" / "demo" / "policy.toml"
RITA, ADA, SAM, OLIVE = DEMO_PEOPLE[:4]

ROLES = """
[roles]
finance = ["ada@example.com"]
ops = ["sam@example.com", "olive@example.com"]
"""


def _person(email: str, *roles: str) -> Identity:
    return Identity(email=email, method="password", roles=frozenset(roles))


def _demo() -> Policy:
    return Policy.load(DEMO_POLICY)


def _rule(demo: Policy, name: str) -> Rule:
    return next(rule for rule in demo.rules if rule.name == name)


def _refusal(text: str) -> str:
    """The message of the PolicyError that `text` gives; it always names the file."""
    with pytest.raises(PolicyError) as raised:
        Policy.parse(text, "ops/policy.toml")
    message = str(raised.value)
    assert message.startswith("ops/policy.toml")
    return message


def _one_rule(body: str, roles: str = ROLES) -> str:
    return _refusal(f'{roles}\n[[rules]]\nname = "r1"\n{body}\n')


# The demo's file ----------------------------------------------------------------------------


def test_demo_policy_loads_with_its_roles_and_three_rules() -> None:
    demo = _demo()
    assert demo.source == str(DEMO_POLICY)
    assert demo.roles == {
        "finance": frozenset({"ada@example.com"}),
        "ops": frozenset({"sam@example.com", "olive@example.com", "theo@example.com"}),
        "admin": frozenset({"olive@example.com"}),
    }
    assert [rule.name for rule in demo.rules] == [
        "small-refunds",
        "large-transfers",
        "key-rotation",
    ]
    rotation = _rule(demo, "key-rotation")
    assert (rotation.approvers, rotation.quorum, rotation.not_requester) == (("role:ops",), 2, True)


def _rule_name(demo: Policy, tool: str, args: object) -> str | None:
    rule = demo.rule_for_tool(tool, args)
    return None if rule is None else rule.name


def test_demo_rules_match_as_the_issue_says() -> None:
    demo = _demo()
    assert _rule_name(demo, "refund", {"order": "42", "amount": 20}) == "small-refunds"
    assert _rule_name(demo, "refund", {"order": "42", "amount": 60}) is None
    assert _rule_name(demo, "transfer", {"recipient": "Ada", "amount": 5000}) == "large-transfers"
    assert _rule_name(demo, "transfer", {"recipient": "Ada", "amount": 25}) is None
    assert _rule_name(demo, "transfer", {"recipient": "Ada", "amount": 1000}) is None
    assert _rule_name(demo, "rotate_keys", {"environment": "production"}) == "key-rotation"
    assert _rule_name(demo, "delete_project", {"name": "apollo"}) is None


def test_small_refunds_is_decided_by_the_policy() -> None:
    rule = _rule(_demo(), "small-refunds")
    assert (rule.decide, rule.reason, rule.approvers) == ("approve", None, ())
    assert _demo().waiting_for(rule, viewer_is_requester=True) == "Approved by policy small-refunds"


# Matching -----------------------------------------------------------------------------------


def test_first_matching_rule_wins() -> None:
    policy = Policy.parse(
        ROLES
        + """
[[rules]]
name = "huge"
tool = "transfer"
when = { properties = { amount = { minimum = 10000 } } }
approvers = ["role:ops"]

[[rules]]
name = "any-transfer"
tool = "transfer"
approvers = ["role:finance"]

[[rules]]
name = "never-reached"
tool = "transfer"
decide = "approve"
"""
    )
    assert _rule_name(policy, "transfer", {"amount": 20000}) == "huge"
    assert _rule_name(policy, "transfer", {"amount": 5}) == "any-transfer"


def test_interrupt_rules_match_definitions_and_tool_rules_match_tools() -> None:
    policy = Policy.parse(
        ROLES
        + """
[[rules]]
name = "release-sign-off"
interrupt = "plan_release"
when = { required = ["title"] }
approvers = ["role:ops"]
"""
    )
    assert policy.rule_for_interrupt("plan_release", {"title": "v2"}) is policy.rules[0]
    assert policy.rule_for_interrupt("plan_release", {"changes": []}) is None
    assert policy.rule_for_interrupt("ship_order", {"title": "v2"}) is None
    assert policy.rule_for_tool("plan_release", {"title": "v2"}) is None


def test_empty_policy_has_no_rules() -> None:
    empty = Policy.empty()
    assert (empty.source, empty.rules, dict(empty.roles)) == ("<empty>", (), {})
    assert empty.rule_for_tool("transfer", {"amount": 5000}) is None
    assert Policy.parse("").rules == ()


# Who may decide -----------------------------------------------------------------------------


def test_roles_of_merges_the_identitys_roles_with_the_roles_table() -> None:
    demo = _demo()
    proxied = _person("Olive@Example.com", "auditor")
    assert demo.roles_of(proxied) == {"auditor", "ops", "admin"}
    assert demo.roles_of(_person("rita@example.com")) == frozenset()
    assert demo.roles_of(ANONYMOUS) == frozenset()


def test_check_allows_a_member_of_an_approving_role() -> None:
    demo = _demo()
    large = _rule(demo, "large-transfers")
    # Ada's finance role comes from [roles] here, not from her identity.
    assert demo.check(large, _person("ada@example.com"), decider_is_requester=False) is None
    assert demo.check(large, ADA, decider_is_requester=False) is None
    rotation = _rule(demo, "key-rotation")
    assert demo.check(rotation, SAM, decider_is_requester=False) is None


def test_check_allows_an_approver_named_by_email_in_any_case() -> None:
    policy = Policy.parse(
        ROLES
        + """
[[rules]]
name = "wire"
tool = "transfer"
approvers = ["Ada@Example.com", "role:ops"]
"""
    )
    rule = policy.rules[0]
    assert rule.approvers == ("ada@example.com", "role:ops")
    assert policy.check(rule, _person("ada@example.com"), decider_is_requester=False) is None
    assert policy.check(rule, _person("ADA@example.com"), decider_is_requester=False) is None
    assert policy.describe_approvers(rule) == "ada@example.com or role ops"
    assert (
        policy.check(rule, RITA, decider_is_requester=False)
        == "Needs approval from ada@example.com or role ops."
    )


def test_check_refuses_someone_else_and_says_who_may() -> None:
    demo = _demo()
    large = _rule(demo, "large-transfers")
    assert (
        demo.check(large, SAM, decider_is_requester=False)
        == "Needs approval from role finance, not the requester."
    )
    plain = Policy.parse(
        ROLES + '[[rules]]\nname = "k"\ntool = "rotate_keys"\napprovers = ["role:ops"]'
    )
    assert plain.check(plain.rules[0], ADA, decider_is_requester=False) == (
        "Needs approval from role ops."
    )


def test_the_requester_is_refused_under_not_requester_even_with_the_role() -> None:
    demo = _demo()
    large = _rule(demo, "large-transfers")
    assert (
        demo.check(large, ADA, decider_is_requester=True)
        == "Needs approval from role finance, not the requester."
    )
    # Without not_requester, a finance requester approves their own transfer.
    plain = Policy.parse(
        ROLES + '[[rules]]\nname = "t"\ntool = "transfer"\napprovers = ["role:finance"]'
    )
    assert plain.check(plain.rules[0], ADA, decider_is_requester=True) is None


def test_an_anonymous_decider_never_satisfies_named_approvers() -> None:
    demo = _demo()
    large = _rule(demo, "large-transfers")
    assert demo.check(large, ANONYMOUS, decider_is_requester=False) == (
        "Needs approval from role finance, not the requester."
    )
    # Even one whose (unverified) roles would otherwise qualify.
    nobody = Identity(email="", method="none", roles=frozenset({"finance"}))
    assert demo.check(large, nobody, decider_is_requester=False) is not None


def test_waiting_for_words_the_wait_for_the_page() -> None:
    demo = _demo()
    large = _rule(demo, "large-transfers")
    assert demo.describe_approvers(large) == "role finance"
    assert demo.waiting_for(large, viewer_is_requester=False) == "Waiting for finance"
    assert demo.waiting_for(large, viewer_is_requester=True) == (
        "Waiting for finance — you asked for this, so someone else approves it"
    )
    rotation = _rule(demo, "key-rotation")
    assert demo.waiting_for(rotation, viewer_is_requester=False) == (
        "Waiting for ops (2 approvals needed)"
    )


# Bad files ----------------------------------------------------------------------------------


def test_a_file_that_does_not_parse_names_line_and_column() -> None:
    message = _refusal("[roles]\nfinance = [ada@example.com]\n")
    assert "not valid TOML" in message
    assert "line 2, column 12" in message
    assert "at end of document" in _refusal('[roles]\nfinance = ["ada@example.com"\n')


def test_load_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[[rules]]\nname = "x"\ntool = "t"\n', encoding="utf-8")
    with pytest.raises(PolicyError) as raised:
        Policy.load(path)
    assert str(raised.value).startswith(str(path))
    with pytest.raises(PolicyError, match="cannot be read"):
        Policy.load(tmp_path / "missing.toml")


def test_unknown_top_level_key_is_refused_with_a_suggestion() -> None:
    message = _refusal('[[rule]]\nname = "x"\n')
    assert "unknown top-level key `rule`" in message and "`rules`" in message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('roles = ["finance"]', ["[roles] must be a table"]),
        ('[roles]\nfinance = "ada@example.com"', ["[roles] finance", "list of emails"]),
        ('[roles]\nfinance = ["ada"]', ["[roles] finance", "'ada'", "not an email"]),
        ('[roles]\n"role:finance" = ["ada@example.com"]', ["without `role:`"]),
        ('known_roles = "auditor"', ["known_roles must be a list"]),
        ('[roles]\nknown_roles = ["sre"]', ["move `known_roles = ...` above [roles]"]),
    ],
)
def test_a_bad_roles_table_is_refused(text: str, words: list[str]) -> None:
    message = _refusal(text)
    for word in words:
        assert word in message


def test_a_rule_without_a_name_is_named_by_its_place() -> None:
    message = _refusal(ROLES + '[[rules]]\nname = "a"\ntool = "t"\ndecide = "approve"\n'
                       '[[rules]]\ntool = "t"\ndecide = "approve"')  # fmt: skip
    assert "[[rules]] #2" in message and "has no name" in message and "add name" in message


def test_a_duplicate_rule_name_is_refused() -> None:
    rule = '[[rules]]\nname = "same"\ntool = "t"\ndecide = "approve"\n'
    message = _refusal(ROLES + rule + rule)
    assert "rule 'same' ([[rules]] #2)" in message
    assert "already used by [[rules]] #1" in message and "its own name" in message


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('decide = "approve"', ["rule 'r1'", "exactly one of `tool`", "neither"]),
        ('tool = "t"\ninterrupt = "i"\ndecide = "approve"', ["rule 'r1'", "both"]),
        ('tool = "t"', ["rule 'r1'", "either `decide`", "or `approvers`", "neither"]),
        ('tool = "t"\ndecide = "approve"\napprovers = ["role:ops"]', ["rule 'r1'", "both"]),
        ('tool = "t"\ndecide = "yes"', ["rule 'r1'", "'yes'", 'decide = "approve"']),
        ('tool = "t"\ndecide = "reject"', ["rule 'r1'", "needs a `reason`", 'reason = "']),
        ('tool = "t"\ndecide = "approve"\nreason = "ok"', ["rule 'r1'", "`reason` goes only"]),
        ('tool = "t"\napprovers = ["role:ops"]\nreason = "x"', ["rule 'r1'", "`reason`"]),
        ('interrupt = "ship_order"\ndecide = "approve"', ["rule 'r1'", "needs a person's value"]),
        ('tool = "t"\ndecide = "approve"\nquorum = 2', ["rule 'r1'", "only with `approvers`"]),
        ('tool = "t"\napprovers = []', ["rule 'r1'", "non-empty list"]),
        ('tool = "t"\napprovers = ["role:ops"]\nnot_requester = "yes"', ["true or false"]),
    ],
)
def test_a_rule_that_does_not_say_who_decides_is_refused(body: str, words: list[str]) -> None:
    message = _one_rule(body)
    for word in words:
        assert word in message


def test_decide_reject_with_a_reason_loads() -> None:
    policy = Policy.parse(
        '[[rules]]\nname = "no"\ntool = "t"\ndecide = "reject"\nreason = "Not here"'
    )
    assert (policy.rules[0].decide, policy.rules[0].reason) == ("reject", "Not here")
    assert policy.waiting_for(policy.rules[0], viewer_is_requester=False) == "Rejected by policy no"


def test_an_approver_naming_an_unknown_role_is_refused_and_known_roles_is_offered() -> None:
    message = _one_rule('tool = "t"\napprovers = ["role:finanse"]')
    assert "rule 'r1'" in message and "unknown role 'finanse'" in message
    assert "`finance`" in message  # the nearest role
    assert "[roles]" in message and "known_roles" in message and "sign-in proxy" in message


def test_roles_in_known_roles_are_accepted() -> None:
    policy = Policy.parse(
        'known_roles = ["auditor"]\n[[rules]]\nname = "a"\ntool = "t"\napprovers = ["role:auditor"]'
    )
    auditor = _person("sue@example.com", "auditor")
    assert policy.check(policy.rules[0], auditor, decider_is_requester=False) is None


@pytest.mark.parametrize("approver", ["finance", "ada at example.com", "role:"])
def test_an_approver_that_is_neither_a_role_nor_an_email_is_refused(approver: str) -> None:
    message = _one_rule(f'tool = "t"\napprovers = ["{approver}"]')
    assert "rule 'r1'" in message
    assert 'neither "role:NAME" nor an email' in message or "unknown role" in message
    if approver == "finance":
        assert 'did you mean "role:finance"' in message


@pytest.mark.parametrize("quorum", ["0", "-1", "1.5", "true", '"2"'])
def test_quorum_must_be_a_whole_number_of_at_least_one(quorum: str) -> None:
    message = _one_rule(f'tool = "t"\napprovers = ["role:ops"]\nquorum = {quorum}')
    assert "rule 'r1'" in message and "`quorum`" in message and "1 or more" in message


def test_a_quorum_larger_than_the_approvers_named_by_email_is_refused() -> None:
    message = _one_rule('tool = "t"\napprovers = ["ada@example.com", "bob@example.com"]\n'
                        "quorum = 3")  # fmt: skip
    assert "rule 'r1'" in message and "only 2 people could approve" in message
    assert "(ada@example.com, bob@example.com); lower the quorum or add approvers" in message


def test_a_quorum_the_files_people_cannot_reach_is_a_warning_not_a_refusal() -> None:
    """A role's members come from the file, accounts and a proxy's groups alike: the file
    alone cannot say the quorum is out of reach, so the server starts, and warns."""
    policy = Policy.parse(
        ROLES + '[[rules]]\nname = "big"\ntool = "t"\n'
        'approvers = ["role:ops", "ada@example.com"]\nquorum = 4\n', "p.toml"
    )  # fmt: skip
    assert policy.rules[0].quorum == 4
    assert policy.short_quorums() == [
        "p.toml, rule 'big': `quorum` is 4, but only 3 people (ada@example.com, "
        "olive@example.com, sam@example.com) could approve, unless accounts or a sign-in "
        "proxy's groups give role ops to more people."
    ]


def test_a_quorum_short_by_the_requester_is_a_warning() -> None:
    policy = Policy.parse(
        ROLES + '[[rules]]\nname = "pair"\ntool = "t"\napprovers = ["role:ops"]\n'
        "quorum = 2\nnot_requester = true\n", "p.toml"
    )  # fmt: skip
    assert policy.short_quorums() == [
        "p.toml, rule 'pair': `quorum` is 2, but of the 2 people (olive@example.com, "
        "sam@example.com) who could approve, a request by one of them can gain only 1 "
        "approval (not_requester), and waits for escalation or expires, unless accounts or a "
        "sign-in proxy's groups give role ops to more people."
    ]
    assert Policy.parse(
        ROLES + '[[rules]]\nname = "pair"\ntool = "t"\napprovers = ["role:ops"]\nquorum = 2\n'
    ).short_quorums() == []  # without not_requester, two can
    assert _demo().short_quorums() == []


def test_quorum_is_not_counted_when_a_known_role_is_involved() -> None:
    policy = Policy.parse(
        'known_roles = ["sre"]\n'
        + ROLES
        + '[[rules]]\nname = "k"\ntool = "t"\n'
        + 'approvers = ["role:ops", "role:sre"]\nquorum = 5'
    )
    assert policy.rules[0].quorum == 5
    assert policy.short_quorums() == []  # sre's members are none of the file's to count


@pytest.mark.parametrize(
    ("when", "words"),
    [
        ('{ properties = { amount = { maximum = "50" } } }', ["`maximum` keyword", "'50'"]),
        ('{ type = "integr" }', ["`type` keyword"]),
        ("{ properties = { amount = { maximun = 50 } } }", ["maximun", "`maximum`"]),
        ("{ amount = { maximum = 50 } }", ["when.amount", "under `properties`"]),
        ('{ "$ref" = "https://example.com/s.json" }', ["must point inside the schema"]),
        ("{ const = 1979-05-27 }", ["TOML date"]),
        ('"amount < 50"', ["`when` must be a table"]),
    ],
)
def test_a_when_that_is_not_a_valid_json_schema_is_refused(when: str, words: list[str]) -> None:
    message = _one_rule(f'tool = "t"\ndecide = "approve"\nwhen = {when}')
    assert "rule 'r1'" in message
    for word in words:
        assert word in message


def test_an_unknown_rule_key_suggests_the_nearest() -> None:
    message = _one_rule('tool = "t"\naprovers = ["role:ops"]')
    assert "rule 'r1'" in message and "unknown key `aprovers`" in message
    assert "did you mean `approvers`" in message


# Time: expiry, reminders, escalation ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("2h", 7200),
        ("1d", 86400),
        ("1h30m", 5400),
        (" 1h 30m ", 5400),
        ("1d 2h 3m 4s", 93784),
        ("2H", 7200),
        ("18262d", 18262 * 86400),
    ],
)
def test_parse_duration_reads_whole_numbers_and_units(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "is not a duration"),
        ("soon", "is not a duration"),
        ("1.5h", "is not a duration"),
        ("-1h", "is not a duration"),
        ("90", "is not a duration"),
        ("1h 30", "is not a duration"),
        ("30m1h", "largest first"),
        ("1h1h", "repeats a unit"),
        ("0s", "longer than zero"),
        ("0h0m", "longer than zero"),
        # An expiry that far off could not be written in a sealed id (past 2106) or as a date.
        ("4000000d", "is longer than 18262d (fifty years), the longest a policy time may be"),
        ("18262d 1s", "is longer than 18262d"),
    ],
)
def test_parse_duration_refuses_anything_else_saying_the_form(text: str, words: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_duration(text)
    assert words in str(raised.value)
    if "not a duration" in words:
        assert '"90s", "30m", "2h", "1d" or "1h30m"' in str(raised.value)


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (45, "45 s"),
        (1800, "30 min"),
        (7200, "2 h"),
        (5400, "1 h 30 min"),
        (86400, "1 day"),
        (172800, "2 days"),
        (93600, "1 day 2 h"),
        (90, "1 min 30 s"),
        (86400 + 1800, "1 day"),  # the two largest units only
        (3600.7, "1 h"),
        (0, "0 s"),
    ],
)
def test_describe_duration_names_the_two_largest_units(seconds: float, said: str) -> None:
    assert describe_duration(timedelta(seconds=seconds)) == said


def _timed(body: str) -> Policy:
    return Policy.parse(
        ROLES + 'admin = ["olive@example.com"]\n\n[[rules]]\nname = "big"\ntool = "transfer"\n'
        'approvers = ["role:finance"]\nnot_requester = true\n' + body
    )


def test_a_rule_reads_its_times_and_whom_it_escalates_to() -> None:
    rule = _timed(
        'expires_after = "1d"\nremind_after = "30m"\nescalate_after = "2h"\n'
        'escalate_to = ["role:admin", "Boss@Example.com"]\n'
    ).rules[0]
    assert rule.expires_after == timedelta(days=1)
    assert rule.remind_after == timedelta(minutes=30)
    assert rule.escalate_after == timedelta(hours=2)
    assert rule.escalate_to == ("role:admin", "boss@example.com")


def test_a_rule_without_times_has_none() -> None:
    rule = _timed("").rules[0]
    assert (rule.expires_after, rule.remind_after, rule.escalate_after, rule.escalate_to) == (
        None, None, None, ()
    )  # fmt: skip


def test_the_demo_large_transfers_reminds_and_escalates_to_admin() -> None:
    rule = _rule(_demo(), "large-transfers")
    assert (rule.remind_after, rule.escalate_after, rule.escalate_to, rule.expires_after) == (
        timedelta(minutes=30), timedelta(hours=2), ("role:admin",), None
    )  # fmt: skip
    assert escalation_note(rule.escalate_to, timedelta(hours=2)) == "escalated to admin after 2 h"


def test_an_escalation_names_roles_bare_and_people_by_email_in_one_wording() -> None:
    # The inbox item, the card and the notice all read this (`escalation_note`).
    rule = _timed('escalate_after = "90m"\nescalate_to = ["role:admin", "role:ops", '
                  '"Boss@Example.com"]\n').rules[0]  # fmt: skip
    assert rule.escalate_after is not None
    assert escalation_note(rule.escalate_to, rule.escalate_after) == (
        "escalated to admin, ops or boss@example.com after 1 h 30 min"
    )
    assert escalation_note(("role:admin", "boss@example.com"), timedelta(seconds=4)) == (
        "escalated to admin or boss@example.com after 4 s"
    )
    assert escalation_note((), timedelta(hours=2)) == ""  # nobody to escalate to: no note


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('expires_after = "tomorrow"', ["`expires_after`", "is not a duration", '"1h30m"']),
        ("remind_after = 30", ["`remind_after` is 30", "write it as a string"]),
        ('expires_after = "0m"', ["`expires_after`", "longer than zero"]),
        ('escalate_after = "2h"', ["`escalate_after` needs `escalate_to`"]),
        ('escalate_to = ["role:admin"]', ["`escalate_to` needs `escalate_after`"]),
        ('escalate_after = "2h"\nescalate_to = []', ["`escalate_to` must be a non-empty list"]),
        ('escalate_after = "2h"\nescalate_to = ["role:boss"]', ["unknown role 'boss'"]),
        ('escalate_after = "2h"\nescalate_to = ["admin"]', ['did you mean "role:admin"']),
        (
            'expires_after = "1h"\nremind_after = "1h"',
            ["`remind_after` (1 h) is not shorter than `expires_after` (1 h)"],
        ),
        (
            'expires_after = "1h"\nescalate_after = "2h"\nescalate_to = ["role:admin"]',
            ["`escalate_after` (2 h) is not shorter than `expires_after` (1 h)"],
        ),
    ],
)
def test_bad_times_are_refused_saying_what_to_write(body: str, words: list[str]) -> None:
    message = _refusal(
        ROLES + 'admin = ["olive@example.com"]\n\n[[rules]]\nname = "big"\ntool = "transfer"\n'
        'approvers = ["role:finance"]\n' + body + "\n"
    )
    assert "rule 'big'" in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    "key", ['expires_after = "1d"', 'remind_after = "1h"', 'escalate_after = "1h"']
)
def test_a_rule_that_decides_alone_takes_no_times(key: str) -> None:
    message = _one_rule(f'tool = "refund"\ndecide = "approve"\n{key}')
    assert "applies only with `approvers`" in message and "remove it" in message


def test_once_escalated_escalate_to_may_decide_too() -> None:
    policy = _timed('escalate_after = "2h"\nescalate_to = ["role:admin"]\n')
    rule = policy.rules[0]
    refused = "Needs approval from role finance, not the requester."
    # Before, someone the escalation will let in reads when, rather than a flat no.
    assert policy.check(rule, OLIVE, decider_is_requester=False) == (
        f"{refused} Escalation lets admin decide too once it has waited 2 h."
    )
    assert policy.check(rule, OLIVE, decider_is_requester=False, escalated=True) is None
    sam = _person("sam@example.com", "ops")  # never let in: no word of the escalation
    assert policy.check(rule, sam, decider_is_requester=False) == refused
    assert policy.check(rule, OLIVE, decider_is_requester=True) == refused  # whoever asked
    assert policy.check(rule, ADA, decider_is_requester=False, escalated=True) is None
    assert policy.check(rule, SAM, decider_is_requester=False, escalated=True) == (
        "Needs approval from role finance or role admin, not the requester."
    )
    # Nobody approves their own request, escalated or not.
    assert policy.check(rule, OLIVE, decider_is_requester=True, escalated=True) == (
        "Needs approval from role finance or role admin, not the requester."
    )
    assert policy.describe_approvers(rule) == "role finance"
    assert policy.describe_approvers(rule, escalated=True) == "role finance or role admin"


def test_escalated_changes_nothing_for_a_rule_without_escalation() -> None:
    policy = _timed("")
    rule = policy.rules[0]
    assert policy.check(rule, OLIVE, decider_is_requester=False, escalated=True) == (
        "Needs approval from role finance, not the requester."
    )
    assert policy.describe_approvers(rule, escalated=True) == "role finance"


def test_the_readme_s_policy_example_loads_and_means_what_it_says(tmp_path: Path) -> None:
    """The README's example policy, copied as it is into a file, starts a server: every role
    it names is defined, and its rules read as the text around it explains."""
    readme = (DEMO_POLICY.parents[2] / "README.md").read_text()
    section = readme[readme.index("### Who may decide: the policy") :]
    example = section[section.index("```toml\n") + len("```toml\n") : section.index("```\n", 8)]
    path = tmp_path / "policy.toml"
    path.write_text(example)
    policy = Policy.load(path)
    assert [rule.name for rule in policy.rules] == ["small-refunds", "large-transfers"]
    small = policy.rule_for_tool("refund", {"amount": 20})
    assert small is not None and small.decide == "approve"
    large = policy.rule_for_tool("transfer", {"recipient": "Bob", "amount": 5000})
    ada, olive = _person("ada@example.com"), _person("olive@example.com")
    assert large is not None and policy.check(large, ada, decider_is_requester=False) is None
    assert policy.check(large, ada, decider_is_requester=True) is not None
    assert policy.check(large, olive, decider_is_requester=False) is not None
    assert policy.check(large, olive, decider_is_requester=False, escalated=True) is None

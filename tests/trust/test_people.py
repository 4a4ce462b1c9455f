"""Who the inbox routes name (`chat_app.trust.people`), from a policy's `[roles]`, the
accounts of a real database (SQLite and PostgreSQL) and the demo people."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType

import pytest
from argon2 import PasswordHasher
from sqlalchemy import Engine

from chat_app.trust import DEMO_PEOPLE, Policy
from chat_app.trust.accounts import Accounts
from chat_app.trust.people import People, Person
from chat_app.trust.store import open_database

PASSWORD = "correct horse"


@pytest.fixture
def accounts(database_url: str) -> Iterator[Accounts]:
    engine: Engine = open_database(database_url)
    try:
        yield Accounts(engine, hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
    finally:
        engine.dispose()


def _policy(**roles: set[str]) -> Policy:
    """A policy built in code: its `[roles]` as written (`Policy.parse` would lower them)."""
    frozen = {role: frozenset(members) for role, members in roles.items()}
    return Policy(source="<test>", roles=MappingProxyType(frozen), rules=())


def test_a_mixed_case_email_in_the_policy_or_a_route_reaches_its_account(
    accounts: Accounts,
) -> None:
    accounts.add_user("ada@example.com", PASSWORD, roles=["finance"], name="Ada Lovelace")
    people = People(_policy(finance={"Ada@Example.com"}), accounts=accounts)
    ada = Person(email="ada@example.com", name="Ada Lovelace")
    # One person, named by her account, however the policy or the route spells her email.
    assert people.named(["role:finance"]) == [ada]
    assert people.named(["user:Ada@Example.COM"]) == [ada]
    assert people.named(["role:finance", "user:ADA@example.com"]) == [ada]


def test_roles_come_from_the_policy_and_from_the_accounts(accounts: Accounts) -> None:
    accounts.add_user("sam@example.com", PASSWORD, roles=["ops"], name="Sam")
    accounts.add_user("olive@example.com", PASSWORD, roles=["ops", "admin"], name="Olive")
    accounts.add_user("rita@example.com", PASSWORD, name="Rita")
    people = People(_policy(ops={"Otto@Example.com"}), accounts=accounts)
    assert people.named(["role:ops"]) == [
        Person("olive@example.com", "Olive"),
        Person("otto@example.com", "otto"),  # in the policy only: no account names him
        Person("sam@example.com", "Sam"),
    ]
    assert people.named(["role:admin", "user:nobody@example.com"]) == [
        Person("nobody@example.com", "nobody"),
        Person("olive@example.com", "Olive"),
    ]
    assert people.named(["*"]) == []
    assert people.named(["role:nobody-has-it"]) == []


def test_the_accounts_are_read_for_what_the_routes_name_only(accounts: Accounts) -> None:
    for n in range(5):
        accounts.add_user(f"clerk{n}@example.com", PASSWORD, roles=["clerks"])
    accounts.add_user("ada@example.com", PASSWORD, roles=["finance"], name="Ada")
    accounts.add_user("sam@example.com", PASSWORD, roles=["ops"], name="Sam")
    found = accounts.find_users(["SAM@example.com "], ["finance"])
    assert [(account.email, account.roles) for account in found] == [
        ("ada@example.com", ("finance",)),
        ("sam@example.com", ("ops",)),
    ]
    assert accounts.find_users() == []
    assert accounts.find_users(["nobody@example.com"], ["nothing", "bad\x00role"]) == []


def test_demo_people_are_named_by_their_demo_names_and_roles() -> None:
    people = People(_policy(), demo=DEMO_PEOPLE)
    assert people.named(["role:ops", "user:Rita@example.com"]) == [
        Person("olive@example.com", "Olive"),
        Person("rita@example.com", "Rita"),
        Person("sam@example.com", "Sam"),
        Person("theo@example.com", "Theo"),
    ]
    assert People(None).named(["role:ops", "user:"]) == []

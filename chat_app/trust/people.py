"""Who the desk's inbox routes name, as people to tell: `People` and `Person`.

A route is `user:<email>`, `role:<role>` or `*`. Its people come from the policy's
`[roles]`, the accounts of the app's database with their roles, and (demo sign-in) the demo
people. `*` is anyone who may see the decision: nobody in particular, so it names no one here
(a webhook's receiver, a team's channel, may know whom to tell).

Emails are compared in lower case on every side: the desk writes its routes that way
(`desk.store.route_of`) and the accounts are stored so, but a policy built in code or a route
written elsewhere may spell `Ada@Example.com`, and it is the same inbox. Imports `identity`,
`policy` and (as a type) `accounts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .identity import Identity
from .policy import Policy

if TYPE_CHECKING:
    from .accounts import Accounts

__all__ = ["People", "Person"]

_USER = "user:"
_ROLE = "role:"


@dataclass(frozen=True, slots=True)
class Person:
    """Someone a route names: a lower-case email and a name to greet them by."""

    email: str
    name: str


def _normal(email: str) -> str:
    return email.strip().lower()


class People:
    """Resolves routes to people (see the module's docstring).

    `accounts` is read per call, for the emails and roles the routes name only, so an account
    added or given a role since is told, and a notice never reads every account.
    """

    def __init__(
        self,
        policy: Policy | None,
        *,
        accounts: Accounts | None = None,
        demo: Iterable[Identity] = (),
    ) -> None:
        self.policy = policy
        self.accounts = accounts
        self.demo = tuple(demo)

    def named(self, routes: Sequence[str]) -> list[Person]:
        """The people `routes` name, once each, by email. Someone known only by an email (a
        policy's `[roles]`, a `user:` route) is named by the part before the `@`.

        Raises:
            SQLAlchemyError: the accounts' database is not answering.
        """
        roles = {r.removeprefix(_ROLE) for r in routes if r.startswith(_ROLE)}
        emails = {_normal(r.removeprefix(_USER)) for r in routes if r.startswith(_USER)}
        if self.policy is not None:
            for role in roles:
                emails |= {_normal(email) for email in self.policy.roles.get(role, ())}
        emails.discard("")
        # The policy's members are looked up too: an account's name greets them.
        known = self._known(emails, roles)
        found = emails | {email for email, (_, has) in known.items() if has & roles}
        return [
            Person(email=email, name=known[email][0] if email in known else email.split("@")[0])
            for email in sorted(found)
        ]

    def _known(self, emails: set[str], roles: set[str]) -> dict[str, tuple[str, frozenset[str]]]:
        """Name and roles by email, of the demo people and of the accounts the routes may
        name (an account's over a demo person's)."""
        known = {_normal(person.email): (person.name, person.roles) for person in self.demo}
        if self.accounts is not None and (emails or roles):
            for account in self.accounts.find_users(emails, roles):
                known[_normal(account.email)] = (account.name, frozenset(account.roles))
        return known

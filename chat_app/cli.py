"""`python -m chat_app`: password accounts and API tokens, managed from a shell.

    python -m chat_app users add EMAIL [--role ROLE]… [--name NAME] [--password-stdin]
    python -m chat_app users list
    python -m chat_app users remove EMAIL
    python -m chat_app users set-password EMAIL [--password-stdin]
    python -m chat_app tokens create --user EMAIL --name NAME
    python -m chat_app tokens list
    python -m chat_app tokens revoke NAME [--user EMAIL]

The database is `CHAT_APP_DATABASE_URL`, else SQLite in `CHAT_APP_DATA_DIR` (as the app
reads them), migrated first. A refused command prints why and exits with status 1.
An entry point: imports `config` and `trust`.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime

from chat_app.config import data_dir
from chat_app.trust.accounts import MIN_PASSWORD_LENGTH, AccountError, Accounts
from chat_app.trust.store import DATABASE_URL_ENV, DatabaseUnavailable, database_url, open_database

__all__ = ["main"]

PROG = "python -m chat_app"


class CommandError(Exception):
    """A refusal the person at the shell reads (exit status 1)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; returns the exit status."""
    options = _parser().parse_args(argv)
    command: Callable[[Accounts, argparse.Namespace], None] = options.run
    try:
        engine = open_database(database_url(os.environ.get(DATABASE_URL_ENV), data_dir()))
        try:
            command(Accounts(engine), options)
        finally:
            engine.dispose()
    except (AccountError, DatabaseUnavailable, CommandError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Manage the app's password accounts and API tokens."
    )
    topics = parser.add_subparsers(title="commands", required=True, metavar="{users,tokens}")

    users = topics.add_parser("users", help="password accounts (CHAT_APP_AUTH=password)")
    user_commands = users.add_subparsers(title="users commands", required=True)
    add = user_commands.add_parser("add", help="add an account")
    add.add_argument("email")
    add.add_argument(
        "--role", action="append", default=[], help="a role (repeat for more), e.g. finance"
    )
    add.add_argument("--name", default="", help="the name the page shows")
    _password_stdin(add)
    add.set_defaults(run=_users_add)
    listing = user_commands.add_parser("list", help="list the accounts")
    listing.set_defaults(run=_users_list)
    remove = user_commands.add_parser("remove", help="remove an account and its API tokens")
    remove.add_argument("email")
    remove.set_defaults(run=_users_remove)
    password = user_commands.add_parser("set-password", help="change an account's password")
    password.add_argument("email")
    _password_stdin(password)
    password.set_defaults(run=_users_set_password)

    tokens = topics.add_parser("tokens", help="API tokens (Authorization: Bearer …)")
    token_commands = tokens.add_subparsers(title="tokens commands", required=True)
    create = token_commands.add_parser("create", help="create a token; it is shown once")
    create.add_argument("--user", required=True, help="the account the token acts as")
    create.add_argument("--name", required=True, help="what the token is for, e.g. ci")
    create.set_defaults(run=_tokens_create)
    token_list = token_commands.add_parser("list", help="list the tokens (never their text)")
    token_list.set_defaults(run=_tokens_list)
    revoke = token_commands.add_parser("revoke", help="revoke a token")
    revoke.add_argument("name")
    revoke.add_argument("--user", help="the token's owner (when several have one by that name)")
    revoke.set_defaults(run=_tokens_revoke)
    return parser


def _password_stdin(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input instead of a prompt",
    )


def _read_password(email: str, from_stdin: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        return line.removesuffix("\n").removesuffix("\r")
    first = getpass.getpass(f"Password for {email} (at least {MIN_PASSWORD_LENGTH} characters): ")
    if getpass.getpass("Repeat it: ") != first:
        raise CommandError("The two passwords differ; nothing was changed.")
    return first


def _users_add(accounts: Accounts, options: argparse.Namespace) -> None:
    email = options.email.strip().lower()
    if accounts.account(email) is not None:  # before asking for a password it cannot use
        raise CommandError(f"{email} already has an account.")
    password = _read_password(email, options.password_stdin)
    account = accounts.add_user(options.email, password, roles=options.role, name=options.name)
    roles = ", ".join(account.roles) or "none"
    print(f"Added {account.email} (roles: {roles}).")


def _users_list(accounts: Accounts, options: argparse.Namespace) -> None:
    found = accounts.list_users()
    if not found:
        print("No accounts. Add one with: python -m chat_app users add EMAIL")
        return
    _table(
        ("EMAIL", "NAME", "ROLES", "CREATED"),
        [(a.email, a.name, ",".join(a.roles), _when(a.created)) for a in found],
    )


def _users_remove(accounts: Accounts, options: argparse.Namespace) -> None:
    accounts.remove_user(options.email)
    print(f"Removed {options.email.strip().lower()} and its API tokens.")


def _users_set_password(accounts: Accounts, options: argparse.Namespace) -> None:
    email = options.email.strip().lower()
    if accounts.account(email) is None:  # before asking for a password it cannot use
        raise CommandError(f"There is no account {email}.")
    accounts.set_password(email, _read_password(email, options.password_stdin))
    print(f"Changed the password of {email}.")


def _tokens_create(accounts: Accounts, options: argparse.Namespace) -> None:
    email = options.user.strip().lower()
    if accounts.account(email) is None:
        # Behind a sign-in proxy too: a token acts as an account of the app's own.
        raise CommandError(
            f"There is no account {email}: add it first with `{PROG} users add {email}` (a "
            "token acts as that account; behind a sign-in proxy its password is never used)."
        )
    token = accounts.create_token(options.user, options.name)
    print(token)
    # On stderr, so `TOKEN=$(python -m chat_app tokens create …)` captures the token alone.
    print(
        f"API token {options.name.strip()!r} for {options.user.strip().lower()}: copy it now, "
        "it will not be shown again. Send it as `Authorization: Bearer <token>`.",
        file=sys.stderr,
    )


def _tokens_list(accounts: Accounts, options: argparse.Namespace) -> None:
    found = accounts.list_tokens()
    if not found:
        print("No API tokens. Create one with: python -m chat_app tokens create --user … --name …")
        return
    _table(
        ("NAME", "OWNER", "CREATED", "LAST USED", "STATUS"),
        [
            (
                t.name,
                t.owner,
                _when(t.created),
                _when(t.last_used) if t.last_used else "never",
                "active" if t.revoked is None else f"revoked {_when(t.revoked)}",
            )
            for t in found
        ],
    )


def _tokens_revoke(accounts: Accounts, options: argparse.Namespace) -> None:
    revoked = accounts.revoke_token(options.name, options.user)
    print(f"Revoked the API token {revoked.name!r} of {revoked.owner}.")


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )

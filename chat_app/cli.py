"""`python -m chat_app`: password accounts and API tokens, managed from a shell; audit exports
and policy files checked.

    python -m chat_app users add EMAIL [--role ROLE]… [--name NAME]
                                 [--password-stdin | --no-password]
    python -m chat_app users list
    python -m chat_app users set-roles EMAIL (--role ROLE… | --no-roles)
    python -m chat_app users remove EMAIL
    python -m chat_app users set-password EMAIL [--password-stdin]
    python -m chat_app tokens create --user EMAIL --name NAME
    python -m chat_app tokens list
    python -m chat_app tokens revoke NAME [--user EMAIL]
    python -m chat_app audit verify FILE
    python -m chat_app policy check [FILE] [--call TOOL ARGS]… [--strict] [--server]

`audit verify` reads an export of the audit trail (the Audit page's Export JSON lines, `GET
/api/audit.jsonl`; `-` for standard input) and checks its hash chain, with no database.
`policy check` reads a policy file (else the one in force) as a start would, with no
database: its rules in words, what it warns of, and which rule each `--call` falls under.

The database is `CHAT_APP_DATABASE_URL`, else SQLite in `CHAT_APP_DATA_DIR` (as the app
reads them), migrated first; every command names it on stderr. Roles are stored in lower case,
as a sign-in proxy's groups are, and one the policy in force (`CHAT_APP_POLICY`, as the app
reads it) does not name draws a warning. A refused command prints why and exits with status 1.
An entry point: imports `config`, `demo` (the default policy's path, and its agent's tools
for `policy check`), `agent`, `client` (a remote agent's tool manifest) and `trust`.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine

from chat_app.agent import ScriptedModel, Tool
from chat_app.agent.gate import policy_problems
from chat_app.client import fetch_manifest
from chat_app.config import (
    AUTH_ENV,
    POLICY_ENV,
    SECURE_ENV,
    TTL_ENV,
    RemoteAgent,
    auth_from_env,
    data_dir,
    interrupt_ttl_from_env,
    policy_edit_problems,
    policy_from_env,
    policy_warnings,
    remote_agent_from_env,
)
from chat_app.demo import POLICY_PATH, build_demo_agent
from chat_app.demo.script import demo_script
from chat_app.interrupts.strict_json import strict_loads
from chat_app.trust import Identity, Policy, PolicyError, describe_duration
from chat_app.trust.accounts import MIN_PASSWORD_LENGTH, Account, AccountError, Accounts
from chat_app.trust.identity import AUDIT_ROLES, is_control
from chat_app.trust.ledger import AuditRecord, verify_chain
from chat_app.trust.policy import closest
from chat_app.trust.policy_summary import describe_rule, judge_call
from chat_app.trust.store import (
    DATABASE_URL_ENV,
    DatabaseUnavailable,
    database_url,
    open_database,
    shown_url,
)

__all__ = ["main"]

PROG = "python -m chat_app"


class CommandError(Exception):
    """A refusal the person at the shell reads (exit status 1)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; returns the exit status."""
    options = _parser().parse_args(argv)
    if options.topic in ("audit", "policy"):  # files, no database
        try:
            if options.topic == "audit":
                return _audit_verify(options.file)
            return _policy_check(
                options.file, options.call or [], strict=options.strict, server=options.server
            )
        except CommandError as error:
            print(f"{PROG}: error: {error}", file=sys.stderr)
            return 1
    command: Callable[[Accounts, argparse.Namespace], None] = options.run
    try:
        engine = open_database(database_url(os.environ.get(DATABASE_URL_ENV), data_dir()))
        try:
            # Run from another folder, the default SQLite file is another, empty database: say
            # which one this is (on stderr, so what scripts read from stdout stays the same).
            print(f"database: {_shown_database(engine)}", file=sys.stderr)
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
        prog=PROG,
        description="Manage the app's password accounts and API tokens; check an audit export "
        "or a policy file.",
    )
    topics = parser.add_subparsers(
        title="commands", required=True, metavar="{users,tokens,audit,policy}", dest="topic"
    )

    users = topics.add_parser("users", help="password accounts (CHAT_APP_AUTH=password)")
    user_commands = users.add_subparsers(title="users commands", required=True)
    add = user_commands.add_parser("add", help="add an account")
    add.add_argument("email")
    add.add_argument(
        "--role", action="append", default=[], help="a role (repeat for more), e.g. finance"
    )
    add.add_argument("--name", default="", help="the name the page shows")
    given = add.add_mutually_exclusive_group()
    _password_stdin(given)
    given.add_argument(
        "--no-password",
        action="store_true",
        help="an account nobody signs in to with a password: a service's, for its API tokens, "
        "or someone's behind a sign-in proxy (set-password gives it one)",
    )
    add.set_defaults(run=_users_add)
    listing = user_commands.add_parser("list", help="list the accounts")
    listing.set_defaults(run=_users_list)
    set_roles = user_commands.add_parser(
        "set-roles",
        help="replace an account's roles",
        description="Give an account exactly the roles named (--role, repeated), or none "
        "(--no-roles); its API tokens and signed-in sessions have them from their next request.",
    )
    set_roles.add_argument("email")
    roles = set_roles.add_mutually_exclusive_group(required=True)
    roles.add_argument(
        "--role", action="append", default=[], help="a role it is to have (repeat for more)"
    )
    roles.add_argument("--no-roles", action="store_true", help="take all its roles away")
    set_roles.set_defaults(run=_users_set_roles)
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

    audit = topics.add_parser("audit", help="the audit trail's exports")
    audit_commands = audit.add_subparsers(title="audit commands", required=True)
    verify = audit_commands.add_parser(
        "verify",
        help="check an export's hash chain",
        description="Check the hash chain of an export of the audit trail (Export JSON lines "
        "on the Audit page, GET /api/audit.jsonl). Prints the number of records and the last "
        "one's hash: compare it with the trail's now (GET /api/audit), since records cut off "
        "the end leave a chain that still holds. Exit status 1 when it does not hold.",
    )
    verify.add_argument("file", help="the export, or - for standard input")

    policy = topics.add_parser("policy", help="check a policy file before the app reads it")
    policy_commands = policy.add_subparsers(title="policy commands", required=True)
    check = policy_commands.add_parser(
        "check",
        help="read a policy as a start would: its rules in words and its warnings",
        description="Read a policy file as the app's start does, against the demo agent's "
        "tools (or, with CHAT_APP_AGENT_URL, the remote agent's tool manifest), and say "
        "each rule in words, what a start would warn of, and which rule each --call falls "
        "under. Exit status 1 when the app would not start on it (with --strict, when it "
        "warns too).",
    )
    check.add_argument(
        "file", nargs="?", help=f"the policy file (default: {POLICY_ENV}, else the demo's)"
    )
    check.add_argument(
        "--call",
        nargs=2,
        action="append",
        metavar=("TOOL", "ARGS"),
        help="a tool call (or a question and its display payload) and its arguments as JSON, "
        """e.g. --call transfer '{"recipient": "Bob", "amount": 5300}'; repeatable""",
    )
    check.add_argument(
        "--strict", action="store_true", help="exit with status 1 when there is a warning"
    )
    check.add_argument(
        "--server",
        action="store_true",
        help="read it as python -m chat_app.server starts (sign-in off unless CHAT_APP_AUTH "
        "says otherwise; its own agent) rather than as the app does (demo sign-in)",
    )
    return parser


@dataclass(frozen=True)
class _Checked:
    """What a policy is checked against: an agent's tools and questions (`None`: not known
    here), where they were read from, and what a rule names that they lack."""

    tools: Mapping[str, Tool] | None
    questions: Collection[str] | None
    #: A remote agent's, from its manifest (else the app's own agent's).
    remote: bool = False
    #: Tools the agent has whose definitions could not be read: judged by name alone.
    unread: Collection[str] = ()
    #: Lines said before the rules: where the tools came from, or why they are not checked.
    notes: tuple[str, ...] = ()
    #: What the check warns of beyond a start's warnings.
    problems: tuple[str, ...] = ()


#: Said of what the check finds in a remote agent's manifest, which a start does not read.
_FROM_MANIFEST = " (from the agent's manifest: the app's start does not check this)"


def _policy_check(
    path: str | None, calls: Sequence[Sequence[str]], *, strict: bool, server: bool
) -> int:
    """Say what the policy at `path` (else the one in force) does, and where each of `calls`
    falls, as the app starts (with `server`, as `python -m chat_app.server` does); 0 when a
    start would take it (and, with `strict`, warns of nothing), else 1."""
    try:
        policy = Policy.load(path) if path is not None else policy_from_env(POLICY_PATH)
        auth_mode = auth_from_env("none" if server else "demo").mode  # each start's default
        ttl = interrupt_ttl_from_env()
        remote = None if server else remote_agent_from_env(auth_mode)
        checked = _own_tools(policy) if remote is None else _remote_tools(policy, remote)
    except (PolicyError, ValueError) as error:
        raise CommandError(str(error)) from None
    judged = policy if policy is not None else Policy.empty()
    # Every call is read before anything is printed: a mistyped one refuses the command whole.
    verdicts = [(tool, text, _judge(judged, checked, tool, text)) for tool, text in calls]
    print(_read_as(auth_mode, ttl, server=server))
    for note in checked.notes:
        print(note)
    if policy is None:
        print(f"No policy is in force ({POLICY_ENV}=none): whoever asked decides every call.")
    else:
        _print_policy(policy, checked, ttl)
    for tool, text, verdict in verdicts:
        print(f"\n--call {tool} {text}\n  {verdict}")
    warnings = [
        *checked.problems,
        *policy_warnings(
            policy,
            auth_mode=auth_mode,
            ttl_seconds=ttl,
            # A remote agent's `editable` names are in `problems`: its start checks none.
            input_schemas=(
                {name: tool.input_schema for name, tool in checked.tools.items()}
                if checked.tools is not None and not checked.remote else None
            ),
        ),
    ]  # fmt: skip
    if warnings:
        print(f"\n{len(warnings)} warning{'' if len(warnings) == 1 else 's'}:")
        for warning in warnings:
            print(f"  {warning}")
    else:
        print("\nNo warnings.")
    return 1 if strict and warnings else 0


def _own_tools(policy: Policy | None) -> _Checked:
    """The app's own agent, built as a start builds it, which refuses (`PolicyError`) a rule
    naming a tool or question it lacks. With the scripted model: a check reads no
    `CHAT_APP_MODEL` and needs no provider's key."""
    agent = build_demo_agent(ScriptedModel(demo_script), policy=policy)
    return _Checked(tools=agent.tools, questions=set(agent.definitions))


def _remote_tools(policy: Policy | None, remote: RemoteAgent) -> _Checked:
    """A remote agent's tools, from its manifest as the app reads it. A start takes any
    policy then (its own agent serves no call), so what a rule names that the manifest lacks
    is a warning here, as is a manifest that cannot be read (`--strict` fails on it). Its
    questions are listed nowhere: a rule's are taken as named."""
    at = remote.shown(remote.url)
    said = (f"The agent is at {at}: its policy decides its calls; this one routes them to "
            "people at the desk.")  # fmt: skip
    manifest = fetch_manifest(remote.tools_url)
    if not manifest.found:
        reasons = " ".join(manifest.problems)
        return _Checked(
            tools=None,
            questions=None,
            remote=True,
            notes=(said, f"Its tools are not checked here: {reasons}"),
            problems=(f"The agent's tools could not be checked: {reasons}",),
        )
    tools = {
        found.name: Tool(name=found.name, description=found.description,
                         input_schema=found.input_schema, needs_approval=found.needs_approval)
        for found in manifest.tools
    }  # fmt: skip
    listed = ", ".join(sorted(tools)) or "none"
    notes = [said, f"Its tools, from its manifest at {remote.shown(remote.tools_url)}: {listed}."]
    notes.extend(f"  {problem}" for problem in manifest.problems)
    problems: list[str] = []
    if policy is not None:
        # A tool whose entry could not be read is the agent's still: only its name is known.
        named = replace(policy, rules=tuple(
            rule for rule in policy.rules if rule.tool not in manifest.left_out
        ))  # fmt: skip
        problems += [str(problem) + _FROM_MANIFEST
                     for problem in policy_problems(named, tools, None, whose=f"the agent at {at}")]
        schemas = {name: tool.input_schema for name, tool in tools.items()}
        problems += [problem + _FROM_MANIFEST for problem in policy_edit_problems(policy, schemas)]
    return _Checked(
        tools=tools,
        questions=None,
        remote=True,
        unread=manifest.left_out,
        notes=tuple(notes),
        problems=tuple(problems),
    )


def _read_as(auth_mode: str, ttl: float | None, *, server: bool) -> str:
    """The settings the check read the policy under, since they change what it says: the
    sign-in (each start has its own default), the TTL."""
    start = "python -m chat_app.server" if server else "the app (make run)"
    default = "" if os.environ.get(AUTH_ENV, "").strip() else " unset: its default"
    if ttl is None:
        expiry = (f"{SECURE_ENV}=0: nothing is sealed, so the engine cannot tell who asked a "
                  "call and not_requester keeps nobody out.")  # fmt: skip
    else:
        expiry = f"interrupts expire after {describe_duration(timedelta(seconds=ttl))} ({TTL_ENV})."
    lines = [f"Read as {start} starts: sign-in {auth_mode} ({AUTH_ENV}{default}); {expiry}"]
    if auth_mode == "none":
        lines.append('With sign-in off everyone is the same visitor: "whoever asked" is anyone '
                     "who can open the app.")  # fmt: skip
    return "\n".join(lines)


def _print_policy(policy: Policy, checked: _Checked, ttl: float | None) -> None:
    count = len(policy.rules)
    print(
        f"\n{policy.source}: {count} rule{'' if count == 1 else 's'}. The first whose tool (or "
        "question) and `when` match a call governs it; whoever asked decides a call no rule "
        "matches."
    )
    elsewhere = sorted(policy.role_names - set(policy.roles))
    if policy.role_names:
        print("\nRoles:")
        width = max(len(role) for role in policy.role_names)
        for role, members in sorted(policy.roles.items()):
            print(f"  {role:<{width}}  {', '.join(sorted(members)) or 'nobody'}")
        for role in elsewhere:
            print(f"  {role:<{width}}  (members from accounts or a sign-in proxy's groups)")
    if policy.rules:
        print("\nRules:")
        for number, rule in enumerate(policy.rules, start=1):
            first, *rest = describe_rule(policy, rule, ttl_seconds=ttl)
            print(f"  {number}. {first}")
            for line in rest:
                print(f"     {line}")
    _print_unruled(policy, checked)


def _print_unruled(policy: Policy, checked: _Checked) -> None:
    """The tools that ask for approval, and the questions, that no rule names: whoever asked
    decides them, which a policy's author may not have meant."""
    tools = sorted(name for name, tool in (checked.tools or {}).items() if tool.needs_approval
                   and not any(rule.tool == name for rule in policy.rules))  # fmt: skip
    questions = sorted(name for name in checked.questions or ()
                       if not any(rule.interrupt == name for rule in policy.rules))  # fmt: skip
    if tools or questions:
        print()
    if tools:
        print(f"No rule names {', '.join(tools)}: whoever asked approves them.")
    if questions:
        print(f"No rule names the question{'s' if len(questions) > 1 else ''} "
              f"{', '.join(questions)}: whoever asked answers.")  # fmt: skip


def _judge(policy: Policy, checked: _Checked, name: str, text: str) -> str:
    """Where a `--call` falls, as the engine takes it, or why it cannot be judged."""
    try:
        args = strict_loads(text)
    except ValueError as error:
        raise CommandError(f"--call {name}: {text!r} is not JSON ({error}).") from None
    if checked.questions is not None:
        question = name in checked.questions
    else:  # a question is what a rule names as one
        question = any(rule.interrupt == name for rule in policy.rules)
    if question or checked.tools is None or name in checked.unread:
        return judge_call(policy, name, args, question=question).words
    tool = checked.tools.get(name)
    if tool is None:
        known = ", ".join(sorted([*checked.tools, *checked.unread, *(checked.questions or ())]))
        if not checked.remote:
            raise CommandError(f"--call {name}: the agent has no tool or question {name}; it "
                               f"has: {known}.")  # fmt: skip
        raise CommandError(f"--call {name}: the agent's manifest lists no tool {name}; it "
                           f"lists: {known} (and a question is one a rule names).")  # fmt: skip
    problem = tool.arguments_problem(args)
    if problem is not None:  # the engine tells the model, before any rule
        if checked.remote:
            return f"Refused before anyone is asked (its schema, in the manifest): {problem}"
        return f"Refused before anyone is asked, and the model is told: {problem}"
    if not tool.needs_approval:
        return f"{name} runs without asking anyone: no rule applies."
    return judge_call(policy, name, args).words


def _audit_verify(path: str) -> int:
    """Check an export's chain: 0 when it holds (what it holds is printed), 1 when not."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CommandError(f"Cannot read {path}: {error.strerror or error}.") from None
    except UnicodeDecodeError:
        raise CommandError(
            f"Cannot read {path}: it is not UTF-8 text (an export is JSON lines in UTF-8; "
            "a PowerShell redirect writes UTF-16)."
        ) from None
    records: list[AuditRecord] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            # Strictly, as the trail was written: NaN could not have been hashed.
            records.append(AuditRecord(**strict_loads(line)))  # type: ignore[arg-type]
        except (ValueError, TypeError, RecursionError) as error:
            raise CommandError(f"Line {number} is not an audit record: {error}.") from None
    try:
        check = verify_chain(records)
    except (ValueError, TypeError) as error:  # a value no trail could have hashed
        raise CommandError(f"The records cannot be checked: {error}.") from None
    if not check.ok:
        print(f"Broken at record {check.broken_at}: {check.reason}.")
        return 1
    if not records:
        print("Intact: no records.")
    else:
        last = records[-1]
        count = "1 record" if len(records) == 1 else f"{len(records)} records"
        print(f"Intact: {count}; the last is record {last.seq}, hash {last.hash}.")
    return 0


def _password_stdin(parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
    parser.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input instead of a prompt",
    )


def _read_password(email: str, from_stdin: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            raise CommandError(
                "--password-stdin read no password: standard input was empty. "
                "Give the password as its first line."
            )
        return line.removesuffix("\n").removesuffix("\r")
    if not _has_terminal():
        # getpass would read stdin instead, echoing, and end in EOFError at its end.
        raise CommandError(
            "There is no terminal to ask for the password on: "
            "give it as the first line of standard input, with --password-stdin."
        )
    try:
        first = getpass.getpass(
            f"Password for {email} (at least {MIN_PASSWORD_LENGTH} characters): "
        )
        again = getpass.getpass("Repeat it: ")
    except EOFError:  # Ctrl-D at the prompt
        print(file=sys.stderr)  # after the prompt, which ends no line
        raise CommandError("No password was given (input ended); nothing was changed.") from None
    if again != first:
        raise CommandError("The two passwords differ; nothing was changed.")
    return first


def _has_terminal() -> bool:
    """Whether getpass can ask without echoing: standard input is a terminal, or this process
    has one (getpass asks on `/dev/tty` first)."""
    if sys.stdin.isatty():
        return True
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        return False
    return True


def _users_add(accounts: Accounts, options: argparse.Namespace) -> None:
    email = options.email.strip().lower()
    name = _plain("A name", options.name.strip())
    if accounts.account(email) is not None:  # before asking for a password it cannot use
        raise CommandError(f"{email} already has an account.")
    password = None if options.no_password else _read_password(email, options.password_stdin)
    account = accounts.add_user(options.email, password, roles=options.role, name=name)
    without = "" if account.has_password else ", no password: API tokens and a sign-in proxy only"
    print(f"Added {account.email} (roles: {', '.join(account.roles) or 'none'}{without}).")
    _check_roles(account.roles)


def _users_set_roles(accounts: Accounts, options: argparse.Namespace) -> None:
    email = options.email.strip().lower()
    before = accounts.account(email)
    if before is None:
        raise CommandError(f"There is no account {email}.")
    account = accounts.set_roles(email, options.role)
    now = ", ".join(account.roles) or "none"
    print(
        f"Changed the roles of {account.email} to {now} "
        f"(they were: {', '.join(sorted(before.roles)) or 'none'})."
    )
    _check_roles(account.roles, changed=account.email)


def _check_roles(roles: Sequence[str], *, changed: str = "") -> None:
    """Warns on stderr of what the account's `roles` do not settle: roles that grant nothing
    (neither the app itself nor the policy in force names them: a typo, or a policy yet to be
    written), and, for the account `changed`, roles it keeps because the policy's `[roles]`
    gives them to its email. The command has succeeded: a role may be given before the
    policy that uses it."""
    try:
        policy = policy_from_env(POLICY_PATH)
    except PolicyError as error:
        if roles:
            print(
                f"{PROG}: warning: the role names were not checked against the policy, which "
                f"cannot be read: {error}",
                file=sys.stderr,
            )
        return
    if policy is not None and changed:
        kept = [role for role in _given_by(policy, changed) if role not in roles]
        if kept:
            it = "it" if len(kept) == 1 else "them"
            print(
                f"{PROG}: warning: {changed} still has the role{'' if it == 'it' else 's'} "
                f"{_names(kept)}: the policy in force ({policy.source}) gives {it} in its "
                f"[roles], whatever the account holds. Change {it} there.",
                file=sys.stderr,
            )
    _warn_of_unknown_roles(roles, policy)


def _warn_of_unknown_roles(roles: Sequence[str], policy: Policy | None) -> None:
    if not roles:
        return
    own = AUDIT_ROLES
    named = policy.role_names if policy is not None else frozenset()
    unknown = [role for role in roles if role not in own | named]
    if not unknown:
        return
    if policy is None:
        where = f"No policy is in force ({POLICY_ENV}=none)"
    else:
        where = f"The policy in force ({policy.source}) names {_names(named)}"
    which = (
        f"the role {unknown[0]} grants"
        if len(unknown) == 1
        else f"the roles {_names(unknown)} grant"
    )
    # A typo ("fiance") is stored as typed: the likeliest mistake is named with its mend.
    meant = [f"{close} for {role}" for role in unknown if (close := closest(role, own | named))]
    hint = f" Did you mean {', '.join(meant)}?" if meant else ""
    print(
        f"{PROG}: warning: {which} nothing yet. {where}; the app itself knows "
        f"{_names(own)}.{hint} Change the account's roles with `{PROG} users set-roles`.",
        file=sys.stderr,
    )


def _names(roles: Iterable[str]) -> str:
    found = sorted(roles)
    return ", ".join(found) if found else "no roles"


def _users_list(accounts: Accounts, options: argparse.Namespace) -> None:
    found = accounts.list_users()
    if not found:
        print("No accounts. Add one with: python -m chat_app users add EMAIL")
        return
    given = _roles_the_policy_gives(found)
    _table(
        ("EMAIL", "NAME", "ROLES", "FROM POLICY", "PASSWORD", "CREATED"),
        [(a.email, a.name, ",".join(a.roles), given.get(a.email, ""),
          "yes" if a.has_password else "none", _when(a.created)) for a in found],
    )  # fmt: skip


def _roles_the_policy_gives(accounts: Sequence[Account]) -> dict[str, str]:
    """By email, the roles the policy in force gives each account in its `[roles]`, whether
    the account holds them too or not (a person's roles are both columns'): removing one
    from the account leaves it to them while the policy gives it. "?" for every account,
    with a warning, when the policy cannot be read."""
    try:
        policy = policy_from_env(POLICY_PATH)
    except PolicyError as error:
        print(f"{PROG}: warning: FROM POLICY is unknown: the policy cannot be read: {error}",
              file=sys.stderr)  # fmt: skip
        return {account.email: "?" for account in accounts}
    if policy is None:
        return {}
    given = {account.email: _given_by(policy, account.email) for account in accounts}
    return {email: ",".join(roles) for email, roles in given.items() if roles}


def _given_by(policy: Policy, email: str) -> list[str]:
    """The roles `policy`'s `[roles]` gives `email`."""
    return sorted(policy.roles_of(Identity(email=email, method="password")))


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
    if not options.name.strip():
        raise CommandError(
            "A token's name cannot be blank: give one that says what the token is for, "
            "e.g. --name ci."
        )
    _plain("A token's name", options.name.strip())
    if accounts.account(email) is None:
        # Behind a sign-in proxy too: a token acts as an account of the app's own.
        raise CommandError(
            f"There is no account {email}: add it first with `{PROG} users add {email} "
            "--no-password` (a token acts as that account; for a person who also signs in "
            "with a password, leave out --no-password)."
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


def _shown_database(engine: Engine) -> str:
    """The database's URL with its password hidden, and a relative SQLite path made absolute
    (it is relative to the folder the command ran in)."""
    url = engine.url
    path = url.database or ""
    if url.get_backend_name() == "sqlite" and path not in ("", ":memory:"):
        if not path.startswith("file:") and not os.path.isabs(path):
            url = url.set(database=os.path.abspath(path))
    return shown_url(url)


def _escaped(text: str) -> str:
    """`text` with its control characters written as Python escapes (`\\x1b`, `\\n`), so a
    name cannot move the cursor, recolour the terminal or break a table's line."""
    return "".join(repr(c)[1:-1] if is_control(c) else c for c in text)


def _plain(what: str, text: str) -> str:
    """`text`, refused when it holds a control character (`what` names it in the message)."""
    if any(is_control(c) for c in text):
        raise CommandError(
            f"{what} cannot hold control characters (a tab, a line break, a terminal escape, "
            "a right-to-left override); "
            f"'{_escaped(text)}' has one. Give it as plain text."
        )
    return text


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    rows = [tuple(_escaped(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )

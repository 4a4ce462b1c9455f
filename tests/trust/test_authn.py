"""Who a request is from: session cookies (`SessionSigner`), the `Authenticator` in each
sign-in mode, and the settings that configure it (`chat_app.config.auth_from_env`)."""

from __future__ import annotations

import base64
import ipaddress
import json
import math

import pytest

from chat_app.config import auth_from_env
from chat_app.trust import ANONYMOUS, DEMO_PEOPLE, Identity
from chat_app.trust.authn import (
    SIGNED_OUT,
    AuthConfig,
    Authenticator,
    AuthFailure,
    AuthMode,
    cookie_value,
    forwarded_identity,
    parse_networks,
)
from chat_app.trust.identity import SessionEnd
from chat_app.trust.sessions import NOTE_SECONDS, SESSION_COOKIE, SessionSigner

SECRET = b"s" * 32
ADA = Identity(email="ada@example.com", method="password", name="Ada", roles=frozenset({"finance"}))
RITA, ADA_DEMO = DEMO_PEOPLE[0], DEMO_PEOPLE[1]


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeDirectory:
    """Accounts and tokens in memory, as `chat_app.trust.accounts.Accounts` answers."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self.signed_out: dict[str, float] = {}
        self.accounts: dict[str, Identity] = {ADA.email: ADA}
        self.tokens: dict[str, Identity] = {
            "cat_good": Identity(email="bot@example.com", method="token", token_name="nightly")
        }

    def check_password(self, email: str, password: str) -> Identity | None:
        return self.accounts.get(email) if password == "right" else None

    def session_account(self, email: str, issued: float) -> Identity | SessionEnd:
        if email not in self.accounts:
            return "removed"
        ended = math.floor(self.signed_out.get(email, 0.0))
        return "signed-out" if issued < ended else self.accounts[email]

    def sign_out(self, email: str) -> None:
        self.signed_out[email] = self.clock()

    def identity_for_token(self, token: str) -> Identity | None:
        return self.tokens.get(token)


def authenticator(
    mode: AuthMode,
    clock: Clock | None = None,
    directory: FakeDirectory | None = None,
    **options: object,
) -> Authenticator:
    config = AuthConfig(mode=mode, **options)  # type: ignore[arg-type]
    signer = SessionSigner(SECRET, config.session_ttl_seconds, clock=clock or Clock())
    return Authenticator(config, signer=signer, directory=directory or FakeDirectory())


def cookie(auth: Authenticator, identity: Identity) -> dict[str, str]:
    return {"Cookie": f"theme=dark; {SESSION_COOKIE}={auth.signer.issue(identity)}"}


def failure(result: Identity | AuthFailure) -> str:
    assert isinstance(result, AuthFailure), result
    return result.message


# -- SessionSigner ----------------------------------------------------------------------


def test_a_session_reads_back_as_the_email_and_method_it_was_issued_for() -> None:
    signer = SessionSigner(SECRET, 3600, clock=Clock())
    assert signer.read(signer.issue(ADA)) == ("ada@example.com", "password")


def test_a_session_carries_email_method_and_issue_time_and_never_roles() -> None:
    clock = Clock()
    value = SessionSigner(SECRET, 3600, clock=clock).issue(ADA)
    payload = value.split(".")[0]
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert decoded == ["ada@example.com", "password", int(clock.now)]


def test_a_session_expires_after_its_lifetime() -> None:
    clock = Clock()
    signer = SessionSigner(SECRET, 60, clock=clock)
    value = signer.issue(ADA)
    clock.now += 59
    assert signer.read(value) is not None
    clock.now += 1
    assert signer.read(value) is None
    assert signer.check(value) == "expired"


def test_a_sign_in_message_is_shown_only_under_its_seal_and_only_for_a_while() -> None:
    """The sign-in page's address is anyone's to write: a message shows there only with the
    seal the server made for exactly its words, for `NOTE_SECONDS`, and not from a session's
    key or another secret."""
    clock = Clock()
    signer = SessionSigner(SECRET, 3600, clock=clock)
    said = "Wrong email or password."
    seal = signer.seal_note(said)
    assert signer.note_sealed(said, seal)
    made, _, signature = seal.partition(".")
    for text, forged in (
        ("Sign in at https://evil.example to reset it.", seal),  # other words
        (said, f"{int(made) + 1}.{signature}"),  # its time moved
        (said, SessionSigner(b"another secret", 3600, clock=clock).seal_note(said)),
        (said, signature), (said, ""), (said, "x.y"),
    ):  # fmt: skip
        assert not signer.note_sealed(text, forged), forged
    clock.now += NOTE_SECONDS
    assert signer.note_sealed(said, seal)
    clock.now += 1
    assert not signer.note_sealed(said, seal)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda value: value[:-1] + ("A" if value[-1] != "A" else "B"),  # signature changed
        lambda value: "WyJvbGl2ZUBleGFtcGxlLmNvbSIsImRlbW8iLDBd" + value[value.index(".") :],
        lambda value: SessionSigner(b"another secret", 60).issue(ADA),
        lambda value: "",
        lambda value: "no-dot-at-all",
        lambda value: value + ".extra",
    ],
    ids=["signature", "payload", "other-secret", "empty", "malformed", "appended"],
)
def test_a_forged_or_malformed_session_reads_as_nothing(mangle: object) -> None:
    signer = SessionSigner(SECRET, 3600, clock=Clock())
    value = mangle(signer.issue(ADA))  # type: ignore[operator]
    assert signer.read(value) is None
    assert signer.check(value) == "invalid"


def test_a_signed_value_that_is_not_a_session_is_invalid() -> None:
    from itsdangerous import URLSafeSerializer

    signer = SessionSigner(SECRET, 3600, clock=Clock())
    serializer = signer._serializer  # same key and salt: only the shape is wrong
    for payload in (["ada@example.com", "admin", 0], {"email": "x"}, ["", "password", 0]):
        assert signer.check(serializer.dumps(payload)) == "invalid"
    assert isinstance(serializer, URLSafeSerializer)


def test_a_session_issued_in_the_future_is_invalid() -> None:
    clock = Clock()
    value = SessionSigner(SECRET, 3600, clock=Clock(clock.now + 3600)).issue(ADA)
    assert SessionSigner(SECRET, 3600, clock=clock).check(value) == "invalid"


def test_the_anonymous_visitor_has_no_session() -> None:
    with pytest.raises(ValueError, match="anonymous"):
        SessionSigner(SECRET, 60).issue(ANONYMOUS)


# -- none ---------------------------------------------------------------------------------


def test_without_sign_in_everyone_is_anonymous_whatever_they_send() -> None:
    auth = authenticator("none")
    headers = {"X-Forwarded-Email": "ceo@corp", "Authorization": "Bearer cat_good"}
    assert auth.authenticate(headers, "127.0.0.1") is ANONYMOUS


# -- proxy --------------------------------------------------------------------------------


def test_a_trusted_proxy_names_the_person_and_their_groups_become_roles() -> None:
    auth = authenticator("proxy", groups_header="X-Forwarded-Groups")
    who = auth.authenticate(
        {"x-forwarded-email": " Mallory@Corp ", "X-FORWARDED-GROUPS": " Finance, ops ,,"},
        "127.0.0.1",
    )
    assert who == Identity(
        email="mallory@corp", method="proxy", roles=frozenset({"finance", "ops"})
    )


def test_a_proxy_name_header_names_the_person() -> None:
    auth = authenticator("proxy", name_header="X-Forwarded-Name")
    headers = {"X-Forwarded-Email": "ada@corp", "x-forwarded-name": "  Ada\tLovelace "}
    who = auth.authenticate(headers, "127.0.0.1")
    assert isinstance(who, Identity) and who.name == "Ada Lovelace"
    assert who.label == "Ada Lovelace <ada@corp>"
    # Servers read header bytes as Latin-1; a proxy's UTF-8 name is read as UTF-8.
    sent = "Zoë Ñúñez".encode().decode("latin-1")
    who = auth.authenticate({"X-Forwarded-Email": "zoe@corp", "X-Forwarded-Name": sent}, "::1")
    assert isinstance(who, Identity) and who.name == "Zoë Ñúñez"
    # A Latin-1 name that is not UTF-8 stays as it came; a long one is cut.
    who = auth.authenticate({"X-Forwarded-Email": "z@corp", "X-Forwarded-Name": "Zoë"}, "::1")
    assert isinstance(who, Identity) and who.name == "Zoë"
    who = auth.authenticate({"X-Forwarded-Email": "z@corp", "X-Forwarded-Name": "A" * 500}, "::1")
    assert isinstance(who, Identity) and who.name == "A" * 80
    # A zero-width joiner is part of a name (Persian, Indic scripts); a line break is not.
    joined = "مهر\u200cنوش\r\nX-Evil: 1"
    sent = joined.encode().decode("latin-1")
    who = auth.authenticate({"X-Forwarded-Email": "m@corp", "X-Forwarded-Name": sent}, "::1")
    assert isinstance(who, Identity) and who.name == "مهر\u200cنوش X-Evil: 1"
    # A right-to-left override would show "Eve\u202eadA" as "EveAda": it goes.
    sent = "Eve\u202eadA".encode().decode("latin-1")
    who = auth.authenticate({"X-Forwarded-Email": "e@corp", "X-Forwarded-Name": sent}, "::1")
    assert isinstance(who, Identity) and who.name == "Eve adA"
    # Without the header (or without the setting) the person is their email.
    who = auth.authenticate({"X-Forwarded-Email": "ada@corp"}, "127.0.0.1")
    assert isinstance(who, Identity) and (who.name, who.label) == ("", "ada@corp")
    who = authenticator("proxy").authenticate(headers, "127.0.0.1")
    assert isinstance(who, Identity) and who.name == ""


def test_an_identity_the_app_forwards_is_read_back_by_a_server_taking_it_as_its_proxy() -> None:
    """The app signs its people in to a remote agent as their proxy: what it sends is what
    that server, set up as the README says, reads back (a name beyond ASCII too); nobody is
    sent as nobody, and the remote refuses them."""
    remote = authenticator("proxy", name_header="X-Forwarded-Name")
    zoe = Identity(email="zoe@corp", method="demo", name="Zoë Ñúñez", roles=frozenset({"x"}))
    for person in (ADA, zoe):
        sent = forwarded_identity(person)
        # As a server's HTTP layer hands header bytes over: Latin-1 text.
        received = {
            name: value.decode("latin-1") if isinstance(value, bytes) else value
            for name, value in sent.items()
        }
        who = remote.authenticate(received, "127.0.0.1")
        assert isinstance(who, Identity)
        assert (who.email, who.name, who.method) == (person.email, person.name, "proxy")
        assert who.roles == frozenset()  # roles are the remote's own to give
    assert forwarded_identity(ANONYMOUS) == {}
    assert isinstance(remote.authenticate({}, "127.0.0.1"), AuthFailure)
    # A name stored with a line break (accounts refuse only NUL) goes on one line: a header
    # value may hold no control character, and the person's runs must not fail on it.
    broken = Identity(email="bo@corp", method="password", name="Bo\nX-Forwarded-Email: x\v")
    assert forwarded_identity(broken)["X-Forwarded-Name"] == b"Bo X-Forwarded-Email: x"


def test_the_proxy_header_from_an_untrusted_address_is_refused() -> None:
    auth = authenticator("proxy", trusted_proxies=parse_networks(["10.0.0.0/8"]))
    for host in ("127.0.0.1", "192.168.1.4", None, "testclient", "/run/app.sock"):
        who = auth.authenticate({"X-Forwarded-Email": "ceo@corp"}, host)
        assert failure(who) == "Requests must come through the sign-in proxy."
    assert auth.authenticate({"X-Forwarded-Email": "ceo@corp"}, "10.2.3.4") == Identity(
        email="ceo@corp", method="proxy"
    )


def test_an_ipv4_proxy_reached_over_ipv6_is_still_trusted() -> None:
    auth = authenticator("proxy")
    who = auth.authenticate({"X-Forwarded-Email": "ada@corp"}, "::ffff:127.0.0.1")
    assert isinstance(who, Identity) and who.email == "ada@corp"
    assert isinstance(auth.authenticate({"X-Forwarded-Email": "ada@corp"}, "::1"), Identity)


def test_a_trusted_request_without_the_user_header_names_the_header() -> None:
    auth = authenticator("proxy", user_header="X-Auth-Request-Email")
    assert failure(auth.authenticate({"X-Forwarded-Email": "ada@corp"}, "127.0.0.1")) == (
        "The sign-in proxy sent no X-Auth-Request-Email header."
    )
    assert failure(auth.authenticate({"X-Auth-Request-Email": "  "}, "127.0.0.1")) == (
        "The sign-in proxy sent no X-Auth-Request-Email header."
    )


def test_iap_prefixes_the_email_with_its_issuer() -> None:
    auth = authenticator("proxy", user_header="X-Goog-Authenticated-User-Email")
    who = auth.authenticate(
        {"X-Goog-Authenticated-User-Email": "accounts.google.com:ada@corp"}, "::1"
    )
    assert isinstance(who, Identity) and who.email == "ada@corp"


def test_a_proxy_deployment_ignores_session_cookies() -> None:
    auth = authenticator("proxy")
    assert failure(auth.authenticate(cookie(auth, ADA), "127.0.0.1")).startswith(
        "The sign-in proxy sent no"
    )


# -- tokens -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["demo", "password", "proxy"])
def test_an_api_token_names_its_owner_in_every_mode_with_sign_in(mode: AuthMode) -> None:
    auth = authenticator(mode)
    who = auth.authenticate({"authorization": "bearer  cat_good "}, "192.0.2.1")
    assert who == Identity(email="bot@example.com", method="token", token_name="nightly")


def test_an_unknown_or_revoked_token_is_refused() -> None:
    auth = authenticator("password")
    assert failure(auth.authenticate({"Authorization": "Bearer cat_revoked"}, "127.0.0.1")) == (
        "The API token is not valid or was revoked."
    )


@pytest.mark.parametrize("header", ["Bearer ", "Bearer", "Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig"])
def test_a_bearer_that_is_not_one_of_our_tokens_proves_nothing(header: str) -> None:
    """A sign-in proxy may pass its own bearer token along: its headers decide, not that.
    Alone, it was meant for us: it is refused saying what our tokens look like, in the demo
    too (not taken for its first person); beside a session, the session decides."""
    for mode in ("password", "demo"):
        alone = authenticator(mode).authenticate({"Authorization": header}, None)
        assert failure(alone).startswith("This is not an API token of this app (they start ")
    proxied = authenticator("proxy").authenticate(
        {"Authorization": header, "X-Forwarded-Email": "ada@corp"}, "127.0.0.1"
    )
    assert isinstance(proxied, Identity) and proxied.email == "ada@corp"
    demo = authenticator("demo")
    cookie = f"{SESSION_COOKIE}={demo.signer.issue(ADA_DEMO)}"
    beside = demo.authenticate({"Authorization": header, "Cookie": cookie}, None)
    assert beside == ADA_DEMO


@pytest.mark.parametrize("header", ["Token cat_good", "cat_good", "Basic cat_good"])
def test_our_token_without_bearer_is_refused_saying_how_to_send_it(header: str) -> None:
    for mode in ("password", "demo", "proxy"):
        refused = authenticator(mode).authenticate({"Authorization": header}, "127.0.0.1")
        assert failure(refused) == "Send the API token as Authorization: Bearer <token>."


def test_a_token_is_refused_when_there_is_no_directory() -> None:
    config = AuthConfig(mode="proxy")
    auth = Authenticator(config, signer=SessionSigner(SECRET, 60), directory=None)
    assert failure(auth.authenticate({"Authorization": "Bearer cat_good"}, "::1")) == (
        "The API token is not valid or was revoked."
    )


def test_a_token_wins_over_a_proxy_header() -> None:
    auth = authenticator("proxy")
    headers = {"Authorization": "Bearer cat_good", "X-Forwarded-Email": "ceo@corp"}
    who = auth.authenticate(headers, "127.0.0.1")
    assert isinstance(who, Identity) and who.email == "bot@example.com"


# -- password -----------------------------------------------------------------------------


def test_password_mode_without_a_cookie_asks_to_sign_in() -> None:
    auth = authenticator("password")
    assert failure(auth.authenticate({"Cookie": "theme=dark"}, "127.0.0.1")) == "Sign in first."
    assert failure(auth.authenticate({}, None)) == "Sign in first."


def test_a_password_session_reads_the_account_again_on_every_request() -> None:
    directory = FakeDirectory()
    auth = authenticator("password", directory=directory)
    headers = cookie(auth, ADA)
    assert auth.authenticate(headers, "192.0.2.1") == ADA
    directory.accounts[ADA.email] = ADA.with_roles(frozenset({"admin"}))
    who = auth.authenticate(headers, "192.0.2.1")
    assert isinstance(who, Identity) and who.roles == {"finance", "admin"}
    del directory.accounts[ADA.email]
    assert failure(auth.authenticate(headers, "192.0.2.1")) == (
        "This account no longer exists; ask an admin."
    )


def test_signing_out_ends_every_session_issued_before_it() -> None:
    """Another tab's cookie, or a copy of it, stops counting; a sign-in right after counts
    (those of the sign-out's own millisecond count too)."""
    clock = Clock()
    directory = FakeDirectory(clock)
    auth = authenticator("password", clock=clock, directory=directory)
    this_tab, other_tab = cookie(auth, ADA), cookie(auth, ADA)
    clock.now += 1.5
    signed_in = auth.authenticate(this_tab, None)
    assert isinstance(signed_in, Identity)
    auth.sign_out(signed_in)
    assert failure(auth.authenticate(other_tab, None)) == SIGNED_OUT
    assert auth.authenticate(cookie(auth, ADA), None) == ADA  # the same millisecond
    # Nobody's sessions end for a demo person or a token's owner.
    token_owner = Identity(email=ADA.email, method="token")
    for found in (DEMO_PEOPLE[0], token_owner):
        auth.sign_out(found)
    assert directory.signed_out == {ADA.email: clock.now}


def test_an_expired_password_session_says_so() -> None:
    clock = Clock()
    auth = authenticator("password", clock=clock, session_ttl_seconds=60)
    headers = cookie(auth, ADA)
    clock.now += 61
    assert failure(auth.authenticate(headers, None)) == "Your session expired; sign in again."


def test_a_forged_password_session_says_so() -> None:
    auth = authenticator("password")
    value = auth.signer.issue(ADA)
    forged = {"Cookie": f"{SESSION_COOKIE}={value[:-2]}xx"}
    assert failure(auth.authenticate(forged, None)) == "This session is not valid; sign in again."


def test_a_demo_session_does_not_sign_in_to_a_password_deployment() -> None:
    auth = authenticator("password")
    assert failure(auth.authenticate(cookie(auth, ADA_DEMO), None)) == (
        "This session is not valid; sign in again."
    )


def test_password_mode_ignores_proxy_headers() -> None:
    auth = authenticator("password")
    assert failure(auth.authenticate({"X-Forwarded-Email": "ceo@corp"}, "127.0.0.1")) == (
        "Sign in first."
    )


# -- demo ---------------------------------------------------------------------------------


def test_a_demo_visitor_without_a_cookie_is_rita() -> None:
    assert authenticator("demo").authenticate({}, "192.0.2.1") == RITA
    assert RITA.email == "rita@example.com"


def test_a_demo_cookie_names_the_demo_person_with_their_roles() -> None:
    auth = authenticator("demo")
    assert auth.authenticate(cookie(auth, ADA_DEMO), "192.0.2.1") == ADA_DEMO


def test_a_demo_cookie_for_someone_who_is_not_a_demo_person_is_invalid() -> None:
    auth = authenticator("demo")
    stranger = Identity(email="ceo@corp", method="demo")
    assert failure(auth.authenticate(cookie(auth, stranger), None)) == (
        "This session is not valid; sign in again."
    )
    assert failure(auth.authenticate(cookie(auth, ADA), None)) == (
        "This session is not valid; sign in again."
    )


def test_demo_people_are_found_by_email_in_demo_mode_only() -> None:
    assert authenticator("demo").demo_person(" ADA@example.com") == ADA_DEMO
    assert authenticator("demo").demo_person("ceo@corp") is None
    assert authenticator("password").demo_person("ada@example.com") is None


# -- helpers and settings -------------------------------------------------------------------


def test_cookie_values_are_read_from_a_cookie_header() -> None:
    header = 'a=1; chat_app_session="quoted.value"; chat_app_session=second'
    assert cookie_value(header, "chat_app_session") == "quoted.value"
    assert cookie_value("chat_app_sessionx=1; b", "chat_app_session") is None
    assert cookie_value("", "chat_app_session") is None


def test_networks_are_addresses_or_cidrs() -> None:
    assert parse_networks(["10.0.0.1", " 192.168.0.0/16 ", "", "::1"]) == (
        ipaddress.ip_network("10.0.0.1/32"),
        ipaddress.ip_network("192.168.0.0/16"),
        ipaddress.ip_network("::1/128"),
    )
    with pytest.raises(ValueError, match="'proxy.local' is not an IP address or CIDR"):
        parse_networks(["10.0.0.1", "proxy.local"])


def test_each_mode_describes_itself_for_the_log() -> None:
    assert AuthConfig().describe() == ("none — anyone who can reach this port can answer any pause")
    assert AuthConfig(mode="proxy").describe() == (
        "proxy (X-Forwarded-Email from 127.0.0.1/32, ::1/128)"
    )
    assert AuthConfig(mode="proxy", name_header="X-Forwarded-Name").describe() == (
        "proxy (X-Forwarded-Email from 127.0.0.1/32, ::1/128, names in X-Forwarded-Name)"
    )
    assert AuthConfig(mode="password").describe().startswith("password (")
    assert AuthConfig(mode="demo").describe().startswith("demo (")
    with pytest.raises(ValueError, match="sign-in mode"):
        AuthConfig(mode="open")  # type: ignore[arg-type]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (
        "CHAT_APP_AUTH",
        "CHAT_APP_USER_HEADER",
        "CHAT_APP_GROUPS_HEADER",
        "CHAT_APP_NAME_HEADER",
        "CHAT_APP_TRUSTED_PROXIES",
        "CHAT_APP_SESSION_HOURS",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_settings_default_to_the_callers_mode(clean_env: pytest.MonkeyPatch) -> None:
    assert auth_from_env("none") == AuthConfig(mode="none", session_ttl_seconds=12 * 3600)
    assert auth_from_env("demo").mode == "demo"


def test_settings_are_read_from_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("CHAT_APP_AUTH", " Proxy ")
    clean_env.setenv("CHAT_APP_USER_HEADER", "X-Auth-Request-Email")
    clean_env.setenv("CHAT_APP_GROUPS_HEADER", "X-Auth-Request-Groups")
    clean_env.setenv("CHAT_APP_NAME_HEADER", "X-Auth-Request-Preferred-Username")
    clean_env.setenv("CHAT_APP_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1")
    clean_env.setenv("CHAT_APP_SESSION_HOURS", "0.5")
    assert auth_from_env("none") == AuthConfig(
        mode="proxy",
        user_header="X-Auth-Request-Email",
        groups_header="X-Auth-Request-Groups",
        name_header="X-Auth-Request-Preferred-Username",
        trusted_proxies=parse_networks(["10.0.0.0/8", "127.0.0.1/32"]),
        session_ttl_seconds=1800,
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CHAT_APP_AUTH", "oauth", "CHAT_APP_AUTH='oauth' is not a sign-in mode; use one of "
                                   "demo, password, proxy, none."),
        ("CHAT_APP_TRUSTED_PROXIES", "127.0.0.1,proxy.local",
         "CHAT_APP_TRUSTED_PROXIES: 'proxy.local' is not an IP address or CIDR"),
        ("CHAT_APP_SESSION_HOURS", "soon", "CHAT_APP_SESSION_HOURS='soon' is not a number"),
        ("CHAT_APP_SESSION_HOURS", "0", "CHAT_APP_SESSION_HOURS='0' is not a number"),
        ("CHAT_APP_USER_HEADER", "X Email", "CHAT_APP_USER_HEADER='X Email' is not an HTTP"),
        ("CHAT_APP_NAME_HEADER", "Name:", "CHAT_APP_NAME_HEADER='Name:' is not an HTTP"),
    ],
)  # fmt: skip
def test_a_bad_setting_names_the_variable(
    clean_env: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    clean_env.setenv(variable, value)
    with pytest.raises(ValueError) as raised:
        auth_from_env("none")
    assert str(raised.value).startswith(message)

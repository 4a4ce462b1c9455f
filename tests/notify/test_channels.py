"""What each channel says, and the webhook's signature: no database here."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import httpx
import pytest

from chat_app.notify import DeliveryError, Notice, NotifySettings, Recipient, sign, verify
from chat_app.notify.email import render
from chat_app.notify.webhook import json_body, post, slack_body
from tests.notify.notices import ADA, START, make_notice
from tests.notify.servers import closed_url, webhook_receiver

SECRET = b"receiver-and-app-share-this"
NOW = START.timestamp()


# --- the signature ------------------------------------------------------------------------


def test_sign_then_verify() -> None:
    body = json_body(make_notice())
    signature = sign(SECRET, "1893488400", body)
    assert signature.startswith("sha256=") and len(signature) == len("sha256=") + 64
    assert verify(SECRET, "1893488400", body, signature, now=1893488400)
    assert verify(SECRET, "1893488400", body, signature, now=1893488400 + 299)
    assert not verify(b"another secret", "1893488400", body, signature, now=1893488400)


def test_a_replay_with_an_old_or_future_timestamp_is_refused() -> None:
    body = json_body(make_notice())
    signature = sign(SECRET, "1893488400", body)
    assert not verify(SECRET, "1893488400", body, signature, now=1893488400 + 301)
    assert not verify(SECRET, "1893488400", body, signature, now=1893488400 - 301)
    later = 1893488400 + 301
    assert verify(SECRET, "1893488400", body, signature, now=later, tolerance_seconds=600)
    # Moving the timestamp forward breaks the signature: it is inside the MAC.
    assert not verify(SECRET, "1893488700", body, signature, now=1893488700)


def test_a_tampered_body_or_a_malformed_header_fails() -> None:
    body = json_body(make_notice())
    signature = sign(SECRET, "1893488400", body)
    tampered = body.replace(b"5000", b"9000")
    assert tampered != body
    assert not verify(SECRET, "1893488400", tampered, signature, now=1893488400)
    assert not verify(SECRET, "soon", body, signature, now=1893488400)
    assert not verify(SECRET, "1893488400", body, signature.upper(), now=1893488400)
    assert not verify(SECRET, "1893488400", body, "sha256=é", now=1893488400)
    assert not verify(SECRET, "1893488400", body, "", now=1893488400)


# --- what a notice is ------------------------------------------------------------------------


def test_a_notice_survives_its_json() -> None:
    notice = make_notice(note="Escalated to admin after 2 h", event="escalated")
    assert Notice.from_json(notice.to_json()) == notice
    bare = make_notice(rule=None, expires_at=None, recipients=(), args=None)
    assert Notice.from_json(bare.to_json()) == bare
    quorum = make_notice(event="reminder", quorum=2, approved_by=("Sam",))
    assert Notice.from_json(quorum.to_json()) == quorum
    with pytest.raises(ValueError):
        Notice.from_json(json.dumps({**json.loads(notice.to_json()), "event": "party"}))


def test_subjects() -> None:
    assert make_notice().subject() == "Approval needed: transfer (recipient=Ada, amount=5000)"
    reminder = make_notice(event="reminder").subject()
    assert reminder == "Reminder: transfer (recipient=Ada, amount=5000)"
    assert make_notice(event="escalated").subject().startswith("Escalated: transfer (")
    question = make_notice(kind="question", name="shipping", summary="order 42")
    assert question.subject() == "Answer needed: shipping"
    long = make_notice(summary="x=" + "y" * 500 + "\nz=1").subject()
    assert len(long) <= 200 and "\n" not in long


# --- the bodies --------------------------------------------------------------------------------


def test_the_json_body_has_every_field() -> None:
    body = json.loads(json_body(make_notice(), "d0123-webhook-1"))
    assert body == {
        "deliveryId": "d0123-webhook-1",
        "event": "decision-needed",
        "decisionId": "d0123456789abcdef0123456789abcd",
        "threadId": "t-transfer",
        "kind": "tool",
        "tool": "transfer",
        "summary": "recipient=Ada, amount=5000",
        "args": {"recipient": "Ada", "amount": 5000},
        "requester": {"email": "rita@example.com", "name": "Rita"},
        "rule": "large-transfers",
        "link": "http://chat.example.com/c/t-transfer",
        "expiresAt": "2030-01-01T13:00:00Z",
        "waitingSince": "2030-01-01T08:55:00Z",
        "note": "",
        "recipients": [
            {"email": "ada@example.com", "name": "Ada Lovelace"},
            {"email": "sam@example.com", "name": "Sam"},
        ],
        "quorum": None,
    }
    question = json.loads(json_body(make_notice(kind="question", name="shipping", expires_at=None)))
    assert question["question"] == "shipping" and "tool" not in question
    assert question["expiresAt"] is None
    assert question["deliveryId"] is None  # sent outside the outbox


def test_the_slack_body_has_text_and_a_button_to_the_link() -> None:
    body = json.loads(slack_body(make_notice(requester_name="Rita <ops> & co")))
    assert "Approval needed: transfer" in body["text"]
    section, actions = body["blocks"]
    assert section["type"] == "section"
    assert "recipient=Ada, amount=5000" in section["text"]["text"]
    assert "Rita &lt;ops&gt; &amp; co (rita@example.com)" in section["text"]["text"]
    assert "expires Tue 1 Jan 2030, 13:00 UTC" in section["text"]["text"]
    assert actions["type"] == "actions"
    [button] = actions["elements"]
    assert button["type"] == "button"
    assert button["url"] == "http://chat.example.com/c/t-transfer"


def test_a_quorums_notices_say_how_many_approvals_it_needs_and_who_gave_one() -> None:
    """The Inbox says "Waiting for ops (2 approvals needed)" and "1 of 2: Sam approved": so
    do the email, Slack and the JSON webhook, to those still asked."""
    needed = make_notice(quorum=2)
    reminded = make_notice(event="reminder", quorum=2, approved_by=("Sam",))
    assert (needed.approvals, reminded.approvals) == ("2 needed", "1 of 2: Sam approved")
    plain = render(reminded, ADA, mail_from="a@example.com").get_body(("plain",))
    assert plain is not None and "Approvals:     1 of 2: Sam approved\n" in plain.get_content()
    section, _ = json.loads(slack_body(needed))["blocks"]
    assert "rule large-transfers · approvals 2 needed · expires" in section["text"]["text"]
    assert json.loads(json_body(reminded))["quorum"] == {"needed": 2, "approvedBy": ["Sam"]}
    assert make_notice().approvals == ""  # no quorum: nothing said
    plain = render(make_notice(), ADA, mail_from="a@example.com").get_body(("plain",))
    assert plain is not None and "Approvals" not in plain.get_content()


def test_a_short_expiry_is_said_to_the_second() -> None:
    """Given minutes (a rule's `expires_after = "150s"`), an expiry cut to the minute says
    09:47 for 09:47:49; given hours, the minute is enough."""
    soon = make_notice(waiting_since=START, expires_at=START + timedelta(seconds=150))
    assert soon.expires_in_words == "Tue 1 Jan 2030, 09:02:30 UTC"
    assert make_notice().expires_in_words == "Tue 1 Jan 2030, 13:00 UTC"
    assert make_notice(expires_at=None).expires_in_words == ""
    plain = render(soon, ADA, mail_from="a@example.com").get_body(("plain",))
    assert plain is not None and "Expires:       Tue 1 Jan 2030, 09:02:30 UTC" in (
        plain.get_content()
    )
    section, _ = json.loads(slack_body(soon))["blocks"]
    assert "expires Tue 1 Jan 2030, 09:02:30 UTC" in section["text"]["text"]


def test_an_email_has_text_and_html_with_the_link_escaped() -> None:
    notice = make_notice(summary='to=<script>alert("x")</script>', note="Escalated to admin")
    message = render(notice, ADA, mail_from="Approvals <approvals@example.com>")
    assert message["To"] == "Ada Lovelace <ada@example.com>"
    assert message["From"] == "Approvals <approvals@example.com>"
    assert message["Subject"].startswith("Approval needed: transfer")
    assert message["Message-ID"].endswith("@example.com>")
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    assert text is not None and html is not None
    plain, markup = text.get_content(), html.get_content()
    for part in (plain, markup):
        assert "http://chat.example.com/c/t-transfer" in part
        assert "transfer" in part and "Rita" in part and "large-transfers" in part
        # Times as a person reads them: the expiry, and since when it waits.
        assert "Tue 1 Jan 2030, 13:00 UTC" in part and "Escalated to admin" in part
        assert "Tue 1 Jan 2030, 08:55 UTC" in part and "T13:00" not in part
    assert '<script>alert("x")</script>' in plain
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    assert 'href="http://chat.example.com/c/t-transfer"' in markup


def test_an_email_to_someone_without_a_name() -> None:
    message = render(make_notice(), Recipient("x@example.com", ""), mail_from="a@example.com")
    assert message["To"] == "x@example.com"


# --- how it ended, for whoever asked --------------------------------------------------------

RITA = Recipient(email="rita@example.com", name="Rita")


def rejected() -> Notice:
    return make_notice(
        event="decided", outcome="rejected", decided_by="Ada", reason="Not this quarter.",
        decided_by_email="ada@example.com", note="Rejected by Ada: Not this quarter.",
        recipients=(RITA,),
    )  # fmt: skip


def test_an_outcome_notice_says_how_it_ended_in_every_channel() -> None:
    notice = rejected()
    assert Notice.from_json(notice.to_json()) == notice
    assert notice.subject() == "Rejected: transfer (recipient=Ada, amount=5000)"
    assert make_notice(event="decided", outcome="expired").subject().startswith("Expired: ")
    # An older worker's stored notice (no outcome fields) still reads.
    stored = {k: v for k, v in json.loads(make_notice().to_json()).items() if k != "outcome"}
    assert Notice.from_json(json.dumps(stored)).outcome == ""

    body = json.loads(json_body(notice))
    assert (body["event"], body["outcome"], body["decidedBy"], body["reason"]) == (
        "decided", "rejected", "Ada", "Not this quarter."
    )  # fmt: skip
    assert body["decidedByEmail"] == "ada@example.com"  # as the HTTP API names people
    assert "outcome" not in json.loads(json_body(make_notice()))  # only on `decided`

    slack = json.loads(slack_body(notice))
    assert slack["text"].startswith("Rejected: transfer")
    assert "Rejected by Ada: Not this quarter." in slack["blocks"][0]["text"]["text"]
    assert "expires" not in slack["blocks"][0]["text"]["text"]  # nothing waits any more
    assert slack["blocks"][1]["elements"][0]["text"]["text"] == "Open the conversation"

    message = render(notice, RITA, mail_from="desk@example.com")
    assert message["Subject"] == "Rejected: transfer (recipient=Ada, amount=5000)"
    text = message.get_body(preferencelist=("plain",))
    assert text is not None
    plain = text.get_content()
    assert "Hello Rita," in plain and "Rejected by Ada: Not this quarter." in plain
    assert plain.count("Not this quarter.") == 1  # said once, in the note
    assert "Expires:" not in plain
    assert "Open the conversation: http://chat.example.com/c/t-transfer" in plain


# --- posting ---------------------------------------------------------------------------------


async def test_post_signs_what_it_sends() -> None:
    with webhook_receiver() as receiver:
        settings = NotifySettings(webhook_url=receiver.url, webhook_secret=SECRET)
        async with httpx.AsyncClient() as client:
            await post(client, settings, make_notice(), now=NOW)
    [request] = receiver.accepted
    assert request.headers["Content-Type"] == "application/json"
    timestamp = request.headers["X-Chat-App-Timestamp"]
    assert timestamp == str(int(NOW))
    signature = request.headers["X-Chat-App-Signature"]
    assert verify(SECRET, timestamp, request.body, signature, now=NOW)
    assert request.json()["decisionId"] == make_notice().decision_id


async def test_post_without_a_secret_is_not_signed() -> None:
    with webhook_receiver() as receiver:
        settings = NotifySettings(webhook_url=receiver.url, webhook_format="slack")
        async with httpx.AsyncClient() as client:
            await post(client, settings, make_notice(), now=NOW)
    [request] = receiver.accepted
    assert "X-Chat-App-Signature" not in request.headers
    assert request.json()["blocks"]


async def test_a_refusal_in_html_is_told_by_its_title() -> None:
    """The Deliveries page and the trail read a receiver's refusal as a person would, not
    its markup."""
    page = b"<html><head><title>Receiver says no</title></head><body><p>broken</p></body></html>"
    with webhook_receiver(1, fail_status=404, fail_body=page, fail_type="text/html") as receiver:
        settings = NotifySettings(webhook_url=receiver.url, webhook_secret=SECRET)
        async with httpx.AsyncClient() as client:
            with pytest.raises(DeliveryError) as refused:
                await post(client, settings, make_notice(), now=NOW)
    assert str(refused.value) == "the webhook answered 404 Not Found: Receiver says no"


async def test_a_refusal_or_no_receiver_is_a_delivery_error() -> None:
    with webhook_receiver(fail_first=1, fail_status=503) as receiver:
        settings = NotifySettings(webhook_url=receiver.url, webhook_secret=SECRET)
        async with httpx.AsyncClient() as client:
            with pytest.raises(DeliveryError) as refused:
                await post(client, settings, make_notice(), now=NOW)
            assert str(refused.value) == (
                "the webhook answered 503 Service Unavailable: receiver says no (on purpose)"
            )
            with pytest.raises(DeliveryError, match="could not be reached"):
                down = replace(settings, webhook_url=closed_url())
                await post(client, down, make_notice(), now=NOW)
    assert len(receiver.received) == 1 and not receiver.accepted

"""Forms from pydantic models, in the page: an agent whose question and tool are declared as
models, so their schemas carry `$defs`, `$ref`s and `anyOf` with `null`.

A local server (uvicorn, in this process) runs that agent; one copy of the app is built
against it (sign-in off). The question's enum is a choice, its `Optional` number a number
field, and a required `Optional` left empty is sent as `null`; the tool's nested model is a
group in the edit form, and what the person typed there is what the tool ran with; its
list of whole numbers is sent as numbers, and boxes unticked in a draft stay unticked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect
from pydantic import BaseModel, Field

from chat_app.agent import (
    Agent,
    Middleware,
    ModelRequest,
    Resolutions,
    RunContext,
    ScriptedCall,
    ScriptedModel,
    ScriptedTurn,
    define_interrupt,
    tool,
)
from chat_app.agent.middleware import HookResult
from chat_app.interrupts import ToolResume
from chat_app.server import create_app
from tests.live_server import serve_asgi
from tests.ui.conftest import app_copy, ask, fresh_page, hydrated

pytestmark = pytest.mark.browser


class Speed(StrEnum):
    standard = "standard"
    express = "express"
    overnight = "overnight"


class Address(BaseModel):
    """Where the parcel goes."""

    city: str
    postcode: str | None = None


class Shipment(BaseModel):
    speed: Speed
    address: Address
    insured_value: int | None = Field(default=None, ge=1)
    extras: list[Speed] = []
    parcel_weights: list[int] = []


class Preferences(BaseModel):
    speed: Speed = Field(title="Preferred speed")
    reference: int | None
    extras: list[Speed] = []


PREFERENCES = define_interrupt("preferences", response=Preferences)
BOOK = tool(
    "book_shipment",
    description="Book a shipment",
    input=Shipment,
    needs_approval=True,
    execute=lambda args: {"booked": args},
)


class AskPreferences(Middleware):
    async def before_model(self, ctx: RunContext) -> HookResult:
        last = ctx.messages[-1]
        if ctx.is_continuation or getattr(last, "role", "") != "user":
            return None
        if "preferences" not in str(last.content):
            return None
        return [PREFERENCES.request(key="prefs", reason="preferences", message="How do you ship?")]

    async def on_interrupt_resolution(
        self, ctx: RunContext, resolutions: Resolutions
    ) -> ToolResume:
        for item in resolutions.all():
            ctx.tell_model(json.dumps(item.response, sort_keys=True))
        return "continue"


def play(request: ModelRequest) -> ScriptedTurn:
    if request.notes:
        return ScriptedTurn(text=f"Noted: {request.notes[-1]}")
    last = request.messages[-1]
    if getattr(last, "role", "") == "tool":
        return ScriptedTurn(text=f"Booked: {last.content}")
    proposal = {"speed": "standard", "address": {"city": "Oslo"}, "extras": ["standard", "express"]}
    return ScriptedTurn(calls=[ScriptedCall(name="book_shipment", arguments=proposal)])


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    agent = Agent(
        model=ScriptedModel(play),
        tools=[BOOK],
        interrupts=[PREFERENCES],
        middleware=[AskPreferences()],
    )
    with serve_asgi(create_app(agent), name="the models' agent") as base:
        extra = {"CHAT_APP_AGENT_URL": f"{base}/api/chat", "CHAT_APP_AUTH": "none"}
        with app_copy(tmp_path_factory.mktemp("model-forms-app"), extra) as url:
            yield url


def open_the_edit_form(page: Page) -> Locator:
    """The model's proposed booking, asked for, and its edit form opened."""
    page.goto("/")
    hydrated(page)
    ask(page, "book it")
    page.locator(".approval-card button.edit").click()
    return page.locator(".form-edit")


def test_a_models_enum_and_optional_fields_are_asked_as_choices_and_numbers(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    with fresh_page(browser, app_url) as page:
        page.goto("/")
        hydrated(page)
        ask(page, "my preferences")
        card = page.locator(".generic-card")
        expect(card).to_contain_text("How do you ship?")
        # The enum behind `$ref` is a choice, titled by the property, not by its class.
        speed = card.get_by_role("radiogroup", name="Preferred speed")
        expect(speed.get_by_role("radio")).to_have_count(3)
        # A list of the enum is a set of boxes; the `Optional[int]` a number field, not JSON.
        extras = card.get_by_role("group", name="Extras").get_by_role("checkbox")
        expect(extras).to_have_count(3)
        reference = card.locator('input[name="reference"]')
        expect(reference).to_have_attribute("inputmode", "numeric")
        reference.fill("abc")
        card.get_by_role("radio", name="express").click()
        card.locator("button[type=submit]").click()
        expect(card.locator('[data-field="reference"] .field-error')).to_have_text(
            "Enter a whole number."
        )
        # Left empty, the required `Optional` is sent as `null`, which its schema allows.
        reference.fill("")
        extras.nth(0).check()  # two boxes: both go, not the last alone
        extras.nth(2).check()
        card.locator("button[type=submit]").click()
        expect(page.get_by_text("Noted:")).to_have_text(
            'Noted: {"extras": ["standard", "overnight"], "reference": null, "speed": "express"}'
        )
        answered = page.locator(".answered-question .answer-line")
        expect(answered).to_have_text(
            ["Extras: standard, overnight", "Reference: —", "Preferred speed: express"]
        )
        page.screenshot(path=str(screenshot_dir / "model-form-answered.png"))


def test_a_models_nested_model_is_a_group_in_the_edit_form(
    browser: Browser, app_url: str, screenshot_dir: Path
) -> None:
    with fresh_page(browser, app_url) as page:
        form = open_the_edit_form(page)
        expect(form.get_by_role("radiogroup", name="Speed")).to_be_visible()
        expect(form.locator('[data-field="address"]')).to_contain_text("Where the parcel goes.")
        city = form.locator('input[name="address.city"]')
        expect(city).to_have_value("Oslo")
        city.fill("Bergen")
        form.get_by_role("radio", name="overnight").click()
        form.locator('input[name="insured_value"]').fill("0")
        form.locator("button[type=submit]").click()
        expect(form.locator('[data-field="insured_value"] .field-error')).to_have_text(
            "Must be at least 1."
        )
        form.locator('input[name="insured_value"]').fill("")
        form.locator("button[type=submit]").click()
        # The boxes the model proposed ticked, left as they were: both go to the tool.
        booked: dict[str, Any] = {
            "booked": {
                "address": {"city": "Bergen"},
                "extras": ["standard", "express"],
                "speed": "overnight",
            }
        }
        expect(page.get_by_text("Booked:")).to_have_text(
            f"Booked: {json.dumps(booked, separators=(',', ':'))}"
        )
        page.screenshot(path=str(screenshot_dir / "model-form-edited.png"))


def test_unticked_boxes_stay_unticked_across_a_reload_and_numbers_go_as_numbers(
    browser: Browser, app_url: str
) -> None:
    with fresh_page(browser, app_url) as page:
        form = open_the_edit_form(page)
        extras = form.get_by_role("group", name="Extras").get_by_role("checkbox")
        expect(extras.nth(0)).to_be_checked()
        extras.nth(0).uncheck()
        extras.nth(1).uncheck()
        weights = form.locator('textarea[name="parcel_weights"]')
        expect(weights).to_have_attribute("placeholder", "One whole number per line")
        weights.fill("12\n3.5")
        form.locator("button[type=submit]").click()
        expect(form.locator('[data-field="parcel_weights"] .field-error')).to_have_text(
            "Line 2: Enter a whole number."
        )
        weights.fill("12\n4")
        page.wait_for_timeout(1_500)  # the draft is kept once typing pauses
        page.reload()
        hydrated(page)
        # The proposal ticked both; the draft unticked them, and it is what comes back.
        expect(extras).to_have_count(3)
        for box in range(3):
            expect(extras.nth(box)).not_to_be_checked()
        expect(weights).to_have_value("12\n4")
        form.locator("button[type=submit]").click()
        booked = {"address": {"city": "Oslo"}, "extras": [], "parcel_weights": [12, 4],
                  "speed": "standard"}  # fmt: skip
        expect(page.get_by_text("Booked:")).to_have_text(
            f"Booked: {json.dumps({'booked': booked}, separators=(',', ':'))}"
        )

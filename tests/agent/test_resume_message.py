"""A refused continuation's `RUN_ERROR` message reads as sentences: each error's message ends
in a full stop, added when its own words (a JSON Schema's) end in none, never doubled."""

from __future__ import annotations

from chat_app.agent import define_interrupt
from tests.agent.builders import obj
from tests.agent.test_resume_errors import answer, generic_agent, generic_entry, paused

PAY = define_interrupt(
    "pay",
    response=obj({"amount": {"type": "number", "exclusiveMinimum": 0}}, ["amount"], draft=False),
)


async def test_a_schemas_bare_words_get_a_full_stop_before_the_next_sentence() -> None:
    agent = generic_agent(interrupt=PAY)
    pause = await paused(agent)
    entry = {**generic_entry(pause), "payload": {"amount": -5}}
    error = await answer(agent, pause, [entry])
    [item, batch] = error["metadata"]["tanstack"]["interruptErrors"]
    # The item keeps the schema's words as they are; the joined message makes them a sentence.
    assert item["message"].endswith("-5 is less than or equal to the minimum of 0")
    assert error["message"] == (
        f"Interrupt {entry['interruptId']} payload is invalid: -5 is less than or equal to the "
        "minimum of 0. One or more interrupt resolutions are invalid."
    )
    assert batch["message"] == "One or more interrupt resolutions are invalid."


async def test_a_message_that_ends_in_a_full_stop_gets_no_second_one() -> None:
    agent = generic_agent("2001-01-01T00:00:00.000Z", interrupt=PAY)
    pause = await paused(agent)
    entry = {**generic_entry(pause), "payload": {"amount": 5}}
    error = await answer(agent, pause, [entry])
    assert error["message"] == (
        f"Interrupt {entry['interruptId']} has expired. "
        "One or more interrupt resolutions are invalid."
    )

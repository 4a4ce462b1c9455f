"""Forms generated from JSON Schema: the rows, the read-back, and one message per field."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from chat_app.client import GenericInterrupt
from chat_app.demo.interrupts import RELEASE_PLAN, SHIPPING
from chat_app.demo.tools import SEND_EMAIL, TRANSFER
from chat_app.ui.forms import FormField, answer_lines, form_fields, read_form
from chat_app.ui.views import FormMemory, decision_view

PROFILE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Full name", "minLength": 2},
        "email": {"type": "string", "format": "email", "description": "We reply here."},
        "website": {"type": "string", "format": "uri"},
        "born": {"type": "string", "format": "date"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "age": {"type": "integer", "minimum": 18, "maximum": 130},
        "score": {"type": "number", "default": 2.5},
        "subscribe": {"type": "boolean", "default": True},
        "plan": {"type": "string", "enum": ["free", "pro", "team"]},
        "country": {"type": "string", "enum": ["FR", "DE", "IT", "ES", "PT", "NL"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "days": {"type": "array", "items": {"enum": ["mon", "tue", "wed"]}},
        "address": {
            "type": "object",
            "title": "Address",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["city"],
        },
    },
    "required": ["name", "email", "plan"],
    "additionalProperties": False,
}


def by_path(fields: list[FormField]) -> dict[str, FormField]:
    return {row.path: row for row in fields}


def test_every_kind_of_field_becomes_a_row_with_labels_help_and_required_marks() -> None:
    rows = by_path(form_fields(PROFILE))
    assert rows["name"].label == "Full name" and rows["name"].required
    assert rows["name"].min_length == "2"
    assert rows["email"].input_type == "email" and rows["email"].description == "We reply here."
    assert rows["website"].input_type == "url"
    assert rows["born"].input_type == "date"
    assert (rows["age"].kind, rows["age"].input_mode) == ("integer", "numeric")
    assert rows["score"].value == "2.5"
    assert rows["subscribe"].kind == "boolean" and rows["subscribe"].value == "true"
    assert rows["plan"].kind == "radio" and rows["plan"].options == ["free", "pro", "team"]
    assert rows["country"].kind == "select"
    assert rows["tags"].kind == "list"
    assert rows["days"].kind == "checks" and rows["days"].options == ["mon", "tue", "wed"]
    assert rows["address"].kind == "group" and rows["address.city"].depth == 1


def test_a_valid_submission_reads_back_as_typed_nested_json() -> None:
    fields = form_fields(PROFILE)
    data: dict[str, str | list[str]] = {
        "name": "Ada",
        "email": "ada@example.com",
        "website": "https://example.com",
        "born": "1815-12-10",
        "code": "ADA",
        "age": "36",
        "score": "9.5",
        "subscribe": "on",
        "plan": "pro",
        "tags": "math\n\nengines\n",
        "days": ["mon", "wed"],
        "address.city": "London",
        "address.zip": "12345",
    }
    result = read_form(PROFILE, fields, data)
    assert result.errors == {}
    assert result.value == {
        "name": "Ada",
        "email": "ada@example.com",
        "website": "https://example.com",
        "born": "1815-12-10",
        "code": "ADA",
        "age": 36,
        "score": 9.5,
        "subscribe": True,
        "plan": "pro",
        "tags": ["math", "engines"],
        "days": ["mon", "wed"],
        "address": {"city": "London", "zip": 12345},
    }


def test_invalid_values_are_flagged_on_their_own_fields() -> None:
    fields = form_fields(PROFILE)
    data = {
        "name": "A",
        "email": "nope",
        "website": "not a url",
        "born": "10/12/1815",
        "code": "ada",
        "age": "12",
        "plan": "pro",
        "address.zip": "x",
    }
    # Every field's problem at once: one that cannot be read keeps its own message.
    errors = read_form(PROFILE, fields, data).errors
    assert errors == {
        "address.zip": "Enter a whole number.",
        "name": "Use at least 2 characters.",
        "email": "Enter a valid email address.",
        "website": "Enter a full address, like https://example.com.",
        "born": "Enter a date as YYYY-MM-DD.",
        "code": "Must match the pattern ^[A-Z]{3}$.",
        "age": "Must be at least 18.",
    }


def test_missing_required_fields_say_so() -> None:
    errors = read_form(PROFILE, form_fields(PROFILE), {"address.zip": "1"}).errors
    assert errors["name"] == errors["email"] == "This field is required."
    assert errors["address.city"] == "This field is required."
    # A choice left unmade says what there is to choose from (a long list: its control does).
    assert errors["plan"] == "Choose one of: free, pro, team."
    many = {"type": "object", "properties": {"region": {"enum": list("abcdef")}},
            "required": ["region"]}  # fmt: skip
    assert read_form(many, form_fields(many), {}).errors == {"region": "Choose one."}


def test_an_unchecked_box_is_false_and_empty_optional_fields_are_left_out() -> None:
    result = read_form(
        PROFILE, form_fields(PROFILE), {"name": "Ada", "email": "a@b.co", "plan": "free"}
    )
    assert result.value == {
        "name": "Ada",
        "email": "a@b.co",
        "subscribe": False,
        "plan": "free",
        "days": [],
    }


def test_edit_arguments_form_is_prefilled_with_the_proposed_arguments() -> None:
    assert SEND_EMAIL.input_schema is not None
    proposed = {"to": "ada@example.com", "subject": "Launch", "body": "Hi"}
    rows = by_path(form_fields(SEND_EMAIL.input_schema, proposed))
    assert [rows[name].value for name in ("to", "subject", "body")] == [
        "ada@example.com",
        "Launch",
        "Hi",
    ]
    assert rows["to"].input_type == "email"


def test_the_demo_forms() -> None:
    assert SHIPPING.response_schema is not None and RELEASE_PLAN.response_schema is not None
    shipping = form_fields(SHIPPING.response_schema)
    assert [(row.path, row.kind, row.value) for row in shipping] == [
        ("speed", "radio", "standard"),
        ("giftWrap", "boolean", ""),
    ]
    result = read_form(SHIPPING.response_schema, shipping, {"speed": "express", "giftWrap": "on"})
    assert result.value == {"speed": "express", "giftWrap": True}
    assert read_form(SHIPPING.response_schema, shipping, {"speed": "rocket"}).errors == {
        "speed": "Choose one of: standard, express, overnight."
    }
    reject = TRANSFER.approval.reject
    assert reject is not None
    rows = form_fields(reject)
    assert read_form(reject, rows, {"reason": ""}).errors == {"reason": "This field is required."}
    # A reason is written, not typed in a line: a box of lines, with its limit said.
    [reason] = rows
    assert (reason.kind, reason.max_length) == ("textarea", "500")


def test_a_required_yes_or_no_without_a_default_is_chosen_not_left_unticked() -> None:
    """An unticked box reads as "no": for a required boolean with no default that would
    answer for a person who never chose, so it is a pair of choices, and Submit waits."""
    assert RELEASE_PLAN.response_schema is not None
    schema = RELEASE_PLAN.response_schema
    rows = form_fields(schema)
    approved = by_path(rows)["approved"]
    assert (approved.kind, approved.options, approved.value) == ("radio", ["Yes", "No"], "")
    assert read_form(schema, rows, {"note": "Ship it"}).errors == {
        "approved": "Choose one of: Yes, No."
    }
    assert read_form(schema, rows, {"approved": "Yes"}).value == {"approved": True}
    assert read_form(schema, rows, {"approved": "No"}).value == {"approved": False}
    # A value it already has (a proposal, a draft) is chosen; yes is not the same as true.
    assert by_path(form_fields(schema, {"approved": False}))["approved"].value == "No"
    assert read_form(schema, rows, {"approved": "true"}).errors == {
        "approved": "Choose one of: Yes, No."
    }
    # With a default, or not required, an unticked box says what it means: a box stays.
    for flag in ({"type": "boolean", "default": False}, {"type": "boolean"}):
        required = ["flag"] if "default" in flag else []
        box = {"type": "object", "properties": {"flag": flag}, "required": required}
        assert [row.kind for row in form_fields(box)] == ["boolean"]


def test_an_answer_reads_back_as_it_is_stored_whatever_its_direction_marks() -> None:
    """An override in a typed answer ("Eve\u202eadA" reads "EveAda") is written out on the
    answered card; a mark that only sets a direction (U+200F) is part of the text."""
    schema = {"type": "object", "properties": {"to": {"type": "string", "title": "To"}}}
    assert answer_lines(schema, {"to": "Eve\u202eadA"}) == ["To: Eve[U+202E]adA"]
    assert answer_lines(schema, {"to": "\u05d0\u200fb"}) == ["To: \u05d0\u200fb"]


def test_enum_options_give_back_the_schemas_own_values() -> None:
    schema = {"type": "object", "properties": {"n": {"enum": [1, 2, True]}}}
    rows = form_fields(schema)
    assert rows[0].options == ["1", "2", "true"]
    assert read_form(schema, rows, {"n": "2"}).value == {"n": 2}
    assert read_form(schema, rows, {"n": "true"}).value == {"n": True}


def test_fields_follow_the_schemas_x_order_whatever_order_the_properties_arrive_in() -> None:
    schema = SHIPPING.response_schema
    assert schema is not None and isinstance(schema["properties"], dict)
    on_the_wire: dict[str, Any] = {**schema, "properties": {}}  # keys sorted, as canonical
    on_the_wire["properties"] = dict(sorted(schema["properties"].items()))
    assert list(on_the_wire["properties"]) == ["giftWrap", "speed"]
    assert [row.path for row in form_fields(on_the_wire)] == ["speed", "giftWrap"]
    unlisted = {**on_the_wire, "x-order": ["speed"]}
    assert [row.path for row in form_fields(unlisted)] == ["speed", "giftWrap"]
    assert [row.path for row in form_fields({**on_the_wire, "x-order": "speed"})] == [
        "giftWrap",
        "speed",
    ]


def test_a_value_of_several_shapes_is_typed_as_json_and_checked_whole() -> None:
    """An approval seen as a raw question (its tool left out of the manifest) answers with
    the approval's envelope: no control fits its shapes, so it is typed as JSON."""
    envelope = {
        "anyOf": [
            {"type": "object", "properties": {"approved": {"const": True}},
             "required": ["approved"]},
            {"type": "object", "properties": {"approved": {"const": False},
                                              "reason": {"type": "string"}},
             "required": ["approved", "reason"]},
        ]
    }  # fmt: skip
    [row] = form_fields(envelope)
    assert (row.kind, row.path, row.value) == ("json", "value", "")
    approved = read_form(envelope, [row], {"value": '{"approved": true}'})
    assert (approved.ok, approved.value) == (True, {"approved": True})
    not_json = read_form(envelope, [row], {"value": "yes"})
    assert not_json.errors == {
        "value": 'Enter a JSON value, such as {"approved": true} or "text".'
    }
    wrong_shape = read_form(envelope, [row], {"value": '{"approved": false}'})
    assert not wrong_shape.ok and "value" in wrong_shape.errors
    [prefilled] = form_fields(envelope, {"approved": False, "reason": "né"})
    assert prefilled.value == '{"approved": false, "reason": "né"}'


def test_an_answer_reads_back_field_by_field_as_the_form_labelled_it() -> None:
    wire = SHIPPING.wire_response_schema  # properties in name order, as the wire has them
    assert answer_lines(wire, {"giftWrap": True, "speed": "express"}) == [
        "Shipping speed: express", "Gift wrap: yes",
    ]  # fmt: skip
    schema = {
        "type": "object",
        "properties": {
            "who": {"type": "object", "title": "Recipient",
                    "properties": {"name": {"type": "string"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
        },
    }  # fmt: skip
    answer = {"who": {"name": "Ada"}, "tags": ["a", "b"], "note": "", "extra_field": [{"x": 1}]}
    assert answer_lines(schema, answer) == [
        "Recipient › Name: Ada", "Tags: a, b", "Note: —", 'Extra field: [{"x": 1}]',
    ]  # fmt: skip
    assert answer_lines(None, "ship it") == ["ship it"]
    assert answer_lines({"type": "boolean"}, False) == ["no"]
    assert answer_lines({}, 2.0) == ["2"]


def test_a_number_is_read_as_typed_not_as_a_browser_would_guess_it() -> None:
    """Numbers are typed as text: a browser's number field reads "9,99" as 999 in English,
    and empties one past its range, so the person's own text is read, and refused saying
    what to type."""
    assert TRANSFER.input_schema is not None
    demo = TRANSFER.input_schema
    # The demo's amounts stop at a million: what the wire carries is read here without it.
    schema: dict[str, Any] = json.loads(json.dumps(demo))
    del schema["properties"]["amount"]["maximum"]
    fields = form_fields(schema)
    [amount] = [row for row in fields if row.path == "amount"]
    assert (amount.input_type, amount.input_mode) == ("text", "decimal")
    for typed, read_as in (("1e99", "Must be at most 1000000."), ("1000000.01", "Must be at "
                           "most 1000000."), ("1e6", 1000000.0)):  # fmt: skip
        found = read_form(demo, form_fields(demo), {"recipient": "Ada", "amount": typed})
        assert (found.errors.get("amount") or found.value["amount"]) == read_as, typed

    def read(typed: str) -> Any:
        found = read_form(schema, fields, {"recipient": "Ada", "amount": typed})
        return found.errors.get("amount") or found.value["amount"]

    assert read("9,99") == read("1,000") == (
        "Use a point for decimals (9.99) and no thousands separators."
    )
    assert read("1e309") == read("9" * 400) == read("9" * 5000) == "That number is too large."
    # Other scripts' digits are digits to Python's float, not to JSON.
    for odd in ("1_000", "nan", "inf", "12 50", "0x10", "£5", "\u0661\u0662", "\uff11\uff12"):
        assert read(odd) == "Enter a number.", odd
    # A whole number is read exactly (a float would round it) as far as the wire carries it
    # exactly (2^53 - 1, as JavaScript reads JSON); past it, or below what a float keeps,
    # the number sent would not be the one typed.
    assert read("9007199254740991") == 9007199254740991
    assert read("9007199254740992") == read("-12345678901234567891") == (
        "That number is too large."
    )
    assert read("1e-400") == "That number is too small: it would be sent as 0."
    assert read("0E5") == read("0e-9") == "Must be more than 0."  # zeros, however written
    whole = {"type": "object", "properties": {"n": {"type": "integer"}}}
    rows = form_fields(whole)
    for typed in ("9007199254740993.0", "1e16"):  # whole, but read as a rounded float
        assert read_form(whole, rows, {"n": typed}).errors == {"n": "That number is too large."}
    assert read_form(whole, rows, {"n": "1e15"}).value == {"n": 10**15}
    assert read("0.000") == read("-0") == "Must be more than 0."  # a zero is a zero
    assert (read(" 9.99 "), read("25"), read("2.5e1"), read(".5")) == (9.99, 25, 25.0, 0.5)


def test_a_pydantic_models_references_and_optionals_become_their_own_controls() -> None:
    """pydantic writes a model's enums and nested models as `$ref`s into `$defs`, and an
    `Optional` as `anyOf` with `null`: the form follows them, and checks against the schema
    as it was sealed, unchanged."""

    class Speed(StrEnum):
        standard = "standard"
        express = "express"

    class Address(BaseModel):
        """Where it goes."""

        city: str
        zip: str | None = None

    class Node(BaseModel):
        name: str
        child: Node | None = None

    class Order(BaseModel):
        speed: Speed = Field(description="How fast")
        again: Speed = Speed.express
        extras: list[Speed] = []
        count: int | None = Field(default=None, ge=1)
        must: int | None
        shipping: Address
        stops: list[Address] = []
        node: Node
        backup: Address | None = None

    schema = Order.model_json_schema()
    sealed = json.dumps(schema, sort_keys=True)
    rows = {row.path: row for row in form_fields(schema)}
    shown = {path: (row.label, row.kind, row.required, row.nullable) for path, row in rows.items()}
    assert shown == {
        "speed": ("Speed", "radio", True, False),
        "again": ("Again", "radio", False, False),
        "extras": ("Extras", "checks", False, False),
        "count": ("Count", "integer", False, True),
        "must": ("Must", "integer", True, True),
        # Labelled by the property's name, not the model's class; described by the model.
        "shipping": ("Shipping", "group", True, False),
        "shipping.city": ("City", "text", True, False),
        "shipping.zip": ("Zip", "text", False, True),
        "stops": ("Stops", "json", False, False),  # a list of objects is typed as JSON
        "node": ("Node", "group", True, False),
        "node.name": ("Name", "text", True, False),
        "node.child": ("Child", "json", False, True),  # a model inside itself: JSON, once
        # A model that may be None is one value: a group could not be left out whole.
        "backup": ("Backup", "json", False, True),
    }
    assert rows["speed"].options == ["standard", "express"]
    described = (rows["speed"].description, rows["shipping"].description)
    assert described == ("How fast", "Where it goes.")
    assert rows["again"].value == "express"
    data: dict[str, str | list[str]] = {
        "speed": "express", "again": "express", "must": "", "shipping.city": "Oslo",
        "extras": ["standard"], "node.name": "a", "node.child": '{"name": "b"}',
    }  # fmt: skip
    result = read_form(schema, list(rows.values()), data)
    assert result.errors == {}
    # The required `Optional` left empty is `null`; the optional ones are left out.
    assert result.value == {
        "speed": "express", "again": "express", "extras": ["standard"], "must": None,
        "shipping": {"city": "Oslo"}, "node": {"name": "a", "child": {"name": "b"}},
    }  # fmt: skip
    assert Order.model_validate(result.value).node == Node(name="a", child=Node(name="b"))
    low = read_form(schema, list(rows.values()), {**data, "count": "0"})
    assert low.errors == {"count": "Must be at least 1."}
    assert answer_lines(schema, {"shipping": {"city": "Oslo"}, "speed": "express"}) == [
        "Speed: express",
        "Shipping › City: Oslo",
    ]
    assert json.dumps(schema, sort_keys=True) == sealed


def test_a_reference_that_cannot_be_followed_is_typed_as_json() -> None:
    schema = {
        "type": "object",
        "properties": {
            "remote": {"$ref": "https://example.com/schema.json"},
            "missing": {"$ref": "#/$defs/Nowhere"},
            "anything": {},
            # As older pydantic wrote a described reference; then a null that is all it takes.
            "wrapped": {"allOf": [{"$ref": "#/$defs/Speed"}], "description": "How fast"},
            "only_null": {"allOf": [{"$ref": "#/$defs/Speed"}, {"type": "null"}]},
            "again": {"$ref": "#"},  # the form inside itself
            "anchor": {"$ref": "#speed"},
        },
        "$defs": {"Speed": {"enum": ["slow", "fast"]}},
    }
    kinds = {row.path: row.kind for row in form_fields(schema)}
    assert kinds == {
        "remote": "json", "missing": "json", "anything": "text", "wrapped": "radio",
        "only_null": "json", "again": "json", "anchor": "json",
    }  # fmt: skip


def test_an_empty_group_and_a_json_value_say_where_each_problem_is() -> None:
    """A required group left empty: its required fields say so, where they are typed, not
    the group, which has no control. A value typed as JSON: each problem names its place
    inside it."""

    class Address(BaseModel):
        city: str
        street: str
        note: str = ""

    class Order(BaseModel):
        home: Address
        backup: Address | None = None
        stops: list[Address] = []

    schema = Order.model_json_schema()
    rows = form_fields(schema)
    empty = read_form(schema, rows, {})
    assert empty.errors == {
        "home.city": "This field is required.",
        "home.street": "This field is required.",
    }
    typed = read_form(schema, rows, {
        "home.city": "Oslo", "home.street": "Main",
        "backup": '{"city": "Bergen"}', "stops": '[{"city": "A", "street": 5}]',
    })  # fmt: skip
    assert typed.errors == {
        "backup": "street: This field is required.",
        "stops": "item 1 › street: Enter text.",
    }
    placeholders = {row.path: row.placeholder for row in rows if row.kind == "json"}
    assert placeholders == {
        "backup": 'A JSON object, e.g. {"city": …, "street": …, "note": …}',
        "stops": 'A JSON list, e.g. [{"city": …, "street": …, "note": …}]',
    }


def test_a_list_of_numbers_is_sent_as_numbers_and_a_bad_line_says_which() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": {"type": "integer", "minimum": 1}},
            "weights": {"type": "array", "items": {"type": "number"}},
            "names": {"type": "array", "items": {"type": "string", "maxLength": 3}},
        },
    }
    rows = by_path(form_fields(schema))
    assert rows["ids"].placeholder == "One whole number per line"
    assert rows["weights"].placeholder == "One number per line"
    assert rows["names"].placeholder == "One per line"
    good = read_form(schema, list(rows.values()),
                     {"ids": "7\n\n12\n", "weights": "2.5\n3", "names": "007"})  # fmt: skip
    assert good.ok, good.errors
    assert good.value == {"ids": [7, 12], "weights": [2.5, 3], "names": ["007"]}
    bad = read_form(schema, list(rows.values()),
                    {"ids": "7\n\n1.5", "weights": "2,5", "names": "ok\ntoo long"})  # fmt: skip
    assert bad.errors == {
        "ids": "Line 3: Enter a whole number.",
        "weights": "Line 1: Use a point for decimals (9.99) and no thousands separators.",
        "names": "Line 2: Use at most 3 characters.",
    }
    # The schema's own limits on an item say which line too, blank lines counted.
    low = read_form(schema, list(rows.values()), {"ids": "\n3\n\n0"})
    assert low.errors == {"ids": "Line 4: Must be at least 1."}
    unique = {**schema["properties"]["ids"], "uniqueItems": True}
    twice = {"type": "object", "properties": {"ids": unique}}
    repeated = read_form(twice, form_fields(twice), {"ids": "1\n1"})
    assert repeated.errors == {"ids": "Each item must be different: one is given twice."}


def test_an_edits_unticked_box_the_proposal_did_not_hold_stays_out_of_the_arguments() -> None:
    """Editing a call's arguments, an optional box the model did not set, left unticked, is
    no change: it stays out (the changes line would read "fragile: — → false"). One the
    proposal set to false stays false; ticked, it is true; a question's box is still no."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "weight": {"type": "integer"},
            "fragile": {"type": "boolean"},
            "insured": {"type": "boolean"},
            "signed": {"type": "boolean", "default": False},
            "box": {"type": "object", "properties": {"sealed": {"type": "boolean"}}},
        },
        "required": ["weight"],
    }

    def edited(proposal: dict[str, Any], data: dict[str, str]) -> Any:
        result = read_form(schema, form_fields(schema, proposal), data)
        assert result.ok, result.errors
        return result.value

    proposal = {"weight": 2, "insured": False}
    assert edited(proposal, {"weight": "2"}) == {"weight": 2, "insured": False, "signed": False}
    assert edited(proposal, {"weight": "2", "fragile": "true", "box.sealed": "on"}) == {
        "weight": 2, "fragile": True, "insured": False, "signed": False, "box": {"sealed": True}
    }  # fmt: skip
    # No proposal (a question's form): an unticked box answers no, as before.
    assert read_form(schema, form_fields(schema), {"weight": "2"}).value == {
        "weight": 2, "fragile": False, "insured": False, "signed": False, "box": {"sealed": False}
    }  # fmt: skip


def test_a_problem_of_the_whole_form_is_worded_and_shown_on_its_card() -> None:
    """A problem no single field shows (too few fields filled in, answers that fit none of
    the shapes allowed, a schema that cannot be checked) is worded for a person and shown on
    the card: Submit said nothing before."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "minProperties": 1,
    }
    empty = read_form(schema, form_fields(schema), {})
    assert empty.errors == {"": "Fill in at least 1 of the fields."}
    either = {**schema, "minProperties": 0, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert set(read_form(either, form_fields(either), {"a": "x"}).errors) == set()
    broken = {"type": "object", "properties": {"a": {"$ref": "#/$defs/nowhere"}}}
    [problem] = read_form(broken, form_fields(broken), {"a": "x"}).errors.values()
    assert problem.startswith("This form cannot be checked: $ref '#/$defs/nowhere' points at")

    item = GenericInterrupt(
        id="ask", reason="question", thread_id="t", interrupted_run_id="r", binding={},
        response_schema=schema,
    )  # fmt: skip
    memory = FormMemory(errors={"response": empty.errors})
    assert decision_view(item, memory, 0).error == "Fill in at least 1 of the fields."

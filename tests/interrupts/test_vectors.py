"""The hash vectors captured from `@tanstack/ai` (wire-server-core.json `vectors`)."""

import json

import pytest

from chat_app.interrupts import (
    canonical_interrupt_json,
    canonicalize_interrupt_resolutions,
    digest_interrupt_json,
    hash_schema_input,
    normalize_approval_schema,
)
from tests.fixtures.loader import load_fixture

VECTORS = load_fixture("wire-server-core")["vectors"]


def test_canonical_text_matches_tanstack() -> None:
    value = {
        "z": 1,
        "a": {"value": True},
        "b": [1.5, -0.0, 1e21, 1e-7, 'é\u0001"\\/\u2028'],
        "Z": None,
    }
    assert canonical_interrupt_json(value) == VECTORS["canon1"]


def test_digest_of_the_undefined_literal_and_the_empty_string() -> None:
    assert digest_interrupt_json("undefined") == VECTORS["hashUndefined"]
    assert hash_schema_input(None) == VECTORS["hashUndefined"]
    assert digest_interrupt_json("") == VECTORS["hashEmptyString"]


def test_approval_without_any_schema() -> None:
    expected = VECTORS["approvalNone"]
    normalized = normalize_approval_schema(None)
    assert normalized.response_schema == expected["responseSchema"]
    assert normalized.response_schema_hash == expected["responseSchemaHash"]
    assert normalized.approval_schema_hash == expected["approvalSchemaHash"]


@pytest.mark.parametrize("name", ["transfer", "rawShared"])
def test_approval_with_branch_schemas(name: str) -> None:
    expected = VECTORS[name]
    envelope = expected["responseSchema"]["oneOf"]
    input_schema = envelope[0]["properties"].get("editedArgs")
    approve = envelope[0]["properties"].get("payload")
    reject = envelope[1]["properties"].get("payload")
    approval = approve if approve == reject else {"approve": approve, "reject": reject}
    normalized = normalize_approval_schema(approval, input_schema)
    assert normalized.response_schema == expected["responseSchema"]
    assert normalized.response_schema_hash == expected["responseSchemaHash"]
    assert normalized.approval_schema_hash == expected["approvalSchemaHash"]
    assert hash_schema_input(input_schema) == expected["inputSchemaHash"]


def test_resolution_fingerprint() -> None:
    expected = VECTORS["fingerprint"]
    result = canonicalize_interrupt_resolutions(
        [
            {"interruptId": "b", "status": "cancelled"},
            {"interruptId": "a", "status": "resolved", "payload": {"z": 1, "a": 2}},
        ]
    )
    assert list(result.resolutions) == expected["resolutions"]
    assert result.text == expected["canonicalResolutions"]
    assert result.fingerprint == expected["fingerprint"]


def test_resolutions_follow_locale_order_not_code_points() -> None:
    ids = ["b", "B", "a_2", "a-1", "A"]
    result = canonicalize_interrupt_resolutions(
        [{"interruptId": item, "status": "cancelled"} for item in ids]
    )
    assert result.text == VECTORS["localeOrder"]


def test_client_tool_hashes() -> None:
    lookup = load_fixture("wire-server-core")["lookupHashes"]
    assert hash_schema_input(lookup["responseSchema"]) != lookup["outputSchemaHash"]
    pause = load_fixture("wire-server-core")["clientToolPause"]
    assert lookup["outputSchemaHash"] in pause
    binding_hash = json.dumps(
        digest_interrupt_json(canonical_interrupt_json(lookup["responseSchema"]))
    )
    assert binding_hash.strip('"') in pause


def test_unsupported_schemas_are_rejected_with_tanstacks_messages() -> None:
    with pytest.raises(TypeError, match=r"^Expected a supported SchemaInput\.$"):
        hash_schema_input({"title": "no keywords"})
    with pytest.raises(TypeError, match=r"^approvalSchema must be a SchemaInput or a nonempty map"):
        normalize_approval_schema({})
    with pytest.raises(TypeError, match=r"^approvalSchema must be a SchemaInput or a nonempty map"):
        normalize_approval_schema({"approve": {"title": "x"}})

"""References the engine's readers are checked against, for tests in any layer.

`model_shape`: what `==` and a dump leave out of pydantic models (the fields each was given,
its extras). `reference_depth`: how deep a JSON value nests, walked the plain way.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import BaseModel


def model_shape(value: Any) -> Any:
    """Every model in `value` with its class, the fields it was given and its extras (an
    explicit null and an absent field dump alike)."""
    if isinstance(value, list):
        return [model_shape(item) for item in value]
    if isinstance(value, dict):
        return {key: model_shape(item) for key, item in value.items()}
    if isinstance(value, BaseModel):
        fields = {name: model_shape(getattr(value, name)) for name in type(value).model_fields}
        return (type(value).__name__, sorted(value.model_fields_set), value.model_extra, fields)
    return (type(value).__name__, value)


def assert_same_fields_given(got: RunAgentInput, expected: RunAgentInput) -> None:
    """The input and each of its messages were given the same fields and extras."""
    assert model_shape(list(got.messages)) == model_shape(expected.messages)
    assert (got.model_fields_set, got.model_extra) == (
        expected.model_fields_set,
        expected.model_extra,
    )


def reference_depth(value: object) -> int:
    """The deepest level of `value` (itself at 1), as `too_deep` counts."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest

"""`too_deep`: the nesting limit, against the plain walk."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chat_app.interrupts.strict_json import too_deep
from tests.agent.references import reference_depth

nested_values = st.recursive(
    st.integers() | st.text(max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(nested_values, st.integers(1, 8))
def test_depth_check_matches_the_plain_walk(value: Any, limit: int) -> None:
    container = {"v": value}
    assert too_deep(container, limit) == (reference_depth(container) > limit)

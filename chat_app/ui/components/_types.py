"""The types of the components' props: components take what they show and what they call as
arguments, and the pages bind them to a state.
"""

from __future__ import annotations

from typing import Any, TypeAlias, TypeVar

import reflex as rx

T = TypeVar("T")

#: A Var of the page's state standing for a `T`. Typed as either because mypy reads a state
#: field (`ChatState.held`) as its declared `T` and a computed var as a Var; at build time it
#: is a Var, and components use Var operations on it (`>`, `&`, `.length()`).
Prop: TypeAlias = rx.Var[T] | T

#: What a control calls: an event handler of the page's state (`ChatState.approve`), which
#: the component may call with its arguments. Reflex's `@rx.event` is opaque to mypy (a
#: handler reads as `EventNamespace`), so this cannot be narrower than `Any`.
Handler: TypeAlias = Any

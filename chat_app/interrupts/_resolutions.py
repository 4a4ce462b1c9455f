"""Canonical order and fingerprint of a batch of resume entries (`docs/protocol.md` §2.4).

Owns `canonicalize_interrupt_resolutions`. TanStack orders entries with
`interruptId.localeCompare`, i.e. ICU root collation; `collation_key` reproduces it for the
ids that occur in practice (ASCII letters, digits, punctuation; accented Latin letters).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._canonical import canonical_interrupt_json, digest_interrupt_json

# CLDR root order of ASCII non-alphanumerics (punctuation and symbols sort before digits,
# digits before letters).
_SYMBOL_ORDER = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
_SYMBOLS = {char: index for index, char in enumerate(_SYMBOL_ORDER)}
_DIGIT_BASE = 100
_LETTER_BASE = 200
_OTHER_BASE = 1000


def collation_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Sort key approximating ICU root collation (primary, accents, case — lower first)."""
    primary: list[int] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    for char in text:
        decomposed = unicodedata.normalize("NFD", char)
        base, accents = decomposed[0], decomposed[1:]
        if base in _SYMBOLS:
            primary.append(_SYMBOLS[base])
        elif "0" <= base <= "9":
            primary.append(_DIGIT_BASE + ord(base) - ord("0"))
        elif base.isascii() and base.isalpha():
            primary.append(_LETTER_BASE + ord(base.lower()) - ord("a"))
        else:
            primary.append(_OTHER_BASE + ord(base))
        secondary.append(sum(ord(accent) for accent in accents))
        tertiary.append(1 if base.isupper() else 0)
    return tuple(primary), tuple(secondary), tuple(tertiary)


@dataclass(frozen=True, kw_only=True, slots=True)
class CanonicalResolutions:
    """Resume entries in canonical order, their canonical text and its digest."""

    resolutions: tuple[dict[str, object], ...]
    text: str
    fingerprint: str


def canonicalize_interrupt_resolutions(
    resume: Sequence[Mapping[str, object]],
) -> CanonicalResolutions:
    """Order entries as TanStack's client submits them, with sorted keys, and fingerprint."""
    ordered = sorted(resume, key=lambda entry: collation_key(str(entry.get("interruptId", ""))))
    text = canonical_interrupt_json(list(ordered))
    entries = tuple(json.loads(text))
    return CanonicalResolutions(
        resolutions=entries, text=text, fingerprint=digest_interrupt_json(text)
    )

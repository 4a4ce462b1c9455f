"""The demo policy as a test changes it while requests wait."""

from __future__ import annotations

import re
from typing import Literal

from chat_app.demo import POLICY_PATH

#: A rule to add to the demo policy: invoices over 500 for finance, never for the requester.
BIG_INVOICES = (
    '\n[[rules]]\nname = "big-invoices"\ntool = "pay_invoice"\n'
    "when = { properties = { amount = { exclusiveMinimum = 500 } } }\n"
    'approvers = ["role:finance"]\nnot_requester = true\n'
)


def deciding_alone(rule: str, decide: Literal["approve", "reject"], text: str | None = None) -> str:
    """The demo policy (or `text`) with `rule` deciding by itself instead of asking its
    approvers: its name, tool and `when` kept, the rest of it replaced."""
    reason = '\nreason = "frozen for the audit"' if decide == "reject" else ""
    changed, count = re.subn(
        rf'(?ms)^(name = "{re.escape(rule)}"\ntool = [^\n]*\n(?:when = [^\n]*\n)?).*?(?=^\n|\Z)',
        rf'\1decide = "{decide}"{reason}\n',
        POLICY_PATH.read_text() if text is None else text,
    )
    assert count == 1, f"no rule {rule!r} with a tool in the policy"
    return changed

"""How often the garbage collector runs in a serving process.

CPython collects its youngest generation every 700 container objects allocated and not yet
freed, and a collection promotes what is alive at that moment. A server's request is alive
for a few milliseconds, so at 700 much of every request's short-lived work (events, models,
the history's dicts) is promoted before it is freed, and what is promoted brings the next
full collection closer: over a 2,000-message conversation's state one takes 20-55 ms on the
event loop. Most of these objects hold no cycle and are freed by reference counting anyway;
the collector is there for the cycles, and they wait longer: garbage in a cycle is found
after up to 10,000 allocations instead of 700 (what that costs in memory is measured in
`benchmarks/FINDINGS.md`).
"""

from __future__ import annotations

import gc

#: Container objects allocated (net) between two collections of the youngest generation.
#: The app at 2,000 messages then runs no full collection during a benchmark's approvals
#: (one in every four or so at 700). `python -m chat_app.server`: 5-10 % more cycles a
#: second and 7-13 % less CPU per cycle in the last A/B, at 1, 16 and 64 clients (the one
#: before found 9 % fewer at 16 clients and 13 % more at 64: this host's noise is as large).
#: 50,000 did no better, and its larger young collections were the desk's slowest page
#: loads (`benchmarks/FINDINGS.md`).
YOUNG_COLLECTION_EVERY = 10_000

#: Young collections per middle one, and middle ones per full one: CPython's (a full one
#: also waits until a quarter of the old generation is new since the last).
MIDDLE_COLLECTION_EVERY = 10
FULL_COLLECTION_EVERY = 10


def tune_collector() -> None:
    """Collect less often, for the life of this process (and the workers it forks)."""
    gc.set_threshold(YOUNG_COLLECTION_EVERY, MIDDLE_COLLECTION_EVERY, FULL_COLLECTION_EVERY)

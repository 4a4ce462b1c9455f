"""How often the garbage collector runs in a serving process.

CPython collects its youngest generation every 700 container objects allocated and not yet
freed, and a collection promotes what is alive at that moment. A server's request is alive
for a few milliseconds, so at 700 much of every request's short-lived work (events, models,
the history's dicts) is promoted before it is freed, and each promotion moves the next full
collection closer: over a 2,000-message conversation's state one takes 50-70 ms on the
event loop, and in the browser benchmark the app's backend ran 12 in 48 approvals. Most
of these objects hold no cycle and are freed by reference counting anyway; the collector
is only there for the cycles, which can wait a little longer.
"""

from __future__ import annotations

import gc

#: Container objects allocated (net) between two collections of the youngest generation.
#: `python -m chat_app.server` as shipped, against CPython's 700, in scratch A/B runs with
#: `benchmarks.bench_http.load` (interleaved rounds, medians): at 16 clients 351 → 393,
#: 300 → 380 and 332 → 373 cycles/s (server CPU per cycle 2.59 → 2.31, 3.03 → 2.38 and
#: 2.69 → 2.30 ms), at 64 clients 345 → 550 and 319 → 493 (2.73 → 1.73 ms, p99 253 → 163
#: ms); at one client no change beyond the noise (208 → 225, 202 → 197). 10,000 and 200,000
#: did no better. The app at 2,000 messages (`benchmarks/profile_page.py`, two apps, 12
#: interleaved approvals each): no full collection during the approvals against 12, Approve
#: click → first token 115 → 90 ms.
YOUNG_COLLECTION_EVERY = 50_000

#: Young collections per middle one, and middle ones per full one (CPython's 10 and 10; a
#: full one also waits until a quarter of the old generation is new since the last).
MIDDLE_COLLECTION_EVERY = 20
FULL_COLLECTION_EVERY = 10


def tune_collector() -> None:
    """Collect less often, for the life of this process (and the workers it forks)."""
    gc.set_threshold(YOUNG_COLLECTION_EVERY, MIDDLE_COLLECTION_EVERY, FULL_COLLECTION_EVERY)

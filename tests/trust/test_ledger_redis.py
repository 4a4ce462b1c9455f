"""The Redis ledger, against a real redis-server: exactly once across many writers."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from chat_app.server import create_app
from chat_app.trust.ledger import (
    AuditEntry,
    LedgerUnavailable,
    LedgerUnusable,
    open_ledger,
    verify_chain,
)
from chat_app.trust.redis_ledger import RedisLedger
from tests.agent.test_security import (
    Clock,
    answer,
    approve,
    client_tool_waits_for_its_approval,
    error_codes,
    pause,
    ran,
    sealed_agent,
)
from tests.live_server import free_port
from tests.redis_server import DURABLE, redis_server


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


def entry(n: int) -> AuditEntry:
    return AuditEntry(kind="decision", thread_id="t", run_id=f"r{n}", actor=None, data={"n": n})


def test_open_ledger_picks_redis_by_url(redis_url: str, tmp_path: Path) -> None:
    assert isinstance(open_ledger(redis_url, tmp_path), RedisLedger)
    with pytest.raises(ValueError, match="Unsupported ledger URL"):
        open_ledger("postgres://x", tmp_path)


def test_only_one_of_many_concurrent_commits_wins(redis_url: str) -> None:
    ledgers = [RedisLedger(redis_url, prefix="race") for _ in range(8)]

    def commit(n: int) -> list[str]:
        ledger = ledgers[n % len(ledgers)]
        return ledger.commit_batch(thread_id="t", interrupt_ids=["a", "b"], entries=[entry(n)])

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(commit, range(40)))
    assert sum(1 for taken in results if taken == []) == 1
    assert all(taken == ["a", "b"] for taken in results if taken)
    records = ledgers[0].records()
    assert len(records) == 1 and verify_chain(records).ok


async def test_grants_are_kept_per_thread_and_seen_by_every_writer(redis_url: str) -> None:
    one, other = RedisLedger(redis_url, prefix="grants"), RedisLedger(redis_url, prefix="grants")
    assert await one.granted_async(thread_id="t", call_ids=["a", "b"]) == []
    await one.grant_async(thread_id="t", call_ids=["b"])
    await one.grant_async(thread_id="t", call_ids=["b"])
    assert await other.granted_async(thread_id="t", call_ids=["a", "b"]) == ["b"]
    assert await other.granted_async(thread_id="u", call_ids=["b"]) == []
    # The client tool's answer waits for its approval on this ledger too.
    ledger = RedisLedger(redis_url, prefix="grants-run")
    await client_tool_waits_for_its_approval(sealed_agent(Clock(), ledger), ledger)


def test_the_chain_stays_intact_under_concurrent_appends(redis_url: str) -> None:
    ledgers = [RedisLedger(redis_url, prefix="chain") for _ in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda n: ledgers[n % 4].append([entry(n)]), range(60)))
    records = ledgers[0].records()
    assert [r.seq for r in records] == list(range(1, 61))
    assert verify_chain(records).ok


async def test_fifty_concurrent_duplicates_through_the_redis_ledger(redis_url: str) -> None:
    agent = sealed_agent(Clock(), RedisLedger(redis_url, prefix="dups"))
    events = await pause(agent, "delete project apollo")
    [item] = events[-1]["outcome"]["interrupts"]
    results: list[list[dict[str, Any]]] = await asyncio.gather(
        *[answer(agent, events, [approve(item)], run_id=f"d{i}") for i in range(50)]
    )
    assert sum(len(ran(r)) for r in results) == 1
    assert sum(r[-1]["type"] == "RUN_ERROR" and r[-1]["code"] == "conflict" for r in results) == 49


def test_many_writers_in_two_workers_never_find_the_trail_too_busy(redis_url: str) -> None:
    """64 threads of each of two workers appending at once (two ledgers: two processes'
    clients). Each worker writes one at a time, so only the other worker's writes make a
    retry, and every append lands, in one unbroken chain."""
    workers = [RedisLedger(redis_url, prefix="busy") for _ in range(2)]
    with ThreadPoolExecutor(max_workers=128) as pool:
        list(pool.map(lambda n: workers[n % 2].append([entry(n), entry(n)]), range(1024)))
    records = workers[0].records()
    assert [r.seq for r in records] == list(range(1, 2049))
    assert verify_chain(records).ok


def _calls(url: str, command: str) -> int:
    """How many times Redis has run `command`, from its own statistics (scripts' calls too)."""
    import redis

    stats: dict[str, Any] = redis.Redis.from_url(url).info("commandstats")  # type: ignore[assignment]
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def test_a_writer_nobody_else_moves_writes_in_one_round_trip(redis_url: str) -> None:
    """The ledger keeps the chain's tail it linked: while no other process writes, each append
    is one script call straight onto the chain. After another process wrote, the next append
    goes to the pending list and its writer, finding the lease free, links it (one more
    call); the chain stays unbroken and nothing is left pending."""
    first, other = RedisLedger(redis_url, prefix="tail"), RedisLedger(redis_url, prefix="tail")
    first.append([entry(0)])
    scripts = _calls(redis_url, "evalsha")
    for n in range(1, 11):
        first.append([entry(n)])
    assert _calls(redis_url, "evalsha") - scripts == 10

    other.append([entry(11)])  # moves the tail behind `first`'s back
    scripts = _calls(redis_url, "evalsha")
    first.append([entry(12), entry(13)])
    assert _calls(redis_url, "evalsha") - scripts == 2  # queued and took the lease, linked
    records = first.records()
    assert [r.seq for r in records] == list(range(1, 15))
    assert [r.data["n"] for r in records] == list(range(14))
    assert verify_chain(records).ok


def _append_many(url: str, prefix: str, worker: int, count: int, start: Any) -> None:
    """A worker process: 8 threads appending `count` records in all, as fast as they can,
    once every worker is ready."""
    ledger = RedisLedger(url, prefix=prefix)
    start.wait()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: ledger.append([entry(worker * 100_000 + n)]), range(count)))


def test_two_processes_appending_flat_out_share_the_trail(redis_url: str) -> None:
    """Two real processes appending as fast as they can, from the same moment. With
    optimistic retries the busier one kept moving the tail and the other mostly retried
    (21,943 appends against 191 in five seconds, then "too busy"); now a writer that finds
    the tail moved queues its records, linked in arrival order by whoever holds the lease:
    every record of both lands, once, in one unbroken chain, and neither waits for the
    other to finish (each has a fair part of the chain's first half)."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    workers = [
        context.Process(target=_append_many, args=(redis_url, "flat", k, 1500, start))
        for k in (1, 2)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
    assert [process.exitcode for process in workers] == [0, 0]
    records = RedisLedger(redis_url, prefix="flat").records()
    assert [r.seq for r in records] == list(range(1, 3001))
    assert sorted(r.data["n"] for r in records) == sorted(
        k * 100_000 + n for k in (1, 2) for n in range(1500)
    )
    assert verify_chain(records).ok
    first_half = Counter(r.data["n"] // 100_000 for r in records[:1500])
    assert min(first_half[1], first_half[2]) >= 300, first_half


def test_a_reader_links_what_a_dead_chainer_left_pending(redis_url: str) -> None:
    """Records queued while another holds the lease are linked by that holder; if it died
    (its lease runs out), the next reader links them, so the trail shows every record."""
    import redis

    ledger = RedisLedger(redis_url, prefix="dead")
    ledger.append([entry(0)])
    client = redis.Redis.from_url(redis_url)
    client.set("dead:audit:lease", "someone-who-died", px=300)
    RedisLedger(redis_url, prefix="dead").append([entry(1), entry(2)])  # lease held: queued
    assert client.llen("dead:audit:pending") == 2
    records = ledger.records()  # waits out the dead lease, then links them
    assert [r.data["n"] for r in records] == [0, 1, 2]
    assert verify_chain(records).ok
    assert client.llen("dead:audit:pending") == 0


def test_an_answer_survives_a_redis_killed_and_started_again(tmp_path: Path) -> None:
    """An answer claimed before Redis was killed (SIGKILL, no chance to save) is still claimed
    when it comes back on the same files, so it cannot be carried out twice: the append-only
    file holds it. (What `appendfsync always` adds, an answer that outlives the machine's own
    crash, a test cannot show short of crashing the machine.)"""
    with redis_server(tmp_path, kill=True) as url:
        ledger = open_ledger(url, tmp_path)
        assert ledger.commit_batch(thread_id="t", interrupt_ids=["i1"], entries=[entry(1)]) == []
    with redis_server(tmp_path) as url:  # the same files, on a port free now
        again = open_ledger(url, tmp_path)
        taken = again.commit_batch(thread_id="t", interrupt_ids=["i1"], entries=[entry(2)])
        assert taken == ["i1"]
        assert [r.data for r in again.records()] == [{"n": 1}]


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (("--appendonly", "no"), "appendonly no, appendfsync everysec"),
        (("--appendonly", "yes", "--appendfsync", "everysec"), "appendfsync everysec"),
        (
            (*DURABLE, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"),
            "maxmemory-policy allkeys-lru",
        ),
    ],
)
def test_a_redis_that_could_lose_answers_is_refused_at_start(
    tmp_path: Path, settings: tuple[str, ...], said: str
) -> None:
    with redis_server(tmp_path, *settings) as url:
        with pytest.raises(LedgerUnusable) as refused:
            open_ledger(url, tmp_path)
    message = str(refused.value)
    assert message.startswith("The Redis at 127.0.0.1:"), message
    assert "an approval already carried out could then be carried out again" in message
    assert said in message


async def test_a_ledger_that_stops_answering_stops_the_run_before_anything_runs(
    tmp_path: Path,
) -> None:
    """The ledger's Redis stops between a pause and its answer: the continuation ends with
    `ledger-unavailable`, says nothing ran, and runs nothing; the Redis's address is in the
    error the ledger raises (for the log), not in what the person reads. Back on the same
    files and port, the same answer runs, once."""
    port = free_port()
    with redis_server(tmp_path, port=port) as url:
        ledger = RedisLedger(url, prefix="quiet")
        agent = sealed_agent(Clock(), ledger)
        events = await pause(agent, "delete project apollo")
    [item] = events[-1]["outcome"]["interrupts"]
    refused = await answer(agent, events, [approve(item)])
    assert ran(refused) == []
    assert (refused[-1]["type"], refused[-1]["code"]) == ("RUN_ERROR", "ledger-unavailable")
    assert refused[-1]["message"] == (
        "Nothing ran: the approval ledger could not be reached to record the answers. "
        "Retry once it is back."
    )
    with pytest.raises(LedgerUnavailable, match=r"^The ledger's Redis at 127\.0\.0\.1:\d+ does "):
        ledger.records()
    # The trail's route says so too, without the address.
    transport = httpx.ASGITransport(app=create_app(agent))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        trail = await http.get("/api/audit")
    assert (trail.status_code, trail.json()["code"]) == (503, "unavailable")
    assert "127.0.0.1" not in trail.text
    # A new request meanwhile cannot record its pause: it stops, and says why.
    fresh = await pause(agent, "delete project apollo", thread="t9")
    assert fresh[-1]["code"] == "ledger-unavailable"
    assert "could not be reached to keep the audit trail" in fresh[-1]["message"]
    with redis_server(tmp_path, port=port):
        retried = await answer(agent, events, [approve(item)], run_id="r3")
        again = await answer(agent, events, [approve(item)], run_id="r4")
        assert len(ran(retried)) == 1 and ran(again) == []
        assert [r.kind for r in ledger.records()] == ["pause", "decision", "execution"]


async def test_a_ledger_that_answers_too_late_says_so_and_its_late_answer_runs_once_at_most(
    tmp_path: Path,
) -> None:
    """The ledger's Redis stops answering (SIGSTOP) while it records an answer: the run says
    nothing ran and that whether the answer was recorded is not known. Woken, the Redis
    carries out the command it had: the answer is claimed, so the Retry is refused as a
    replay, and the tool never runs."""
    with redis_server(tmp_path) as url:
        ledger = RedisLedger(url, prefix="late", command_seconds=0.5)
        agent = sealed_agent(Clock(), ledger)
        events = await pause(agent, "delete project apollo")
        [item] = events[-1]["outcome"]["interrupts"]
        info: dict[str, Any] = redis.Redis.from_url(url).info()  # type: ignore[assignment]
        pid = int(info["process_id"])
        os.kill(pid, signal.SIGSTOP)
        try:
            late = await answer(agent, events, [approve(item)])
        finally:
            os.kill(pid, signal.SIGCONT)
        assert (late[-1]["type"], late[-1]["code"]) == ("RUN_ERROR", "ledger-unavailable")
        assert late[-1]["message"].startswith(
            "Nothing ran: the approval ledger did not answer in time, so whether it recorded "
            "the answers is not known."
        )
        retried = await answer(agent, events, [approve(item)], run_id="r3")
        assert "conflict" in error_codes(retried)
        assert ran(late) == ran(retried) == []
        assert [r.kind for r in ledger.records()] == ["pause", "decision"]


def test_a_redis_that_does_not_answer_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(LedgerUnusable, match=r"^The Redis at 127\.0\.0\.1:\d+ does not answer"):
        open_ledger(f"redis://127.0.0.1:{free_port()}/0", tmp_path)


#: An account that may neither PING nor read the settings (a least-privilege ACL).
LEDGER_USER = ("--user", "default", "off", "--user", "ledger", "on", ">pw", "~*", "&*",
               "+@all", "-ping", "-config")  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "user", "warns"),
    [
        ((*DURABLE, "--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"), "", False),
        ((*DURABLE, "--rename-command", "CONFIG", ""), "", True),
        ((*DURABLE, *LEDGER_USER), "ledger:pw@", True),
    ],
)
def test_what_keeps_answers_is_used(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    settings: tuple[str, ...],
    user: str,
    warns: bool,
) -> None:
    """Evicting only keys that expire (the ledger's never do) is safe; a Redis that will not
    show its settings (CONFIG renamed away, as managed services do) is used, with a warning;
    an account that may not PING (a least-privilege ACL) has been answered all the same."""
    with redis_server(tmp_path, *settings) as url:
        ledger = open_ledger(url.replace("redis://", f"redis://{user}"), tmp_path)
        assert ledger.commit_batch(thread_id="t", interrupt_ids=["i"], entries=[]) == []
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    if warns:
        assert len(warned) == 1 and "appendfsync always" in warned[0], warned
    else:
        assert warned == []

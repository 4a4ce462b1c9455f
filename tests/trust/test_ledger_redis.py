"""The Redis ledger, against a real redis-server: exactly once across many writers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from chat_app.trust.ledger import AuditEntry, RedisLedger, open_ledger, verify_chain
from tests.agent.test_security import Clock, answer, approve, pause, ran, sealed_agent
from tests.redis_server import redis_server


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

    stats = redis.Redis.from_url(url).info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def test_a_writer_nobody_else_moves_writes_in_one_round_trip(redis_url: str) -> None:
    """The ledger keeps the chain's tail it wrote: while no other process writes, each append
    is the one script call (no reading the tail first); after another process wrote, the
    script answers with the moved tail and the next try lands, the chain unbroken."""
    first, other = RedisLedger(redis_url, prefix="tail"), RedisLedger(redis_url, prefix="tail")
    first.append([entry(0)])  # reads the tail once
    scripts, lengths = _calls(redis_url, "evalsha"), _calls(redis_url, "llen")
    for n in range(1, 11):
        first.append([entry(n)])
    assert _calls(redis_url, "evalsha") - scripts == 10
    assert _calls(redis_url, "llen") == lengths  # the tail was never read again

    other.append([entry(11)])  # moves the tail behind `first`'s back
    scripts = _calls(redis_url, "evalsha")
    first.append([entry(12)])
    assert _calls(redis_url, "evalsha") - scripts == 2  # refused with the new tail, then lands
    records = first.records()
    assert [r.seq for r in records] == list(range(1, 14))
    assert verify_chain(records).ok

"""The desk's figures for `GET /metrics`, read from the database when asked.

The app may run several workers, each of which decides, expires and continues some of the
decisions: a count kept in one worker's memory would be that worker's share. Read from the
`decisions` table at scrape time, every worker answers with the same, whole figures, and a
restart loses nothing. Each method is one short read (SQLAlchemy Core); the histograms are
computed in SQL, a `sum(case …)` per bucket, so no rows come back to Python.

Owns `DeskStats` and `Histogram`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Engine, case, func, select, union_all

from chat_app.trust.tables import decision_reopenings, decisions

__all__ = ["DeskStats", "Histogram"]


@dataclass(frozen=True, slots=True)
class Histogram:
    """A distribution as Prometheus reads one: `buckets` pairs each upper bound with how many
    values are at most that (cumulative); the `+Inf` bucket is `count`."""

    buckets: tuple[tuple[float, int], ...]
    sum: float
    count: int


class DeskStats:
    """Figures about decisions over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def pending_by_tool_rule(self) -> list[tuple[str, str, str, int]]:
        """Pending decisions by kind (tool, question), tool name and rule ("" when no rule
        applies). A question counts without a name: its name is its sentence ("How should
        order 42 ship?"), a new one per order, which would make a series each."""
        rule = func.coalesce(decisions.c.rule, "")
        tool = case((decisions.c.kind == "tool", decisions.c.name), else_="")
        query = (
            select(decisions.c.kind, tool, rule, func.count())
            .where(decisions.c.status == "pending")
            .group_by(decisions.c.kind, tool, rule)
            .order_by(decisions.c.kind, tool, rule)
        )
        with self.engine.connect() as connection:
            return [
                (kind, name, rule, int(count))
                for kind, name, rule, count in connection.execute(query)
            ]

    def outcomes(self) -> list[tuple[str, int]]:
        """Decisions by outcome (approved, rejected, edited, cancelled, answered, expired,
        auto), over every decision that has one, and every end a decision had before it was
        opened again (`decision_reopenings`): a count that never goes down."""
        ended = union_all(
            select(decisions.c.outcome).where(decisions.c.outcome.is_not(None)),
            select(decision_reopenings.c.outcome),
        ).subquery()
        query = (
            select(ended.c.outcome, func.count())
            .group_by(ended.c.outcome)
            .order_by(ended.c.outcome)
        )
        with self.engine.connect() as connection:
            return [(outcome, int(count)) for outcome, count in connection.execute(query)]

    def histogram(
        self, column: Literal["wait_seconds", "continued_seconds"], buckets: Sequence[float]
    ) -> Histogram:
        """The distribution of `column` over the decisions that have it, in `buckets` (finite
        upper bounds, ascending): seconds from pause to decision, or of the continuation."""
        bounds = tuple(float(bound) for bound in buckets)
        if list(bounds) != sorted(set(bounds)) or not all(map(math.isfinite, bounds)):
            raise ValueError(f"buckets must be finite and ascending: {list(buckets)}")
        values = decisions.c[column]
        query = select(
            *(func.sum(case((values <= bound, 1), else_=0)) for bound in bounds),
            func.sum(values),
            func.count(values),
        ).where(values.is_not(None))
        with self.engine.connect() as connection:
            row = connection.execute(query).one()
        # Over no rows every sum is NULL.
        counts = [int(found or 0) for found in row[: len(bounds)]]
        total, count = row[len(bounds)], row[len(bounds) + 1]
        return Histogram(
            buckets=tuple(zip(bounds, counts, strict=True)),
            sum=float(total or 0.0),
            count=int(count or 0),
        )

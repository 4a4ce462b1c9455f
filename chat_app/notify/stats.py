"""Delivery figures for `GET /metrics`, read from the outbox table when asked.

Whichever worker claims a delivery sends it, so no one worker's memory holds the totals; the
`deliveries` rows do, for every worker alike. An attempt is counted in `attempts` once it is
over (the outbox's `mark_sent` and `mark_failed`), and only a delivery's last attempt can have
succeeded: the failed attempts of a row are its attempts, less one when it was sent.

Owns `DeliveryStats`.
"""

from __future__ import annotations

from sqlalchemy import Engine, case, func, select

from chat_app.trust.tables import deliveries

__all__ = ["DeliveryStats"]


class DeliveryStats:
    """Figures about notice deliveries over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def counts(self) -> list[tuple[str, str, int]]:
        """Deliveries by channel and status (pending, sent, failed)."""
        query = (
            select(deliveries.c.channel, deliveries.c.status, func.count())
            .group_by(deliveries.c.channel, deliveries.c.status)
            .order_by(deliveries.c.channel, deliveries.c.status)
        )
        with self.engine.connect() as connection:
            return [(channel, status, int(n)) for channel, status, n in connection.execute(query)]

    def failed_attempts(self) -> list[tuple[str, int]]:
        """Attempts that failed, by channel (a channel with deliveries but no failure is 0)."""
        failed = case(
            (deliveries.c.status == "sent", deliveries.c.attempts - 1),
            else_=deliveries.c.attempts,
        )
        query = (
            select(deliveries.c.channel, func.sum(failed))
            .group_by(deliveries.c.channel)
            .order_by(deliveries.c.channel)
        )
        with self.engine.connect() as connection:
            return [(channel, int(total or 0)) for channel, total in connection.execute(query)]

"""How many runs a person started lately: the count behind the rate limit, across replicas.

A start is a run whose requester is the person, or a retry they made (an audit event). The
check and the new run's insert happen in one write transaction, serialized per person (an
advisory lock on PostgreSQL; SQLite has one writer), so concurrent starts in several replicas
never exceed the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.schema_tool import API_AGENT_PREFIX
from store.db import Database
from store.schema import audit_events, runs

STARTS_LISTED = 1000  # more starts in one window than any limit: the rest need not be read


@dataclass(frozen=True)
class StartLimit:
    """At most `most` starts by one person since `since` (the new one included)."""

    most: int
    since: datetime


class StartLimitReached(Exception):
    """The person started `limit.most` runs since `limit.since`; `starts` lists when."""

    def __init__(self, limit: StartLimit, starts: list[datetime]) -> None:
        super().__init__(f"{len(starts)} starts since {limit.since.isoformat()}")
        self.limit = limit
        self.starts = starts


def _starts_query(person: str, since: datetime) -> sa.Select[Any]:
    started = sa.select(runs.c.created_at.label("at")).where(
        runs.c.requester == person,
        runs.c.created_at >= since,
        runs.c.agent_id.not_like(
            API_AGENT_PREFIX + "%"
        ),  # an approval API request is no run the person started
    )
    retried = sa.select(audit_events.c.at.label("at")).where(
        audit_events.c.actor == person,
        audit_events.c.action == "retry",
        audit_events.c.outcome == "ok",
        audit_events.c.at >= since,
    )
    both = sa.union_all(started, retried).subquery()
    return sa.select(both.c.at).order_by(both.c.at).limit(STARTS_LISTED)


async def starts_in(conn: AsyncConnection, person: str, since: datetime) -> list[datetime]:
    """When `person` started runs (or retried them) since `since`, oldest first (one query)."""
    rows = (await conn.execute(_starts_query(person, since))).scalars().all()
    return [at for at in rows if isinstance(at, datetime)]


async def check_start(db: Database, conn: AsyncConnection, person: str, limit: StartLimit) -> None:
    """Inside a write transaction: raise StartLimitReached when `person` is at the limit.

    On PostgreSQL the transaction first takes an advisory lock for the person, held until it
    commits, so two replicas never both admit the last start of a window."""
    if db.is_postgres:
        key = sa.func.hashtext(sa.literal("sayso-starts:") + person)
        await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(key)))
    starts = await starts_in(conn, person, limit.since)
    if len(starts) >= limit.most:
        raise StartLimitReached(limit, starts)


async def starts_since(db: Database, person: str, since: datetime) -> list[datetime]:
    async with db.read() as conn:
        return await starts_in(conn, person, since)

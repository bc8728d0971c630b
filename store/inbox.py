"""The inbox: the pending requests one person may decide (App Home), the channels of
requests open to any member, and how many wait, by agent and tool (the metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa

from bot.agent.util import utcnow
from store.db import Database
from store.records import (
    ANYONE,
    ApprovalRequestRecord,
)
from store.requests import INBOX_COUNT_LIMIT, fetch
from store.schema import approval_requests as req
from store.schema import request_approvers as ra
from store.schema import runs


async def pending_for(
    db: Database,
    user_id: str,
    group_ids: Sequence[str],
    *,
    include_anyone: bool,
    limit: int,
    now: datetime | None = None,
    count_limit: int = INBOX_COUNT_LIMIT,
    anyone_channels: Sequence[str] | None = None,
) -> tuple[list[ApprovalRequestRecord], int]:
    """One page of what the person may decide (newest first) and how many in all, counted up
    to `count_limit` (an exact count would cost ~3.5 µs per pending request).

    Requests open to anyone are included when `include_anyone`, and then only those of
    `anyone_channels` when it is given."""
    now = now or utcnow()
    restrict = include_anyone and anyone_channels is not None
    principals = [user_id, *group_ids, *([ANYONE] if include_anyone and not restrict else [])]
    listed = _listed(principals)
    if restrict:
        open_here = sa.and_(_listed([ANYONE]), req.c.channel_id.in_(list(anyone_channels or [])))
        listed = sa.or_(listed, open_here)
    conds = [
        req.c.status == "pending",
        req.c.expires_at > now,
        listed,
        sa.or_(
            req.c.allow_self_approval.is_(True),
            req.c.requester.is_(None),
            req.c.requester != user_id,
        ),
    ]
    # Newest first: walk the (status, created_at) index backwards, stop after `limit` rows.
    # SQLite would pick the (status, expires_at) index for the range instead and sort every
    # pending request (30 ms instead of 0.1 ms at 10,000 pending; see docs/benchmarks.md):
    # likelihood() tells it the deadline condition is nearly always true.
    fresh = conds[1]
    if db.is_sqlite:
        fresh = sa.func.likelihood(fresh, sa.literal_column("0.9"))
    page = (
        sa.select(req)
        .where(conds[0], fresh, *conds[2:])
        .order_by(req.c.created_at.desc(), req.c.id.desc())
    )
    async with db.read() as conn:
        counted = sa.select(req.c.id).where(*conds).limit(count_limit).subquery()
        total = await conn.scalar(sa.select(sa.func.count()).select_from(counted))
        records = await fetch(conn, page.limit(limit))
    return records, int(total or 0)


def _listed(principals: Sequence[str]) -> sa.ColumnElement[bool]:
    # A per-request index probe, never a semi-join: PostgreSQL would hash the approvers of
    # every request ever made (most of them long decided) to count a few pending ones; the
    # LIMIT keeps the subquery correlated (23 ms -> 2 ms at 100,000 requests).
    return (
        sa.select(sa.literal(1))
        .where(ra.c.request_id == req.c.id, ra.c.principal.in_(principals))
        .limit(1)
        .scalar_subquery()
        .is_not(None)
    )


async def open_request_channels(db: Database, now: datetime | None, limit: int) -> list[str]:
    """The channels that have pending requests open to anyone (at most `limit`)."""
    now = now or utcnow()
    query = (
        sa.select(req.c.channel_id)
        .where(
            req.c.status == "pending",
            req.c.expires_at > now,
            req.c.channel_id.is_not(None),
            _listed([ANYONE]),
        )
        .distinct()
        .limit(limit)
    )
    async with db.read() as conn:
        return [c for c in (await conn.scalars(query)).all() if c]


async def pending_counts(db: Database) -> list[tuple[str, str, int]]:
    """(agent, tool, how many requests wait for a person), over every replica's requests."""
    query = (
        sa.select(runs.c.agent_id, req.c.tool_name, sa.func.count())
        .select_from(req.join(runs, runs.c.id == req.c.run_id))
        .where(req.c.status == "pending")
        .group_by(runs.c.agent_id, req.c.tool_name)
    )
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [(str(agent), str(tool), int(n)) for agent, tool, n in rows]

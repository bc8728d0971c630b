"""Handing runs to workers: claiming ready runs in batches, and waking workers on PostgreSQL
with LISTEN/NOTIFY (one channel; the payload is the run id).

A front that records intent (a new run ready to start, a decision making a run ready) hands
the run off here; any worker listening claims it within milliseconds. SQLite has no NOTIFY:
there the worker embedded in `sayso run` is woken in-process. The sweep stays the safety net.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from bot.agent.util import utcnow
from store.db import READY_CHANNEL, Database, param
from store.notify import ChannelListener
from store.records import Lease
from store.runs import ready_condition
from store.schema import runs

log = logging.getLogger("sayso.store")

CHANNEL = READY_CHANNEL


async def _notify(conn: Any, db: Database, run_id: str) -> None:
    if db.is_postgres:
        await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, run_id)))


async def hand_off(db: Database, lease: Lease) -> None:
    """Release the run's lease (it becomes ready for any worker) and, on PostgreSQL, notify
    listening workers in the same transaction (they hear it once it is committed)."""
    async with db.write() as conn:
        await conn.execute(
            runs.update()
            .where(
                runs.c.id == lease.run_id,
                runs.c.lease_owner == lease.owner,
                runs.c.version == lease.version,
            )
            .values(lease_owner=None, lease_expires_at=None)
        )
        await _notify(conn, db, lease.run_id)


async def notify_ready(db: Database, run_id: str) -> None:
    """Tell listening workers (PostgreSQL) that the run may be ready; a no-op on SQLite."""
    if not db.is_postgres:
        return
    async with db.write() as conn:
        await _notify(conn, db, run_id)


@functools.cache
def _ready_rows(postgres: bool) -> sa.Select[Any]:
    """Ready runs, oldest first (params p_now, p_limit), built once per dialect."""
    query = (
        sa.select(runs.c.id, runs.c.version, runs.c.lease_owner)
        .where(ready_condition(param("now", runs.c.lease_expires_at)))
        .order_by(runs.c.updated_at)
        .limit(sa.bindparam("p_limit", type_=sa.Integer()))
    )
    return query.with_for_update(skip_locked=True, of=runs) if postgres else query


_VERSION = param("version", runs.c.version)
_TAKE_RUN = (
    runs.update()
    .where(runs.c.id == param("id", runs.c.id), runs.c.version == _VERSION)
    .values(
        lease_owner=param("owner", runs.c.lease_owner),
        lease_expires_at=param("expires", runs.c.lease_expires_at),
        version=_VERSION + 1,
    )
)


async def claim_ready(db: Database, *, owner: str, lease_seconds: float, limit: int) -> list[Lease]:
    """Claim up to `limit` ready runs, oldest first, in one transaction. On PostgreSQL the rows
    are locked `FOR UPDATE SKIP LOCKED`, so workers claiming at once take different runs."""
    if limit <= 0:
        return []
    now = utcnow()
    expires = now + timedelta(seconds=lease_seconds)
    query = _ready_rows(db.is_postgres)
    leases: list[Lease] = []
    async with db.write() as conn:
        for row in (await conn.execute(query, {"p_now": now, "p_limit": limit})).all():
            params = {"p_id": row.id, "p_version": row.version, "p_owner": owner}
            written = await conn.execute(_TAKE_RUN, {**params, "p_expires": expires})
            if written.rowcount == 1:
                leases.append(
                    Lease(
                        run_id=row.id,
                        owner=owner,
                        version=row.version + 1,
                        expires_at=expires,
                        taken_over=row.lease_owner is not None,
                    )
                )
    return leases


class ReadyListener(ChannelListener):
    """Wakes a worker: `on_ready(run_id)` per notification, and `on_ready(None)` on every
    (re)connection, asking the worker to look for ready runs it may have missed."""

    def __init__(self, db: Database, on_ready: Callable[[str | None], None]) -> None:
        super().__init__(
            db,
            CHANNEL,
            lambda run_id: on_ready(run_id or None),
            lambda: on_ready(None),
            what="ready_runs",
        )

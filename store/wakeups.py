"""Handing runs to workers: claiming ready runs in batches, and waking workers on PostgreSQL
with LISTEN/NOTIFY (one channel; the payload is the run id).

A front that records intent (a new run ready to start, a decision making a run ready) hands
the run off here; any worker listening claims it within milliseconds. SQLite has no NOTIFY:
there the worker embedded in `sayso run` is woken in-process. The sweep stays the safety net.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from bot.agent.util import utcnow
from store.db import READY_CHANNEL, Database
from store.records import Lease
from store.runs import ready_condition
from store.schema import runs

log = logging.getLogger("sayso.store")

CHANNEL = READY_CHANNEL
RECONNECT_DELAY_S = 1.0


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


async def claim_ready(db: Database, *, owner: str, lease_seconds: float, limit: int) -> list[Lease]:
    """Claim up to `limit` ready runs, oldest first, in one transaction. On PostgreSQL the rows
    are locked `FOR UPDATE SKIP LOCKED`, so workers claiming at once take different runs."""
    if limit <= 0:
        return []
    now = utcnow()
    expires = now + timedelta(seconds=lease_seconds)
    query = (
        sa.select(runs.c.id, runs.c.version)
        .where(ready_condition(now))
        .order_by(runs.c.updated_at)
        .limit(limit)
    )
    if db.is_postgres:
        query = query.with_for_update(skip_locked=True, of=runs)
    leases: list[Lease] = []
    async with db.write() as conn:
        for row in (await conn.execute(query)).all():
            written = await conn.execute(
                runs.update()
                .where(runs.c.id == row.id, runs.c.version == row.version)
                .values(lease_owner=owner, lease_expires_at=expires, version=row.version + 1)
            )
            if written.rowcount == 1:
                leases.append(
                    Lease(run_id=row.id, owner=owner, version=row.version + 1, expires_at=expires)
                )
    return leases


def asyncpg_dsn(db: Database) -> str:
    """The database URL as asyncpg's `connect` takes it (password included)."""
    url = db.engine.url.set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class ReadyListener:
    """LISTEN on a dedicated asyncpg connection; `on_ready(run_id)` for every notification.
    A lost connection is reopened (after RECONNECT_DELAY_S) until `close`; on reconnection
    `on_ready(None)` asks the worker to look for ready runs it may have missed."""

    def __init__(self, db: Database, on_ready: Callable[[str | None], None]) -> None:
        self.db = db
        self.on_ready = on_ready
        self._task: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()
        self.connected = asyncio.Event()

    def start(self) -> None:
        if self.db.is_postgres and self._task is None:
            self._task = asyncio.create_task(self._listen_forever(), name="ready-listener")

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self.on_ready(payload or None)

    def _terminated(self, _conn: Any) -> None:
        self._lost.set()

    async def _listen_forever(self) -> None:
        import asyncpg  # type: ignore[import-untyped]

        dsn = asyncpg_dsn(self.db)
        while True:
            conn = None
            try:
                conn = await asyncpg.connect(dsn)
                conn.add_termination_listener(self._terminated)
                await conn.add_listener(CHANNEL, self._notified)
                self._lost.clear()
                self.connected.set()
                log.info("event=listening_for_ready_runs channel=%s", CHANNEL)
                self.on_ready(None)
                while not self._lost.is_set():
                    try:
                        await asyncio.wait_for(self._lost.wait(), timeout=5.0)
                    except TimeoutError:
                        await conn.execute("SELECT 1")  # notices a silently dropped socket
            except asyncio.CancelledError:
                if conn is not None:
                    await asyncio.shield(_close_quietly(conn))
                raise
            except Exception as exc:
                log.warning("event=ready_listener_lost error=%r", exc)
            self.connected.clear()
            if conn is not None:
                await _close_quietly(conn)
            await asyncio.sleep(RECONNECT_DELAY_S)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None


async def _close_quietly(conn: Any) -> None:
    try:
        await asyncio.wait_for(conn.close(), timeout=2.0)
    except Exception:
        conn.terminate()

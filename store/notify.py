"""PostgreSQL LISTEN/NOTIFY on one channel: a settled request wakes waiters on every replica.

SQLite has one process, so nothing is sent or heard there: the in-process notifier suffices.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from store.db import Database

log = logging.getLogger("sayso.store")

CHANNEL = "sayso_requests"


async def notify(db: Database, request_id: str) -> None:
    if not db.is_postgres:
        return
    async with db.write() as conn:
        await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, request_id)))


class Listener:
    """One connection held open, LISTENing; calls `on_request(request_id)` per notification."""

    def __init__(self, db: Database, on_request: Callable[[str], None]) -> None:
        self.db = db
        self.on_request = on_request
        self._conn: Any = None
        self._raw: Any = None

    async def start(self) -> None:
        if not self.db.is_postgres or self._conn is not None:
            return
        self._conn = await self.db.engine.connect()
        self._raw = (await self._conn.get_raw_connection()).driver_connection
        await self._raw.add_listener(CHANNEL, self._heard)

    def _heard(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self.on_request(payload)

    async def stop(self) -> None:
        if self._conn is None:
            return
        try:
            await self._raw.remove_listener(CHANNEL, self._heard)
        except Exception:
            log.debug("event=unlisten_failed", exc_info=True)
        await self._conn.close()
        self._conn = self._raw = None

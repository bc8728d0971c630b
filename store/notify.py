"""PostgreSQL LISTEN/NOTIFY: a settled request wakes waiters on every replica, and
`ChannelListener`, the one way this project listens on a channel (it reconnects).

SQLite has one process, so nothing is sent or heard there: the in-process notifier suffices.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from bot.agent.util import wait_set
from store.db import Database

log = logging.getLogger("sayso.store")

CHANNEL = "sayso_requests"


_NOTIFY = sa.select(sa.func.pg_notify(CHANNEL, sa.bindparam("p_id", type_=sa.String())))


async def notify(db: Database, request_id: str) -> None:
    if not db.is_postgres:
        return
    async with db.write() as conn:
        await conn.execute(_NOTIFY, {"p_id": request_id})


RECONNECT_DELAY_S = 1.0


def asyncpg_dsn(db: Database) -> str:
    """The database URL as asyncpg's `connect` takes it (password included)."""
    url = db.engine.url.set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class ChannelListener:
    """LISTEN on `channel` over a dedicated asyncpg connection: `on_payload(payload)` for
    every notification. A lost connection is reopened (after RECONNECT_DELAY_S) until `close`;
    each time it is (re)connected `on_connected()` runs, so the listener's owner can look for
    what it may have missed meanwhile. Nothing happens on SQLite."""

    def __init__(
        self,
        db: Database,
        channel: str,
        on_payload: Callable[[str], None],
        on_connected: Callable[[], None] | None = None,
        *,
        what: str = "notifications",
    ) -> None:
        self.db = db
        self.channel = channel
        self.what = what  # named in the log: event=listening_for_<what>
        self.on_payload = on_payload
        self.on_connected = on_connected
        self._task: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()
        self.connected = asyncio.Event()
        self.server_pid: int | None = None  # the listening backend (tests terminate it)

    def start(self) -> None:
        if self.db.is_postgres and self._task is None:
            self._task = asyncio.create_task(self._listen_forever(), name=f"listen:{self.channel}")

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self.on_payload(payload)

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
                await conn.add_listener(self.channel, self._notified)
                self._lost.clear()
                self.server_pid = conn.get_server_pid()
                self.connected.set()
                log.info("event=listening_for_%s channel=%s", self.what, self.channel)
                if self.on_connected is not None:
                    self.on_connected()
                while not self._lost.is_set():
                    if not await wait_set(self._lost, 5.0):
                        await conn.execute("SELECT 1")  # notices a silently dropped socket
            except asyncio.CancelledError:
                if conn is not None:
                    await asyncio.shield(_close_quietly(conn))
                raise
            except Exception as exc:
                log.warning("event=listener_lost channel=%s error=%r", self.channel, exc)
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

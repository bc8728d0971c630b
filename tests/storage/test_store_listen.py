"""ChannelListener (store/notify.py), behind the workers' wake-ups and the approval API's
long-polls: a listening connection that PostgreSQL drops is reopened, the owner is told so it
can look for what it missed, and later notifications are heard again."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from store.db import Database
from store.notify import ChannelListener
from tests.helpers.postgres import fresh_postgres, need_postgres
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.postgres


async def test_a_dropped_listening_connection_is_reopened() -> None:
    async with fresh_postgres(need_postgres()) as url:
        db = Database(url)
        heard: list[str] = []
        connections: list[int] = []
        listener = ChannelListener(db, "sayso_test", heard.append, lambda: connections.append(1))
        listener.start()
        try:
            await eventually(lambda: listener.connected.is_set(), timeout=10, what="listening")
            first_pid = listener.server_pid

            async def notify(payload: str) -> None:
                async with db.write() as conn:
                    await conn.execute(sa.select(sa.func.pg_notify("sayso_test", payload)))

            await notify("one")
            await eventually(lambda: heard == ["one"], timeout=5, what="the first notification")
            async with db.write() as conn:  # PostgreSQL drops the listening backend
                await conn.execute(sa.select(sa.func.pg_terminate_backend(first_pid)))
            await eventually(
                lambda: len(connections) == 2 and listener.server_pid != first_pid,
                timeout=15,
                what="the listener to reconnect",
            )
            await notify("two")
            await eventually(lambda: heard == ["one", "two"], timeout=5, what="a later one")
        finally:
            await listener.close()
            await db.engine.dispose()


async def test_nothing_listens_on_sqlite(tmp_path: object) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path}/sayso.db")
    listener = ChannelListener(db, "sayso_test", lambda _: None)
    listener.start()
    assert not listener.connected.is_set()
    await listener.close()
    await db.engine.dispose()

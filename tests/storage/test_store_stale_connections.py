"""PostgreSQL connections that died in the pool (a restart, a proxy's idle timeout): a
connection idle longer than `IDLE_PING_SECONDS` is pinged before use and replaced when dead;
one used moments ago is not pinged (a round trip saved per transaction), so a connection that
died in that window fails its statement once and the pool is recycled."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine

import store.db
from store import Store
from tests.helpers.postgres import fresh_postgres, need_postgres

pytestmark = pytest.mark.postgres


async def _kill_connections(url: str) -> int:
    """Terminate every server connection of this database but the one asking."""
    admin = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            killed = await conn.scalar(
                sa.text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
    finally:
        await admin.dispose()
    return int(killed or 0)


async def test_an_idle_dead_connection_is_replaced_before_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with fresh_postgres(need_postgres("stale connection test")) as url:
        s = Store(url)
        try:
            await s.upgrade()
            assert await s.runs.get("nope") is None  # a pooled connection now
            assert await _kill_connections(url) >= 1
            monkeypatch.setattr(store.db, "IDLE_PING_SECONDS", 0.0)  # every one counts as idle
            assert await s.runs.get("nope") is None  # pinged, found dead, replaced
            assert await s.ping()
        finally:
            await s.close()


async def test_a_connection_used_moments_ago_is_not_pinged_and_fails_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store.db, "IDLE_PING_SECONDS", 3600.0)  # nothing counts as idle
    async with fresh_postgres(need_postgres("stale connection test")) as url:
        s = Store(url)
        try:
            await s.upgrade()
            assert await s.runs.get("nope") is None
            assert await _kill_connections(url) >= 1
            with pytest.raises(DBAPIError):
                await s.runs.get("nope")
            assert await s.runs.get("nope") is None  # the pool was recycled
        finally:
            await s.close()

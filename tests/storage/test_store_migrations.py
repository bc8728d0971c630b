"""The packaged migrations: from empty, repeated, concurrent, and matching the code's tables."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from bot.agent.util import utcnow
from store.migrate import VERSION_TABLE, upgrade
from store.schema import metadata
from tests.storage.store_helpers import StoreFactory, paused_run

HEAD = "0011_run_shown"
TABLES = {
    "runs",
    "approval_requests",
    "request_approvers",
    "request_approvals",
    "audit_events",
    "slack_events",
    "api_keys",
    "api_requests",
    "webhook_deliveries",
    "slack_intake",
    "slack_outbox",
    "slack_senders",
    "audit_chain",
    "audit_webhook_cursor",
}


async def _tables(s) -> set[str]:
    async with s.db.read() as conn:
        return set(await conn.run_sync(lambda c: sa.inspect(c).get_table_names()))


async def _head(s) -> str | None:
    async with s.db.read() as conn:
        return await conn.scalar(sa.text(f"SELECT version_num FROM {VERSION_TABLE}"))


async def test_upgrade_from_empty_creates_every_table(make_store: StoreFactory) -> None:
    s = await make_store()
    assert TABLES.isdisjoint(await _tables(s))
    await s.upgrade()
    assert TABLES | {VERSION_TABLE} <= await _tables(s)
    assert await _head(s) == HEAD
    assert await s.ping()


async def test_upgrade_twice_is_harmless_and_keeps_data(make_store: StoreFactory) -> None:
    s = await make_store()
    await s.upgrade()
    await s.runs.create(
        run_id="r1",
        agent_id="ops",
        requester=None,
        team_id=None,
        channel_id=None,
        thread_ts=None,
        request_text="x",
    )
    await s.upgrade()
    again = await make_store()
    await again.upgrade()
    assert (await again.runs.get("r1")) is not None
    assert await _head(again) == HEAD


async def test_concurrent_upgrades_on_a_fresh_database_both_succeed(
    make_store: StoreFactory,
) -> None:
    replicas = [await make_store(replica_id=f"r{i}") for i in range(4)]
    await asyncio.gather(*(r.upgrade() for r in replicas))
    for r in replicas:
        assert TABLES <= await _tables(r)
    assert await _head(replicas[0]) == HEAD


async def test_migrations_match_the_tables_the_code_uses(make_store: StoreFactory) -> None:
    s = await make_store()
    await s.upgrade()

    def diff(conn: sa.Connection) -> list:
        ctx = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": VERSION_TABLE}
        )
        return compare_metadata(ctx, metadata)

    async with s.db.read() as conn:
        assert await conn.run_sync(diff) == []


async def test_ping_is_false_when_the_database_is_unreachable() -> None:
    from store import Store

    s = Store("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    try:
        assert await s.ping() is False
    finally:
        await s.close()


async def test_upgrade_from_the_first_release_keeps_paused_runs(make_store: StoreFactory) -> None:
    s = await make_store()
    await upgrade(s.db, "0001")
    assert await _head(s) == "0001"
    await s.upgrade()
    assert await _head(s) == HEAD
    await paused_run(s, "run1")
    assert [r.state.reminded_at for r in await s.requests.current("run1")] == [None]


async def test_an_older_release_starts_on_a_schema_a_newer_one_migrated(
    make_store: StoreFactory,
) -> None:
    """Rolling upgrades: a pod of the previous release restarting after the new release's
    migration finds a revision it does not know, and starts instead of failing."""
    s = await make_store()
    await s.upgrade()
    async with s.db.write() as conn:
        await conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = '9999_future'"))
    await s.upgrade()  # no "Can't locate revision": nothing to do
    assert await _head(s) == "9999_future"


async def test_runs_ended_before_the_upgrade_count_as_shown(make_store: StoreFactory) -> None:
    """0011 adds `shown_version`: a run that ended under the previous release is not shown a
    second time by the sweep after the upgrade."""
    s = await make_store()
    await upgrade(s.db, "0010_api_quota")
    async with s.db.write() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO runs (id, agent_id, status, pause_seq, channel_id, request_text,"
                " created_at, updated_at, version) VALUES ('old', 'ops', 'completed', 0, 'C1',"
                " 'x', '2026-12-01 10:00:00', '2026-12-01 10:00:00', 7)"
            )
        )
    await s.upgrade()
    old = await s.runs.get("old")
    assert old is not None and old.shown_version == old.version == 7
    assert await s.runs.unshown(utcnow(), utcnow() - timedelta(days=3650)) == []

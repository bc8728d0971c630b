"""Finding 8: `sayso db reencrypt` never overwrites a save made while it runs (PostgreSQL)."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from store import Store, rekey
from store.schema import runs
from tests.helpers.postgres import fresh_postgres, need_postgres

pytestmark = pytest.mark.postgres


async def test_a_save_during_reencrypt_is_kept() -> None:
    base = need_postgres("the re-encryption concurrency test")
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    async with fresh_postgres(base) as url:
        writer = Store(url, encryption_keys=[old])
        await writer.upgrade()
        await writer.runs.create(
            run_id="r1",
            agent_id="ops",
            requester="U1",
            team_id="T1",
            channel_id="C1",
            thread_ts="1.1",
            request_text="x",
        )
        async with writer.db.write() as conn:
            await conn.execute(runs.update().where(runs.c.id == "r1").values(state="v1"))
        rekeyer = Store(url, encryption_keys=[new, old])
        reading = asyncio.Event()
        go = asyncio.Event()

        async def pause() -> None:
            reading.set()
            await go.wait()

        async def save_v2() -> None:
            await reading.wait()
            async with writer.db.write() as conn:
                await conn.execute(
                    runs.update()
                    .where(runs.c.id == "r1", runs.c.version == 1)
                    .values(state="v2", version=2)
                )

        rekey.pause_between_read_and_write = pause
        try:
            rekeying = asyncio.create_task(rekeyer.reencrypt(batch=10))
            saving = asyncio.create_task(save_v2())
            await asyncio.sleep(0.5)  # the save is under way (blocked by the row lock)
            go.set()
            await asyncio.wait_for(asyncio.gather(rekeying, saving), 20)
        finally:
            rekey.pause_between_read_and_write = None
        async with rekeyer.db.read() as conn:
            row = (await conn.execute(sa.select(runs.c.state, runs.c.version))).one()
        assert (row.state, row.version) == ("v2", 2)
        await rekeyer.close()
        await writer.close()

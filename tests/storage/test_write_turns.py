"""SQLite's writers take turns, an ack's record first (store/write_turns.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlalchemy as sa

from store import Store
from store.write_turns import WriteTurns


async def _writer(turns: WriteTurns, name: str, order: list[str], urgent: bool = False) -> None:
    async with turns.turn(urgent=urgent):
        order.append(name)
        await asyncio.sleep(0.01)


async def _queued(turns: WriteTurns, count: int) -> None:
    while turns.waiting < count:  # noqa: ASYNC110 (the writers queue on this loop)
        await asyncio.sleep(0)


async def test_an_urgent_writer_goes_before_those_waiting() -> None:
    turns, order = WriteTurns(), []
    holder = asyncio.create_task(_writer(turns, "holder", order))
    await asyncio.sleep(0)
    others = [asyncio.create_task(_writer(turns, f"o{i}", order)) for i in range(5)]
    await _queued(turns, 5)
    urgent = asyncio.create_task(_writer(turns, "ack", order, urgent=True))
    await asyncio.gather(holder, urgent, *others)
    assert order == ["holder", "ack", "o0", "o1", "o2", "o3", "o4"]


async def test_urgent_writers_do_not_starve_the_others() -> None:
    """Urgent and other writers waiting together alternate: one other after each urgent."""
    turns, order = WriteTurns(), []
    holder = asyncio.create_task(_writer(turns, "holder", order))
    await asyncio.sleep(0)
    others = [asyncio.create_task(_writer(turns, f"o{i}", order)) for i in range(3)]
    urgent = [asyncio.create_task(_writer(turns, f"u{i}", order, urgent=True)) for i in range(3)]
    await _queued(turns, 6)
    await asyncio.gather(holder, *others, *urgent)
    assert order == ["holder", "u0", "o0", "u1", "o1", "u2", "o2"]


async def test_a_writer_cancelled_while_waiting_or_once_handed_the_turn_passes_it_on() -> None:
    turns, order = WriteTurns(), []
    late: asyncio.Task[None] | None = None

    async def holder() -> None:
        async with turns.turn():
            order.append("holder")
            await asyncio.sleep(0.01)
        assert late is not None
        late.cancel()  # handed the turn just now, cancelled before it runs

    held = asyncio.create_task(holder())
    await asyncio.sleep(0)
    gone = asyncio.create_task(_writer(turns, "gone", order))
    late = asyncio.create_task(_writer(turns, "late", order))
    last = asyncio.create_task(_writer(turns, "last", order))
    await _queued(turns, 3)
    gone.cancel()  # while it waits
    await asyncio.gather(held, gone, late, return_exceptions=True)
    await asyncio.wait_for(last, 1.0)
    assert order == ["holder", "last"]
    assert late.cancelled() and gone.cancelled()
    async with turns.turn():  # free again
        pass


async def test_on_a_sqlite_file_the_intake_record_is_written_before_queued_writes(
    tmp_path: Path,
) -> None:
    """Ten run writes queued behind one in progress: an interaction recorded now (its ack
    waits) commits second, not eleventh."""
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}")
    await store.upgrade()
    committed: list[str] = []
    release = asyncio.Event()

    async def slow_write() -> None:
        async with store.db.write() as conn:
            await conn.execute(sa.text("SELECT 1"))
            await release.wait()
        committed.append("first")

    async def queued_write(i: int) -> None:
        async with store.db.write() as conn:
            await conn.execute(sa.text("SELECT 1"))
        committed.append(f"queued{i}")

    async def record() -> None:
        await store.intake().record("action:T1", "action", {"type": "block_actions"})
        committed.append("record")

    try:
        first = asyncio.create_task(slow_write())
        await asyncio.sleep(0.05)
        queued = [asyncio.create_task(queued_write(i)) for i in range(10)]
        await asyncio.sleep(0.05)
        recorded = asyncio.create_task(record())
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.gather(first, recorded, *queued)
        assert committed[:2] == ["first", "record"]
        assert len(committed) == 12
        assert await store.intake().get("action:T1") is not None
    finally:
        await store.close()

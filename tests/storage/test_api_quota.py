"""Finding 10: a key's quota is counted in the database, so replicas share it (two Stores on
one database are two replicas' pools), over a sliding minute; a refused request is not counted."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from store import quota
from store.schema import api_quota
from tests.storage.conftest import StoreFactory

T0 = 1_800_000_000.0  # the start of a minute


async def test_two_replicas_share_one_quota(make_store: StoreFactory) -> None:
    a, b = await make_store(), await make_store()
    await a.upgrade()
    verdicts = [await quota.take((a, b)[i % 2].db, "ci", 10, now=T0 + i) for i in range(12)]
    assert verdicts[:10] == [None] * 10
    assert all(v is not None and 1 <= v <= 60 for v in verdicts[10:])
    # refused requests were not counted: a minute later the previous one's share has faded
    assert await quota.take(b.db, "ci", 10, now=T0 + 130) is None
    assert await quota.take(a.db, "other", 10, now=T0 + 11) is None  # other keys: their own


async def test_the_window_slides(make_store: StoreFactory) -> None:
    store = await make_store()
    await store.upgrade()
    for i in range(10):
        assert await quota.take(store.db, "ci", 10, now=T0 + 50 + i / 10) is None
    # 15 s into the next minute, 3/4 of the previous minute's 10 still count: 7.5 + 1, + 2, +3
    late = T0 + 75
    assert await quota.take(store.db, "ci", 10, now=late) is None
    assert await quota.take(store.db, "ci", 10, now=late) is None
    wait = await quota.take(store.db, "ci", 10, now=late)
    assert wait is not None and wait <= 45  # once enough of the previous minute has faded
    assert await quota.take(store.db, "ci", 10, now=late + wait) is None


async def test_concurrent_requests_never_exceed_the_quota(make_store: StoreFactory) -> None:
    stores = [await make_store() for _ in range(2)]
    await stores[0].upgrade()
    verdicts = await asyncio.gather(
        *(quota.take(stores[i % 2].db, "burst", 20, now=T0 + 1) for i in range(40))
    )
    assert sum(v is None for v in verdicts) == 20


async def _counted(store, key: str, minute: int) -> int:  # type: ignore[no-untyped-def]
    async with store.db.read() as conn:
        return int(
            await conn.scalar(
                sa.select(sa.func.coalesce(sa.func.sum(api_quota.c.count), 0)).where(
                    api_quota.c.key_name == key, api_quota.c.minute == minute
                )
            )
        )


async def test_a_busy_key_takes_units_ahead_and_never_exceeds_its_quota(
    make_store: StoreFactory,
) -> None:
    """Two replicas, a key of 2,400 a minute (20 units ahead at once): 2,000 requests at once
    cost one database write per 20, not one each; 1,000 more let through what the quota still
    allows, less at most what the replicas hold ahead, never more."""
    stores = [await make_store() for _ in range(2)]
    await stores[0].upgrade()
    replicas = [quota.QuotaAhead(s.db) for s in stores]
    writes = 0
    real_take = quota.take

    async def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal writes
        writes += 1
        return await real_take(*args, **kwargs)

    quota.take = counting  # type: ignore[assignment]
    try:
        under = await asyncio.gather(
            *(replicas[i % 2].take("busy", 2400, now=T0 + 1) for i in range(2000))
        )
        assert under == [None] * 2000
        assert writes <= 2000 / 20 + 2  # a refill per 20 requests and replica, not a write each
        over = await asyncio.gather(
            *(replicas[i % 2].take("busy", 2400, now=T0 + 2) for i in range(1000))
        )
    finally:
        quota.take = real_take  # type: ignore[assignment]
    allowed = 2000 + sum(v is None for v in over)
    assert 2400 - 2 * 20 <= allowed <= 2400
    assert await _counted(stores[0], "busy", int((T0 + 1) // 60)) <= 2400
    assert all(v is None or 1 <= v <= 60 for v in over)


async def test_a_small_quota_is_counted_one_request_at_a_time(make_store: StoreFactory) -> None:
    store = await make_store()
    await store.upgrade()
    ahead = quota.QuotaAhead(store.db)
    verdicts = [await ahead.take("small", 60, now=T0 + i / 10) for i in range(61)]
    assert verdicts[:60] == [None] * 60 and verdicts[60] is not None
    assert await _counted(store, "small", int(T0 // 60)) == 60

"""Finding 10: a key's quota is counted in the database, so replicas share it (two Stores on
one database are two replicas' pools), over a sliding minute; a refused request is not counted."""

from __future__ import annotations

import asyncio

from store import quota
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

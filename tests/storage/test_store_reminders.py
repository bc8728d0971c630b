"""Reminders are claimed once per request, even with several replicas sweeping at once."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.agent.util import utcnow
from store import Store
from tests.storage.store_helpers import paused_run


async def test_due_reminders_are_claimed_exactly_once(store: Store, make_store) -> None:  # type: ignore[no-untyped-def]
    await paused_run(store, "run1", calls=("call_1", "call_2"))
    now = utcnow()
    assert await store.requests.due_reminders(now - timedelta(minutes=5), now) == []  # too young
    replicas = [await make_store() for _ in range(5)]
    later = now + timedelta(minutes=10)
    claimed = await asyncio.gather(
        *(r.requests.due_reminders(later - timedelta(minutes=5), later) for r in replicas)
    )
    ids = [req.id for batch in claimed for req in batch]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(req.state.reminded_at is not None for batch in claimed for req in batch)
    assert await store.requests.due_reminders(later, later) == []  # never twice


async def test_expired_or_decided_requests_get_no_reminder(store: Store) -> None:
    await paused_run(store, "run1", calls=("call_1", "call_2"), minutes=1)
    request = (await store.requests.current("run1"))[0]
    await store.requests.decide(request.id, actor="U_A", status="approved")
    late = utcnow() + timedelta(minutes=2)  # past expiry
    assert await store.requests.due_reminders(late, late) == []

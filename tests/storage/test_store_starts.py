"""The count behind SAYSO_RATE_LIMIT: runs a person started plus their retries, and a limit
that holds when replicas start runs for the same person at once."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.agent.util import utcnow
from store import StartLimit, StartLimitReached, Store
from tests.storage.store_helpers import StoreFactory


async def new_run(store: Store, run_id: str, requester: str, limit: StartLimit | None) -> bool:
    try:
        await store.runs.create(
            limit=limit,
            run_id=run_id,
            agent_id="ops",
            requester=requester,
            team_id="T1",
            channel_id="C1",
            thread_ts=None,
            request_text="deploy",
        )
    except StartLimitReached:
        return False
    return True


async def test_starts_count_runs_and_retries_of_one_person(store: Store) -> None:
    since = utcnow() - timedelta(minutes=1)
    assert await new_run(store, "r1", "U1", None)
    assert await new_run(store, "r2", "U2", None)
    await store.audit.record(actor="U1", action="retry", run_id="r1", outcome="ok")
    await store.audit.record(actor="U1", action="retry", run_id="r1", outcome="denied")
    starts = await store.runs.starts_since("U1", since)
    assert len(starts) == 2 and starts == sorted(starts)
    assert await store.runs.starts_since("U1", utcnow() + timedelta(seconds=1)) == []


async def test_a_run_over_the_limit_is_not_stored(store: Store) -> None:
    limit = StartLimit(most=2, since=utcnow() - timedelta(minutes=1))
    assert await new_run(store, "r1", "U1", limit)
    assert await new_run(store, "r2", "U1", limit)
    with pytest.raises(StartLimitReached) as reached:
        await store.runs.create(
            limit=limit,
            run_id="r3",
            agent_id="ops",
            requester="U1",
            team_id=None,
            channel_id=None,
            thread_ts=None,
            request_text="deploy",
        )
    assert len(reached.value.starts) == 2
    assert await store.runs.get("r3") is None
    assert await new_run(store, "r4", "U2", limit)  # another person has their own count


async def test_replicas_starting_at_once_never_pass_the_limit(make_store: StoreFactory) -> None:
    first = await make_store(replica_id="R0")
    await first.upgrade()
    replicas = [first, *[await make_store(replica_id=f"R{i}") for i in range(1, 8)]]
    limit = StartLimit(most=5, since=utcnow() - timedelta(minutes=1))
    started = await asyncio.gather(
        *(new_run(replicas[i % 8], f"r{i}", "U1", limit) for i in range(24))
    )
    assert sum(started) == 5
    assert len(await first.runs.list(requester="U1")) == 5

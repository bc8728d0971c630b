"""Runs and leases: create, look up, claim exactly once, fencing of a lapsed holder."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.agent.state import Run, RunResult
from bot.agent.util import utcnow
from store import LeaseLostError, Store
from tests.helpers.waiting import eventually
from tests.storage.store_helpers import StoreFactory, paused_run, policy


async def _new_run(s: Store, run_id: str = "r1", **kw: object):
    fields = dict(
        agent_id="ops",
        requester="U1",
        team_id="T1",
        channel_id="C1",
        thread_ts=None,
        request_text="deploy v2 to staging",
    )
    fields.update(kw)
    return await s.runs.create(run_id=run_id, **fields)  # type: ignore[arg-type]


def _result(run_id: str, status: str = "running") -> RunResult:
    return RunResult(run=Run(id=run_id, agent_id="ops", model="scripted:list", status=status))  # type: ignore[arg-type]


async def test_create_run_is_running_and_leased_by_its_creator(store: Store) -> None:
    lease = await _new_run(store)
    assert lease.owner == store.replica_id and lease.version == 1
    run = await store.runs.get("r1")
    assert run is not None
    assert (run.status, run.version, run.lease_owner) == ("running", 1, store.replica_id)
    assert run.created_at.tzinfo is not None and run.lease_expires_at > utcnow()
    assert run.result is None and await store.runs.load_result("r1") is None
    assert await store.runs.get("missing") is None


async def test_thread_lookup_and_listing_newest_first(store: Store) -> None:
    await _new_run(store, "r1", requester="U1")
    await _new_run(store, "r2", requester="U2")
    await store.runs.set_thread("r1", "C9", "1700000000.000200")
    found = await store.runs.for_thread("C9", "1700000000.000200")
    assert found is not None and found.id == "r1"
    assert await store.runs.for_thread("C9", "nope") is None
    assert [r.id for r in await store.runs.list()] == ["r2", "r1"]
    assert [r.id for r in await store.runs.list(requester="U1")] == ["r1"]
    assert [r.id for r in await store.runs.list(status="completed")] == []
    assert len(await store.runs.list(limit=1)) == 1


async def test_save_stores_state_and_advances_the_fencing_token(store: Store) -> None:
    lease = await _new_run(store)
    accessor = store.runs.accessor(lease, policy())
    await accessor.save(_result("r1"))
    assert lease.version == 2
    loaded = await accessor.load("r1")
    assert loaded is not None and loaded.run.id == "r1"
    run = await store.runs.get("r1")
    assert run.version == 2 and run.lease_owner == store.replica_id
    assert run.result is not None and run.state_schema_version == loaded.schema_version
    await accessor.save(_result("r1", "completed"))
    run = await store.runs.get("r1")
    assert run.status == "completed" and run.lease_owner is None  # released with the last write


async def test_claim_is_refused_while_the_lease_is_held(make_store: StoreFactory) -> None:
    a = await make_store(replica_id="A")
    await a.upgrade()
    b = await make_store(replica_id="B")
    await _new_run(a)
    assert await b.runs.claim("r1") is None
    assert await a.runs.claim("r1") is None  # even the holder: one task per lease
    assert await b.runs.claim("missing") is None


async def test_lapsed_lease_moves_to_another_replica_and_fences_the_old_holder(
    make_store: StoreFactory,
) -> None:
    a = await make_store(replica_id="A", lease_seconds=0.2)
    await a.upgrade()
    b = await make_store(replica_id="B")
    lease_a = await _new_run(a)
    accessor_a = a.runs.accessor(lease_a, policy())
    await accessor_a.save(_result("r1"))
    assert await b.runs.claim("r1") is None
    lapsed = await eventually(b.runs.lapsed, what="A's lease (0.2 s) to lapse")
    assert lapsed == ["r1"]
    assert "r1" in await b.runs.ready()
    lease_b = await b.runs.claim("r1")
    assert lease_b is not None and lease_b.owner == "B" and lease_b.version == lease_a.version + 1
    assert lease_b.taken_over  # from a holder whose lease lapsed: counted as a takeover
    assert await a.runs.renew(lease_a) is False
    with pytest.raises(LeaseLostError):
        await accessor_a.save(_result("r1", "completed"))  # A's late write is refused
    run = await b.runs.get("r1")
    assert run.status == "running" and run.lease_owner == "B"
    assert await b.runs.renew(lease_b) is True
    await a.runs.release(lease_a)  # not ours any more: no effect
    assert (await b.runs.get("r1")).lease_owner == "B"
    await b.runs.release(lease_b)
    assert (await b.runs.get("r1")).lease_owner is None
    again = await a.runs.claim("r1")
    assert again is not None and not again.taken_over  # released: no takeover


async def test_renew_extends_only_our_lease(store: Store) -> None:
    lease = await _new_run(store)
    before = lease.expires_at
    await asyncio.sleep(0.01)  # time passes, so a renewed lease expires later than before
    assert await store.runs.renew(lease) is True
    assert lease.expires_at > before
    assert (await store.runs.get("r1")).lease_expires_at == lease.expires_at


async def test_exactly_one_of_many_replicas_claims_a_free_run(make_store: StoreFactory) -> None:
    first = await make_store(replica_id="first")
    await first.upgrade()
    lease = await _new_run(first)
    await first.runs.release(lease)
    replicas = [await make_store(replica_id=f"R{i}") for i in range(20)]
    leases = await asyncio.gather(*(r.runs.claim("r1") for r in replicas))
    winners = [x for x in leases if x is not None]
    assert len(winners) == 1
    assert (await first.runs.get("r1")).lease_owner == winners[0].owner


async def test_ready_runs_lists_decided_pauses_nobody_holds(store: Store) -> None:
    await paused_run(store, "waiting", calls=("c1", "c2"))
    await paused_run(store, "decided", calls=("c1",))
    for r in await store.requests.for_run("decided"):
        await store.requests.decide(r.id, actor="U2", status="approved")
    held = await _new_run(store, "held")
    await store.runs.accessor(held, policy()).save(_result("held"))
    ready = await store.runs.ready()
    assert ready == ["decided"]
    # One of two decided: not yet. Both: ready.
    first, second = await store.requests.for_run("waiting")
    out = await store.requests.decide(first.id, actor="U2", status="approved")
    assert out.won and not out.run_ready
    assert "waiting" not in await store.runs.ready()
    out = await store.requests.decide(second.id, actor="U2", status="rejected", reason="no")
    assert out.won and out.run_ready
    assert set(await store.runs.ready()) == {"decided", "waiting"}
    # Expired requests count as decided; a lapsed running run is ready too.
    assert "held" in await store.runs.ready(now=utcnow() + timedelta(minutes=5))
    lease = await store.runs.claim("waiting")
    assert lease is not None and "waiting" not in await store.runs.ready()

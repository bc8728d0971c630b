"""Cancelling a run in the store: one write ends it, closes its requests, audits it, and
fences whoever drives it."""

from __future__ import annotations

import pytest

from bot.agent.state import Run, RunResult
from store import LeaseLostError, Store
from tests.storage.store_helpers import paused_run, policy


async def test_cancel_closes_pending_requests_and_is_audited_once(store: Store) -> None:
    await paused_run(store, "r1", calls=("a", "b"))
    done = await store.runs.cancel("r1", actor="U_OPS")
    assert done.cancelled and done.run is not None and done.run.status == "cancelled"
    assert sorted(r.spec.call_id for r in done.requests) == ["a", "b"]
    assert all(
        r.state.status == "cancelled" and r.state.decided_by == "U_OPS" for r in done.requests
    )
    assert done.run.result is not None and done.run.result.run.status == "cancelled"
    again = await store.runs.cancel("r1", actor="U_OTHER")
    assert not again.cancelled and again.run is not None and again.run.status == "cancelled"
    trail = [e for e in await store.audit.trail("r1") if e.action == "cancel"]
    assert [(e.actor, e.outcome) for e in trail] == [("U_OPS", "ok")]
    assert await store.runs.claim("r1") is None
    assert (await store.runs.cancel("nope", actor="U_OPS")).run is None


async def test_the_driver_of_a_cancelled_run_is_fenced_at_its_next_save(store: Store) -> None:
    lease = await store.runs.create(
        run_id="r2",
        agent_id="ops",
        requester="U1",
        team_id="T1",
        channel_id="C1",
        thread_ts=None,
        request_text="go",
    )
    accessor = store.runs.accessor(lease, policy([]))
    running = RunResult(run=Run(id="r2", agent_id="ops", model="scripted:list"))
    await accessor.save(running)
    assert (await store.runs.cancel("r2", actor="U1")).cancelled
    with pytest.raises(LeaseLostError):
        await accessor.save(running)
    run = await store.runs.get("r2")
    assert run is not None and run.status == "cancelled"

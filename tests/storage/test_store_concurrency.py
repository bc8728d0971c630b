"""Replicas racing: each attempt goes through its own Store (its own engine and pool)."""

from __future__ import annotations

import asyncio
import random

from store import Store
from tests.storage.store_helpers import StoreFactory, paused_run


async def _replicas(make_store: StoreFactory, n: int) -> list[Store]:
    first = await make_store(replica_id="R0")
    await first.upgrade()
    return [first, *[await make_store(replica_id=f"R{i}") for i in range(1, n)]]


async def test_fifty_replicas_deciding_one_request_have_exactly_one_winner(
    make_store: StoreFactory,
) -> None:
    replicas = await _replicas(make_store, 50)
    await paused_run(replicas[0], "r1")
    (request,) = await replicas[0].requests.for_run("r1")
    outcomes = await asyncio.gather(
        *(
            s.requests.decide(request.id, actor=f"U{i}", status="approved")
            for i, s in enumerate(replicas)
        )
    )
    winners = [o for o in outcomes if o.won]
    assert len(winners) == 1
    winner = winners[0].request.state.decided_by
    losers = [o for o in outcomes if not o.won]
    assert len(losers) == 49
    assert all(
        o.request.state.status == "approved" and o.request.state.decided_by == winner
        for o in losers
    )
    assert winners[0].run_ready and not any(o.run_ready for o in losers)
    trail = await replicas[0].audit.trail("r1")
    decides = [e for e in trail if e.action == "decide"]
    assert sorted(e.outcome for e in decides) == ["lost"] * 49 + ["won"]
    assert next(e for e in decides if e.outcome == "won").actor == winner


async def test_approvals_racing_rejections_end_in_one_state(make_store: StoreFactory) -> None:
    replicas = await _replicas(make_store, 50)
    await paused_run(replicas[0], "r1")
    (request,) = await replicas[0].requests.for_run("r1")
    attempts = [
        s.requests.decide(
            request.id,
            actor=f"U{i}",
            status="approved" if i % 2 else "rejected",
            reason=None if i % 2 else "not today",
        )
        for i, s in enumerate(replicas)
    ]
    outcomes = await asyncio.gather(*attempts)
    (winner,) = [o for o in outcomes if o.won]
    final = await replicas[0].requests.get(request.id)
    assert final.state.status == winner.request.state.status
    assert final.state.decided_by == winner.request.state.decided_by
    assert all(o.request.state.status == final.state.status for o in outcomes)
    if final.state.status == "rejected":
        assert final.state.reason == "not today"


async def test_a_decision_racing_the_deadline_is_either_decided_or_expired(
    make_store: StoreFactory,
) -> None:
    replicas = await _replicas(make_store, 12)

    async def decider(s: Store, request_id: str, i: int):
        await asyncio.sleep(random.uniform(0.2, 0.6))  # the race: a click around the deadline
        return await s.requests.decide(request_id, actor=f"U{i}", status="approved")

    async def sweeper(s: Store):
        await asyncio.sleep(random.uniform(0.2, 0.6))  # the race: a sweep around the deadline
        return await s.requests.expire_due()

    for n in range(4):
        await paused_run(replicas[0], f"r{n}", minutes=0.4 / 60)  # due in 0.4 s
        (request,) = await replicas[0].requests.for_run(f"r{n}")
        tasks = [decider(s, request.id, i) for i, s in enumerate(replicas[:6])]
        sweeps = [sweeper(s) for s in replicas[6:]]
        results = await asyncio.gather(*tasks, *sweeps)
        decisions, swept = results[:6], results[6:]
        won = [o for o in decisions if o.won]
        expired_by_sweep = [r for batch in swept for r in batch if r.id == request.id]
        trail = await replicas[0].audit.trail(f"r{n}")
        expiries = [e for e in trail if e.action == "expire"]
        final = await replicas[0].requests.get(request.id)
        assert len(won) + len(expiries) == 1, final
        assert len(expired_by_sweep) <= len(expiries)
        if won:
            assert (
                final.state.status == "approved"
                and final.state.decided_at < final.policy.expires_at
            )
            assert final.state.decided_by == won[0].request.state.decided_by
            assert all(o.request.state.status == "approved" for o in decisions)
        else:
            assert final.state.status == "expired" and final.state.decided_by == "system"
            assert all(o.expired and not o.won for o in decisions)


async def test_sweeps_in_every_replica_expire_each_request_once(make_store: StoreFactory) -> None:
    replicas = await _replicas(make_store, 8)
    for n in range(10):
        await paused_run(replicas[0], f"r{n}", calls=("a", "b", "c"), minutes=-1)
    batches = await asyncio.gather(
        *(s.requests.expire_due(limit=7) for s in replicas for _ in range(2))
    )
    expired = [r.id for batch in batches for r in batch]
    assert len(expired) == len(set(expired)) == 30
    events = [e for n in range(10) for e in await replicas[0].audit.trail(f"r{n}")]
    assert sorted(e.request_id for e in events if e.action == "expire") == sorted(expired)

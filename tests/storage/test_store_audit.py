"""Audit trail, Slack event dedup, retention, and the inbox query at scale."""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from datetime import timedelta
from types import SimpleNamespace

from pydantic import BaseModel
from sqlalchemy import text, update

from bot.agent.state import Run, RunResult
from bot.agent.util import utcnow
from store import Store, args_hash
from store.accessor import _pause_seq
from store.schema import approval_requests, request_approvers, runs, slack_events
from store.webhooks import add_delivery
from tests.storage.store_helpers import StoreFactory, paused_run, policy


async def test_audit_trail_records_winners_losers_and_denials(store: Store) -> None:
    await paused_run(store, "r1")
    (r,) = await store.requests.for_run("r1")
    await store.audit.record(
        actor="U_GUEST",
        action="decide",
        run_id="r1",
        call_id=r.spec.call_id,
        request_id=r.id,
        tool_name=r.spec.tool_name,
        arguments=r.spec.arguments,
        outcome="denied",
        detail="guests may not decide",
    )
    await store.requests.decide(r.id, actor="U2", status="approved")
    await store.requests.decide(r.id, actor="U3", status="rejected", reason="too late")
    trail = await store.audit.trail("r1")
    assert [(e.actor, e.action, e.outcome) for e in trail] == [
        ("U_GUEST", "decide", "denied"),
        ("U2", "decide", "won"),
        ("U3", "decide", "lost"),
    ]
    expected = hashlib.sha256(b'deploy{"env":"staging"}').hexdigest()
    assert all(e.args_hash == expected for e in trail)
    assert args_hash("deploy", {"env": "staging"}) == expected
    assert trail[0].at <= trail[1].at <= trail[2].at and trail[0].at.tzinfo is not None
    assert "decided_by=U2" in (trail[2].detail or "")
    assert await store.audit.trail("nothing") == []


async def test_an_edit_is_audited_with_the_arguments_that_will_run(store: Store) -> None:
    await paused_run(store, "r1")
    (r,) = await store.requests.for_run("r1")
    await store.requests.decide(r.id, actor="U2", status="edited", edited_arguments={"env": "prod"})
    (event,) = await store.audit.trail("r1")
    assert event.args_hash == args_hash("deploy", {"env": "prod"})


async def test_first_delivery_is_true_once_across_replicas(make_store: StoreFactory) -> None:
    a = await make_store()
    await a.upgrade()
    b = await make_store()
    results = await asyncio.gather(*(s.first_delivery("Ev123") for s in (a, b, a, b)))
    assert sorted(results) == [False, False, False, True]
    assert await a.first_delivery("Ev456") is True


async def test_purge_deletes_old_finished_runs_and_keeps_audit(store: Store) -> None:
    for run_id, status in [
        ("old_done", "completed"),
        ("old_wait", "waiting"),
        ("new_done", "failed"),
    ]:
        lease = await paused_run(store, run_id)
        if status != "waiting":
            lease = await store.runs.claim(run_id)
            result = RunResult(run=Run(id=run_id, agent_id="ops", model="m", status=status))  # type: ignore[arg-type]
            await store.runs.accessor(lease, policy()).save(result)
    (r,) = await store.requests.for_run("old_done")
    await store.audit.record(
        actor="U1", action="decide", run_id="old_done", request_id=r.id, outcome="denied"
    )
    await store.first_delivery("Ev_old")
    await add_delivery(store.db, r.id, "https://hooks.example.com/sayso")  # an API webhook
    async with store.db.write() as conn:
        long_ago = utcnow() - timedelta(days=40)
        await conn.execute(update(runs).where(runs.c.id.like("old_%")).values(updated_at=long_ago))
        await conn.execute(update(slack_events).values(received_at=long_ago))
    assert await store.purge(timedelta(days=30)) == 1
    assert await store.runs.get("old_done") is None
    assert await store.requests.get(r.id) is None
    assert (
        await store.runs.get("old_wait") is not None
        and await store.runs.get("new_done") is not None
    )
    assert len(await store.audit.trail("old_done")) == 1
    async with store.db.read() as conn:
        assert await conn.scalar(text("SELECT count(*) FROM request_approvers")) == 2
        assert await conn.scalar(text("SELECT count(*) FROM webhook_deliveries")) == 0
    assert await store.first_delivery("Ev_old") is True  # its dedup record was purged too
    assert await store.purge(timedelta(days=30)) == 0


async def test_inbox_stays_fast_with_100000_requests(store: Store) -> None:
    lease = await store.runs.create(
        run_id="bulk",
        agent_id="ops",
        requester="U0",
        team_id=None,
        channel_id="C1",
        thread_ts=None,
        request_text="bulk",
    )
    await store.runs.release(lease)
    now = utcnow()
    later = now + timedelta(hours=1)
    rows, approvers = [], []
    for i in range(100_000):
        rid = uuid.uuid4().hex
        rows.append(
            dict(
                id=rid,
                run_id="bulk",
                pause_seq=i,
                call_id=f"c{i}",
                step=1,
                tool_name="deploy",
                kind="approval",
                arguments={"i": i},
                status="pending" if i % 20 == 0 else "approved",
                expires_at=later,
                requester="U0",
                allow_self_approval=True,
                interrupted=False,
                created_at=now + timedelta(microseconds=i),
            )
        )
        approvers.append(dict(request_id=rid, principal=f"U{i % 500}" if i % 3 else "*"))
    async with store.db.write() as conn:
        for k in range(0, len(rows), 5000):
            await conn.execute(approval_requests.insert(), rows[k : k + 5000])
            await conn.execute(request_approvers.insert(), approvers[k : k + 5000])
        if store.db.is_postgres:
            await conn.execute(text("ANALYZE"))
    started = time.perf_counter()
    page, total = await store.requests.pending_for("U40", ["S_NONE"], include_anyone=False)
    mine = time.perf_counter() - started
    started = time.perf_counter()
    page_any, total_any = await store.requests.pending_for("U40")
    anyone = time.perf_counter() - started
    assert total == len([i for i in range(0, 100_000, 20) if i % 3 and i % 500 == 40])
    everyone = total + len([i for i in range(0, 100_000, 20) if not i % 3])
    assert total_any == min(everyone, 1000)  # counted up to the inbox's limit ("1,000+")
    _, exact = await store.requests.pending_for("U40", count_limit=10**6)
    assert exact == everyone
    assert page and all(r.policy.approvers == ("U40",) for r in page)
    assert len(page_any) == 50 and page_any[0].spec.created_at >= page_any[-1].spec.created_at
    print(f"inbox at 100k: own={mine:.4f}s with anyone={anyone:.4f}s")
    assert mine < 1.0 and anyone < 1.0, (mine, anyone)


def test_pause_numbering_without_the_runtimes_pause_seq() -> None:
    class OldPause(BaseModel):  # a runtime whose Pause has no `seq`
        kind: str
        step: int

    waiting = SimpleNamespace(
        status="waiting_for_human", pause_kind="tool_approval", pause_step=3, pause_seq=2
    )
    running = SimpleNamespace(status="running", pause_kind=None, pause_step=None, pause_seq=2)
    assert _pause_seq(OldPause(kind="tool_approval", step=3), waiting) == 2  # saved again
    assert _pause_seq(OldPause(kind="human_review", step=3), waiting) == 3  # a new pause
    assert _pause_seq(OldPause(kind="tool_approval", step=3), running) == 3

"""Fronts and workers in separate processes on one PostgreSQL database (`sayso run
--no-worker` and `sayso worker`, as tests/fault/replica.py --role front|worker).

The sweep is made slow (60 s) wherever a test shows that a worker is woken by NOTIFY.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.sandbox import SlackSandbox
from bot.testing import FakeModelServer
from store import Store
from tests.fault.agents import ANSWER, executions, respond
from tests.fault.cluster import Cluster
from tests.fault.slack import cards, has_button, message_text, request_id, thread_text
from tests.fault.test_replicas import assert_clean, start_run, wait_exit
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE = 2.0
NO_SWEEP = 60.0  # nothing in these tests may wait for a sweep


def all_cards(sb: SlackSandbox) -> list[dict[str, Any]]:
    """Every card with an Approve button, in every run's thread."""
    threads = [sb.thread("C_GENERAL", m["ts"]) for m in sb.messages("C_GENERAL")]
    return [m for t in threads for m in t[1:] if has_button(m, "approve")]


@pytest.fixture
async def store(cluster: Cluster) -> AsyncIterator[Store]:
    s = Store(cluster.db_url, replica_id="observer")
    try:
        yield s
    finally:
        await s.close()


async def test_a_click_on_a_front_is_driven_by_a_worker_process_within_200ms(
    cluster: Cluster, store: Store
) -> None:
    sb = cluster.sandbox
    front, worker = await asyncio.gather(
        cluster.start("front", role="front", sweep_interval=NO_SWEEP),
        cluster.start("worker", role="worker", sweep_interval=NO_SWEEP),
    )
    card = await start_run(cluster, front)  # the new run too reached the worker by NOTIFY
    sb.bot_url = front.url
    clicked = time.monotonic()
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await eventually(
        lambda: executions(cluster.effects), timeout=10, interval=0.005, detail=cluster.logs
    )
    end_to_end = time.monotonic() - clicked
    effects = executions(cluster.effects)
    assert [e["pid"] for e in effects] == [worker.proc.pid]  # the worker ran it, not the front
    await sb.wait_for(lambda _: ANSWER in thread_text(sb), timeout=10)
    decided = await store.requests.get(request_id(card))
    assert decided is not None and decided.state.decided_at is not None
    handed_over = effects[0]["at"] - decided.state.decided_at.timestamp()
    assert 0 <= handed_over < 0.2, f"decision to tool body took {handed_over * 1000:.0f} ms"
    print(
        f"decision to tool body {handed_over * 1000:.0f} ms; click to it {end_to_end * 1000:.0f} ms"
    )
    assert_clean(front, worker)


async def test_sigkill_of_a_worker_inside_a_tool_body_shows_the_call_interrupted_elsewhere(
    cluster: Cluster, store: Store
) -> None:
    sb = cluster.sandbox
    front, first = await asyncio.gather(
        cluster.start("front", role="front", lease_seconds=LEASE, sweep_interval=0.3),
        cluster.start("worker-1", role="worker", hang=120, lease_seconds=LEASE),
    )
    card = await start_run(cluster, front)
    sb.bot_url = front.url
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: executions(cluster.effects), timeout=20)
    assert executions(cluster.effects)[0]["pid"] == first.proc.pid
    first.kill()
    second = await cluster.start("worker-2", role="worker", lease_seconds=LEASE, sweep_interval=0.3)

    def interrupted(_: object) -> dict[str, Any] | None:
        return next((m for m in cards(sb) if "interrupted" in message_text(m).lower()), None)

    card2 = await sb.wait_for(interrupted, timeout=15)
    assert request_id(card2) != request_id(card)
    assert len(executions(cluster.effects)) == 1  # shown to people, not re-run
    assert [r.status for r in await store.runs.list()] == ["waiting_for_human"]
    assert_clean(front, second)


async def test_sigterm_on_a_worker_hands_its_waiting_runs_to_another_none_interrupted(
    cluster: Cluster, store: Store, model: FakeModelServer
) -> None:
    sb = cluster.sandbox
    slow = asyncio.Event()  # set: the model answers at once again

    async def slow_model(body: dict[str, Any]) -> dict[str, Any]:
        if not slow.is_set():
            await asyncio.sleep(30)
        return respond(body)

    model.responder = slow_model
    grace = 1.0
    front, first = await asyncio.gather(
        cluster.start("front", role="front", sweep_interval=NO_SWEEP),
        cluster.start(
            "worker-1",
            role="worker",
            sweep_interval=NO_SWEEP,
            env={"SAYSO_SHUTDOWN_GRACE": str(grace)},
        ),
    )
    sb.bot_url = front.url
    runs = 20
    deliveries = await asyncio.gather(
        *(sb.slash_command("U_REQUESTER", f"ops deploy v{i} to staging") for i in range(runs))
    )
    assert all(d.ok for d in deliveries)
    await eventually(
        lambda: len(model.requests) >= runs, timeout=20, what="20 runs awaiting the model"
    )
    second = await cluster.start("worker-2", role="worker", sweep_interval=NO_SWEEP)
    slow.set()
    stopped_at = time.monotonic()
    first.proc.send_signal(signal.SIGTERM)
    assert await wait_exit(first, within=grace + 8) == 0
    exited_after = time.monotonic() - stopped_at
    # 20 roots and 20 cards in one channel, at Slack's pace there (about one a second)
    await sb.wait_for(lambda _: len(all_cards(sb)) == runs, timeout=60)

    async def all_waiting() -> bool:
        listed = await store.runs.list(limit=100)
        return len(listed) == runs and all(r.status == "waiting_for_human" for r in listed)

    await eventually(all_waiting, timeout=10, what="every run waiting for its approval")
    for run in await store.runs.list(limit=100):
        assert [r.state.interrupted for r in await store.requests.for_run(run.id)] == [False]
    assert not any("interrupted" in message_text(m).lower() for m in all_cards(sb))
    assert "event=run_handed_back" in first.log()
    assert exited_after < grace + 5, exited_after
    assert_clean(front, second)


async def test_sigkill_of_a_worker_awaiting_its_model_is_continued_once_elsewhere(
    cluster: Cluster, store: Store, model: FakeModelServer
) -> None:
    sb = cluster.sandbox
    slow = asyncio.Event()  # set: the model answers at once again

    async def slow_model(body: dict[str, Any]) -> dict[str, Any]:
        if not slow.is_set():
            await asyncio.sleep(30)
        return respond(body)

    model.responder = slow_model
    front, first = await asyncio.gather(
        cluster.start("front", role="front", lease_seconds=LEASE, sweep_interval=NO_SWEEP),
        cluster.start("worker-1", role="worker", lease_seconds=LEASE, sweep_interval=NO_SWEEP),
    )
    sb.bot_url = front.url
    delivery = await sb.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    assert delivery.ok, delivery.summary()
    await eventually(lambda: len(model.requests) == 1, timeout=20, what="the model call")
    first.kill()
    slow.set()
    second = await cluster.start("worker-2", role="worker", lease_seconds=LEASE, sweep_interval=0.3)
    await sb.wait_for(lambda _: all_cards(sb), timeout=20)
    await asyncio.sleep(1.0)  # anything posted twice would show by now
    assert len(sb.messages("C_GENERAL")) == 1  # one root message
    assert len(all_cards(sb)) == 1  # one card
    runs = await store.runs.list()
    assert [r.status for r in runs] == ["waiting_for_human"]
    assert [r.state.interrupted for r in await store.requests.for_run(runs[0].id)] == [False]
    assert executions(cluster.effects) == []
    assert_clean(front, second)

"""A run's end is shown once even when the process that ended it dies before showing it
(issue 22, "nothing acknowledged is lost"): killed after the run was saved completed and
before its answer was put in the outbox, the restarted process (or another replica) posts the
answer; killed after the answer was put and before the run was marked shown, the answer is not
posted a second time; killed after a cancel was saved and before it was shown, the cards lose
their buttons and the thread says who cancelled, once. A real process and a real SIGKILL at
each point."""

from __future__ import annotations

import asyncio

import pytest

from store import RunRecord
from tests.fault.agents import ANSWER, executions
from tests.fault.cluster import Cluster
from tests.fault.slack import cards, message_text
from tests.fault.test_lost_clicks import (
    ACTOR,
    CHANNEL,
    LEASE,
    SWEEP,
    open_store,
    restarted,
    start_run,
    thread_messages,
)
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow]


async def marked_shown(cluster: Cluster) -> RunRecord:
    """The cluster's one run, once it is marked shown."""
    async with open_store(cluster.db_url) as store:

        async def marked() -> RunRecord | None:
            runs = await store.runs.list()
            done = len(runs) == 1 and runs[0].shown_version == runs[0].version
            return runs[0] if done else None

        return await eventually(marked, timeout=30, interval=0.2, what="the run marked shown")


async def killed_while_showing(cluster: Cluster, where: str) -> None:
    sb = cluster.sandbox
    a = await cluster.start(
        "replica-a", die_showing_end=where, lease_seconds=LEASE, sweep_interval=SWEEP
    )
    card = await start_run(sb, a, "ops deploy v2 to staging", "approve")
    sb.bot_url = a.url
    assert (await sb.click(ACTOR, CHANNEL, card["ts"], "approve")).ok
    await eventually(
        lambda: "event=fault_injected" in a.log(), timeout=30, what="the kill", detail=a.log
    )
    a.kill()  # a split replica's front too: the whole replica is gone
    again = await restarted(cluster)
    await eventually(
        lambda: any(ANSWER in message_text(m) for m in thread_messages(sb)),
        timeout=60,
        what="the answer shown after the restart",
        detail=again.log,
    )
    await marked_shown(cluster)
    await asyncio.sleep(2.0)  # a second answer would show by now
    assert sum(ANSWER in message_text(m) for m in thread_messages(sb)) == 1
    assert [e["version"] for e in executions(cluster.effects)] == ["v2"]
    assert "event=end_unshown" in again.log(), again.log()[-4000:]
    assert "Traceback" not in again.log(), again.log()[-6000:]


@pytest.mark.parametrize("where", ["put", "mark"])
async def test_on_sqlite_the_restarted_process_shows_an_end_once(
    sqlite_cluster: Cluster, where: str
) -> None:
    await killed_while_showing(sqlite_cluster, where)


@pytest.mark.postgres
@pytest.mark.parametrize("where", ["put", "mark"])
async def test_on_postgresql_an_end_left_unshown_is_shown_once(
    cluster: Cluster, where: str
) -> None:
    await killed_while_showing(cluster, where)


async def killed_while_showing_a_cancel(cluster: Cluster) -> None:
    sb = cluster.sandbox
    a = await cluster.start(
        "replica-a", die_showing_end="cancel", lease_seconds=LEASE, sweep_interval=SWEEP
    )
    root = await start_run(sb, a, "ops deploy v2 to staging", "cancel")
    sb.bot_url = a.url
    assert (await sb.click(ACTOR, CHANNEL, root["ts"], "cancel")).ok
    await eventually(
        lambda: "event=fault_injected" in a.log(), timeout=30, what="the kill", detail=a.log
    )
    a.kill()
    again = await restarted(cluster)
    await eventually(
        lambda: not cards(sb),  # the card lost its buttons
        timeout=60,
        what="the card closed after the restart",
        detail=again.log,
    )
    await eventually(
        lambda: any("cancel" in message_text(m).lower() for m in thread_messages(sb)[2:]),
        timeout=30,
        what="the thread's note",
        detail=again.log,
    )
    assert (await marked_shown(cluster)).status == "cancelled"
    await asyncio.sleep(2.0)
    notes = [m for m in thread_messages(sb)[2:] if ACTOR in message_text(m)]
    assert len(notes) == 1, [message_text(m) for m in thread_messages(sb)]
    assert executions(cluster.effects) == []
    assert "Traceback" not in again.log(), again.log()[-6000:]


async def test_on_sqlite_a_cancel_left_unshown_is_shown_once(sqlite_cluster: Cluster) -> None:
    await killed_while_showing_a_cancel(sqlite_cluster)


@pytest.mark.postgres
async def test_on_postgresql_a_cancel_left_unshown_is_shown_once(cluster: Cluster) -> None:
    await killed_while_showing_a_cancel(cluster)

"""Slack goes down while ten cards are approved, and the bot's process is killed with SIGKILL
during the outage, then started again after it (issue 22, "outage plus a crash"): once Slack
is back every card shows its decision, every tool ran once, every answer is posted once and
nothing twice. A real process and a real kill: nothing is released or marked on the way down.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from bot.sandbox import SlackSandbox
from tests.fault.agents import ANSWER, executions
from tests.fault.cluster import Cluster, Replica
from tests.fault.slack import has_button, message_text
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow]

CHANNEL = "C_GENERAL"
RUNS = 10
OUTAGE = 15.0


def threads(sb: SlackSandbox) -> list[list[dict[str, Any]]]:
    """Every run's thread (root first)."""
    return [sb.thread(CHANNEL, root["ts"]) for root in sb.messages(CHANNEL)]


def cards(sb: SlackSandbox) -> list[dict[str, Any]]:
    """Every card (decided or not), in the order of the runs."""
    return [
        m
        for t in threads(sb)
        for m in t[1:]
        if any(b.get("block_id") == "card_header" for b in m.get("blocks", []))
    ]


def final(sb: SlackSandbox) -> bool:
    """Every card shows its decision and every thread its answer."""
    shown = cards(sb)
    return (
        len(shown) == RUNS + 1
        and all(not has_button(c, "approve") and "Approved" in message_text(c) for c in shown)
        and all(any(ANSWER in message_text(m) for m in t[1:]) for t in threads(sb))
    )


def seen(sb: SlackSandbox) -> str:
    """What Slack shows, a line per message (a failed wait says it)."""
    lines = []
    for t in threads(sb):
        for m in t:
            key = ((m.get("metadata") or {}).get("event_payload") or {}).get("key")
            text = message_text(m).replace("\n", " ")[:70]
            button = " [approve]" if has_button(m, "approve") else ""
            lines.append(f"{t[0]['ts']} {m['ts']} {key}{button} {text}")
    return "\n".join(lines)


def twice(sb: SlackSandbox) -> list[str]:
    """Messages shown twice: one outbox key on two messages, or one text twice in a thread."""
    keys: Counter[str] = Counter()
    texts: Counter[tuple[str, str]] = Counter()
    for t in threads(sb):
        for m in t:
            key = ((m.get("metadata") or {}).get("event_payload") or {}).get("key")
            if key:
                keys[str(key)] += 1
            texts[(t[0]["ts"], message_text(m))] += 1
    return [k for k, n in keys.items() if n > 1] + [
        f"{ts}: {text[:60]}" for (ts, text), n in texts.items() if n > 1
    ]


async def ten_cards(sb: SlackSandbox, replica: Replica) -> list[dict[str, Any]]:
    """Ten cards waiting, and the approver known to sayso (they approved an eleventh a moment
    ago: during the outage sayso cannot look them up; a click by someone it never looked up
    waits for Slack, tests/durable/test_outage.py)."""
    sb.bot_url = replica.url
    for _ in range(RUNS + 1):
        delivery = await sb.slash_command("U_REQUESTER", "ops deploy v2 to staging")
        assert delivery.ok, delivery.summary()
    shown = await sb.wait_for(lambda s: len(cards(s)) == RUNS + 1 and cards(s), timeout=60)
    assert (await sb.click("U_APPROVER", CHANNEL, shown[0]["ts"], "approve")).ok
    await sb.wait_for(lambda s: ANSWER in message_text(threads(s)[0][-1]), timeout=30)
    return shown[1:]


async def runs_completed(url: str) -> None:
    """Every run completed: the kill that follows may land before a run's answer was put (the
    sweep of the restarted process shows it: tests/fault/test_unshown_end.py)."""
    engine = create_async_engine(url)
    try:

        async def completed() -> bool:
            async with engine.connect() as conn:
                done = await conn.scalar(
                    sa.text("SELECT count(*) FROM runs WHERE status = 'completed'")
                )
            return done == RUNS + 1

        await eventually(completed, timeout=60, interval=0.05, what="every run completed")
    finally:
        await engine.dispose()


async def outage_then_crash(cluster: Cluster) -> None:
    sb = cluster.sandbox
    a = await cluster.start("replica-a", lease_seconds=2, sweep_interval=0.3)
    shown = await ten_cards(sb, a)
    await sb.outage(OUTAGE, "503")
    back_at = time.monotonic() + OUTAGE
    started = time.monotonic()
    answers = await asyncio.gather(
        *(sb.click("U_APPROVER", CHANNEL, card["ts"], "approve") for card in shown)
    )
    assert [d.status for d in answers] == [200] * RUNS
    assert time.monotonic() - started < 3.0  # the acks stay fast while Slack is down
    await eventually(
        lambda: len(executions(cluster.effects)) == RUNS + 1,
        timeout=OUTAGE,
        what="every tool ran",
        detail=cluster.logs,
    )
    await runs_completed(cluster.db_url)
    assert time.monotonic() < back_at, "the outage ended before the crash"
    a.kill()  # SIGKILL, the whole process group: no lease released, no claim handed back
    await asyncio.sleep(max(0.0, back_at + 1.0 - time.monotonic()))
    again = await cluster.start(
        "replica-a-restarted",
        lease_seconds=2,
        sweep_interval=0.3,
        env={"SAYSO_REPLICA_ID": "replica-a"},
    )
    await eventually(
        lambda: final(sb),
        timeout=90,
        what="converged after the restart",
        detail=lambda: f"{seen(sb)}\n{again.log()}",
    )
    await asyncio.sleep(2.0)  # anything sent twice would show by now
    assert len(executions(cluster.effects)) == RUNS + 1
    assert [sum(ANSWER in message_text(m) for m in t[1:]) for t in threads(sb)] == [1] * (RUNS + 1)
    assert twice(sb) == []
    assert "Traceback" not in again.log(), again.log()[-6000:]


async def test_killed_during_an_outage_and_restarted_after_it_converges_once(
    sqlite_cluster: Cluster,
) -> None:
    await outage_then_crash(sqlite_cluster)


@pytest.mark.postgres
async def test_on_postgresql_killed_during_an_outage_converges_once(cluster: Cluster) -> None:
    await outage_then_crash(cluster)

"""An OpenAI Agents SDK agent run by `/sayso` across processes on PostgreSQL: its card, posted
by a process killed afterwards, is continued by another from the RunState in the database (no
second card, the tool runs once); a process killed inside the SDK's tool body leaves the call
asked about again, marked interrupted, never re-run by itself."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from store import Store
from tests.fault.agents import ANSWER, WITH_OPENAI_AGENTS, executions
from tests.fault.cluster import Cluster, Replica
from tests.fault.slack import cards, message_text, request_id, thread_text
from tests.fault.test_framework_agents import thread
from tests.fault.test_replicas import assert_clean
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE = 2.0
SDK = {WITH_OPENAI_AGENTS: "1", "OPENAI_AGENTS_DISABLE_TRACING": "1"}


async def start(cluster: Cluster, name: str, **options: Any) -> Replica:
    return await cluster.start(name, lease_seconds=LEASE, env=SDK, **options)


async def start_deploying(cluster: Cluster, url: str) -> dict[str, Any]:
    """`/sayso deployer deploy v2 to staging`; returns its card once the card's ts is saved."""
    cluster.sandbox.bot_url = url
    delivery = await cluster.sandbox.slash_command("U_REQUESTER", "deployer deploy v2 to staging")
    assert delivery.ok, delivery.summary()
    await cluster.sandbox.wait_for(lambda sb: cards(sb), timeout=30)
    store = Store(cluster.db_url, replica_id="observer")
    try:

        async def card_saved() -> bool:
            runs = await store.list_runs()
            requests = await store.current_requests(runs[0].id) if runs else []
            return bool(requests) and all(r.message_ts for r in requests)

        await eventually(card_saved, timeout=10, what="the card's ts to be saved")
    finally:
        await store.close()
    return cards(cluster.sandbox)[0]


async def test_a_card_of_a_killed_process_is_continued_by_another_once(cluster: Cluster) -> None:
    sb = cluster.sandbox
    first = await start(cluster, "replica-a")
    card = await start_deploying(cluster, first.url)
    before = thread(sb)
    first.kill()
    second = await start(cluster, "replica-b")
    sb.bot_url = second.url
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: ANSWER in thread_text(sb), timeout=30)
    assert [e["pid"] for e in executions(cluster.effects)] == [second.proc.pid]
    assert len([m for m in thread(sb) if m.get("text") == ANSWER]) == 1
    await sb.wait_for(lambda _: not cards(sb), timeout=10)  # the card shows the decision
    assert len(thread(sb)) == len(before) + 1  # the answer; no second card
    assert_clean(second)


async def test_sigkill_inside_the_sdks_tool_body_asks_again_never_reruns(
    cluster: Cluster,
) -> None:
    sb = cluster.sandbox
    front, first = await asyncio.gather(
        start(cluster, "front", role="front"),
        start(cluster, "worker-1", role="worker", hang=120),
    )
    card = await start_deploying(cluster, front.url)
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: executions(cluster.effects), timeout=30)
    first.kill()
    second = await start(cluster, "worker-2", role="worker")

    def interrupted(_: object) -> dict[str, Any] | None:
        return next((m for m in cards(sb) if "interrupted" in message_text(m).lower()), None)

    card2 = await sb.wait_for(interrupted, timeout=20)
    assert request_id(card2) != request_id(card)
    assert not any(b.get("action_id") == "edit" for b in _buttons(card2))  # the SDK has no edit
    assert len(executions(cluster.effects)) == 1  # shown to people, not re-run
    assert_clean(front, second)


def _buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        el
        for block in message.get("blocks", [])
        if block.get("type") == "actions"
        for el in block.get("elements", [])
    ]

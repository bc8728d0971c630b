"""A Pydantic AI agent and a LangGraph agent run by `/sayso` across processes on PostgreSQL:
a card, posted by a process killed afterwards, is continued by another (no second card, the
tool runs once); a process killed inside the framework's tool body leaves the call asked about
again, marked interrupted, never re-run by itself."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.sandbox import SlackSandbox
from store import Store
from tests.fault.agents import WITH_LANGGRAPH, executions
from tests.fault.cluster import Cluster
from tests.fault.slack import cards, message_text, request_id, thread_text
from tests.fault.test_replicas import assert_clean
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE = 2.0
AGENTS = pytest.mark.parametrize("agent_id", ["scaler", "lgscaler"])  # Pydantic AI, LangGraph


def env_for(agent_id: str) -> dict[str, str]:
    """The LangGraph agent is loaded only when asked for (LangChain takes seconds to import)."""
    return {WITH_LANGGRAPH: "1"} if agent_id == "lgscaler" else {}


def thread(sb: SlackSandbox) -> list[dict[str, Any]]:
    return sb.thread("C_GENERAL", sb.messages("C_GENERAL")[0]["ts"])


async def start_scaling(cluster: Cluster, url: str, agent_id: str) -> dict[str, Any]:
    """`/sayso <agent_id> scale api to 3`; returns its card once the card's ts is saved (a process
    killed between posting a card and saving where it is leaves a card nobody updates)."""
    cluster.sandbox.bot_url = url
    delivery = await cluster.sandbox.slash_command("U_REQUESTER", f"{agent_id} scale api to 3")
    assert delivery.ok, delivery.summary()
    await cluster.sandbox.wait_for(lambda sb: cards(sb), timeout=20)
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


@AGENTS
async def test_a_card_of_a_killed_process_is_continued_by_another_once(
    cluster: Cluster, agent_id: str
) -> None:
    sb = cluster.sandbox
    first = await cluster.start("replica-a", lease_seconds=LEASE, env=env_for(agent_id))
    card = await start_scaling(cluster, first.url, agent_id)
    before = thread(sb)
    first.kill()
    second = await cluster.start("replica-b", lease_seconds=LEASE, env=env_for(agent_id))
    sb.bot_url = second.url
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: "Scaled: api x3" in thread_text(sb), timeout=20)
    assert [e["pid"] for e in executions(cluster.effects)] == [second.proc.pid]
    answers = [m for m in thread(sb) if m.get("text") == "Scaled: api x3"]
    assert len(answers) == 1
    await sb.wait_for(lambda _: not cards(sb), timeout=10)  # the card shows the decision
    status = next(m for m in thread(sb) if m.get("text", "").startswith("Working"))

    def checklist(_: object) -> str:
        return message_text(sb.message("C_GENERAL", status["ts"]) or {})

    await sb.wait_for(lambda _: "1 of 1" in checklist(_), timeout=10)  # the call is done
    assert len(thread(sb)) == len(before) + 1  # the answer; no second card
    assert_clean(second)


@AGENTS
async def test_sigkill_inside_the_frameworks_tool_body_asks_again_never_reruns(
    cluster: Cluster, agent_id: str
) -> None:
    sb = cluster.sandbox
    front, first = await asyncio.gather(
        cluster.start(
            "front", role="front", lease_seconds=LEASE, sweep_interval=0.3, env=env_for(agent_id)
        ),
        cluster.start(
            "worker-1", role="worker", hang=120, lease_seconds=LEASE, env=env_for(agent_id)
        ),
    )
    card = await start_scaling(cluster, front.url, agent_id)
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: executions(cluster.effects), timeout=20)
    first.kill()
    second = await cluster.start(
        "worker-2", role="worker", lease_seconds=LEASE, sweep_interval=0.3, env=env_for(agent_id)
    )

    def interrupted(_: object) -> dict[str, Any] | None:
        return next((m for m in cards(sb) if "interrupted" in message_text(m).lower()), None)

    card2 = await sb.wait_for(interrupted, timeout=15)
    assert request_id(card2) != request_id(card)
    assert len(executions(cluster.effects)) == 1  # shown to people, not re-run
    assert_clean(front, second)

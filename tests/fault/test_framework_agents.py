"""Pydantic AI, LangGraph and OpenAI Agents SDK agents run by `/sayso` across processes on
PostgreSQL: a card, posted by a process killed afterwards, is continued by another from the
framework state in the database (no second card, the tool runs once); a process killed inside
the framework's tool body leaves the call asked about again, marked interrupted, never re-run
by itself."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from bot.sandbox import SlackSandbox
from store import Store
from tests.fault.agents import ANSWER, WITH_LANGGRAPH, WITH_OPENAI_AGENTS, executions
from tests.fault.cluster import Cluster
from tests.fault.slack import cards, has_button, message_text, request_id, thread_text
from tests.fault.test_replicas import assert_clean
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE = 2.0


@dataclass(frozen=True)
class Framework:
    agent_id: str
    request: str  # what follows `/sayso <agent_id>`
    answer: str  # the run's answer once its one call ran
    env: dict[str, str]  # the frameworks other than Pydantic AI load only when asked (seconds)
    edit: bool  # does the card offer Edit?


FRAMEWORKS = {
    "pydantic-ai": Framework("scaler", "scale api to 3", "Scaled: api x3", {}, True),
    "langgraph": Framework(
        "lgscaler", "scale api to 3", "Scaled: api x3", {WITH_LANGGRAPH: "1"}, True
    ),
    "openai-agents": Framework(
        "deployer",
        "deploy v2 to staging",
        ANSWER,
        {WITH_OPENAI_AGENTS: "1", "OPENAI_AGENTS_DISABLE_TRACING": "1"},
        False,  # the SDK has no edit
    ),
}
EACH = pytest.mark.parametrize("framework", list(FRAMEWORKS.values()), ids=list(FRAMEWORKS))


def thread(sb: SlackSandbox) -> list[dict[str, Any]]:
    return sb.thread("C_GENERAL", sb.messages("C_GENERAL")[0]["ts"])


async def start(cluster: Cluster, url: str, framework: Framework) -> dict[str, Any]:
    """`/sayso <agent> <request>`; returns its card once the card's ts is saved (a process
    killed between posting a card and saving where it is leaves a card nobody updates)."""
    cluster.sandbox.bot_url = url
    command = f"{framework.agent_id} {framework.request}"
    delivery = await cluster.sandbox.slash_command("U_REQUESTER", command)
    assert delivery.ok, delivery.summary()
    await cluster.sandbox.wait_for(lambda sb: cards(sb), timeout=30)
    store = Store(cluster.db_url, replica_id="observer")
    try:

        async def card_saved() -> bool:
            runs = await store.runs.list()
            requests = await store.requests.current(runs[0].id) if runs else []
            return bool(requests) and all(r.state.message_ts for r in requests)

        await eventually(card_saved, timeout=10, what="the card's ts to be saved")
    finally:
        await store.close()
    return cards(cluster.sandbox)[0]


@EACH
async def test_a_card_of_a_killed_process_is_continued_by_another_once(
    cluster: Cluster, framework: Framework
) -> None:
    sb = cluster.sandbox
    env = framework.env
    first = await cluster.start("replica-a", lease_seconds=LEASE, env=env)
    card = await start(cluster, first.url, framework)
    assert has_button(card, "edit") is framework.edit
    before = thread(sb)
    first.kill()
    second = await cluster.start("replica-b", lease_seconds=LEASE, env=env)
    sb.bot_url = second.url
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: framework.answer in thread_text(sb), timeout=30)
    assert [e["pid"] for e in executions(cluster.effects)] == [second.driver.pid]
    answers = [m for m in thread(sb) if m.get("text") == framework.answer]
    assert len(answers) == 1
    await sb.wait_for(lambda _: not cards(sb), timeout=10)  # the card shows the decision
    root = sb.messages("C_GENERAL")[0]

    def root_text(_: object) -> str:
        return str((sb.message("C_GENERAL", root["ts"]) or {}).get("text", ""))

    # the root message carries the run's status (and its checklist while it is live)
    await sb.wait_for(lambda _: root_text(_).endswith("(completed)"), timeout=10)
    assert len(thread(sb)) == len(before) + 1  # the answer; no second card
    assert_clean(second)


@EACH
async def test_sigkill_inside_the_frameworks_tool_body_asks_again_never_reruns(
    cluster: Cluster, framework: Framework
) -> None:
    sb = cluster.sandbox
    env = framework.env
    front, first = await asyncio.gather(
        cluster.start("front", role="front", lease_seconds=LEASE, sweep_interval=0.3, env=env),
        cluster.start("worker-1", role="worker", hang=120, lease_seconds=LEASE, env=env),
    )
    card = await start(cluster, front.url, framework)
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: executions(cluster.effects), timeout=30)
    first.kill()
    second = await cluster.start(
        "worker-2", role="worker", lease_seconds=LEASE, sweep_interval=0.3, env=env
    )

    def interrupted(_: object) -> dict[str, Any] | None:
        return next((m for m in cards(sb) if "interrupted" in message_text(m).lower()), None)

    card2 = await sb.wait_for(interrupted, timeout=20)
    assert request_id(card2) != request_id(card)
    assert has_button(card2, "edit") is framework.edit
    assert len(executions(cluster.effects)) == 1  # shown to people, not re-run
    assert_clean(front, second)

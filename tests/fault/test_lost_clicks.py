"""No acknowledged click is lost (issue 22, the durable intake).

For each kind of interaction, the replica that receives it acknowledges it (HTTP 200) and is
then killed with SIGKILL (its whole process group) before it processes it: on PostgreSQL
another replica applies it exactly once, on SQLite the restarted process does. The same click
delivered twice decides once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from bot.sandbox import SlackSandbox
from store import Store
from tests.fault.agents import ANSWER, HELPER_DONE, executions
from tests.fault.cluster import Cluster, Replica
from tests.fault.slack import (
    SECRET,
    cards,
    click_payload,
    ephemeral_texts,
    form_body,
    has_button,
    post,
    signed_headers,
    thread_text,
)
from tests.helpers.views import filled_views
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow]

LEASE = 2.0
SWEEP = 0.3
ACTOR = "U_APPROVER"
CHANNEL = "C_GENERAL"


@dataclass(frozen=True)
class Kind:
    """One kind of interaction: the run it needs, what the person does, the `Service` method
    it calls after the ack (where the replica dies), and what must be true afterwards."""

    command: str
    button: str
    method: str
    values: dict[str, str] | None = None
    """A form's values (the button opens it); None: the button is the interaction."""
    final: str = ANSWER
    reply: str | None = None
    """A thread reply is the interaction (not the button)."""


KINDS = {
    "approve": Kind("ops deploy v2 to staging", "approve", "decide"),
    "reject_with_reason": Kind(
        "ops deploy v2 to staging", "reject", "decide", {"reason": "freeze until Monday"}
    ),
    "edit": Kind("ops deploy v2 to staging", "edit", "decide", {"version": "v3"}),
    "answer": Kind(
        "helper a question for you", "answer", "decide", {"answer": "eu-west-1"}, HELPER_DONE
    ),
    "review": Kind(
        "helper draft the refund reply", "review", "decide", {"input": "send it"}, HELPER_DONE
    ),
    "cancel": Kind("ops deploy v2 to staging", "cancel", "cancel", final=""),
    "thread_reply": Kind(
        "helper a question for you", "answer", "thread_reply", final=HELPER_DONE, reply="eu-west-1"
    ),
}


@asynccontextmanager
async def open_store(url: str) -> AsyncIterator[Store]:
    s = Store(url, replica_id="observer")
    try:
        yield s
    finally:
        await s.close()


async def start_run(sb: SlackSandbox, via: Replica, command: str, button: str) -> dict[str, Any]:
    """The command delivered to `via`; returns the card offering `button` (or, for "cancel",
    the run's root message, which offers it once the card is up)."""
    sb.bot_url = via.url
    delivery = await sb.slash_command("U_REQUESTER", command)
    assert delivery.ok, delivery.summary()
    if button == "cancel":
        await sb.wait_for(lambda s: cards(s), timeout=20)
        root = sb.messages(CHANNEL)[-1]
        assert has_button(root, "cancel"), root
        return root
    shown = await sb.wait_for(
        lambda s: [m for m in thread_messages(s) if has_button(m, button)], timeout=20
    )
    return shown[0]


def thread_messages(sb: SlackSandbox) -> list[dict[str, Any]]:
    roots = sb.messages(CHANNEL)
    return sb.thread(CHANNEL, roots[-1]["ts"]) if roots else []


async def interact(
    sb: SlackSandbox, kind: Kind, message: dict[str, Any], healthy: Replica, dying: Replica
) -> int:
    """The person's interaction, delivered to `dying` (a form is opened through `healthy`:
    opening it changes nothing). Returns the HTTP status the interaction got."""
    if kind.reply is not None:
        sb.bot_url = dying.url
        root = sb.messages(CHANNEL)[-1]
        delivery = await sb.post_message(ACTOR, kind.reply, CHANNEL, thread_ts=root["ts"])
        return delivery.status
    if kind.values is None:
        sb.bot_url = dying.url
        return (await sb.click(ACTOR, CHANNEL, message["ts"], kind.button)).status
    sb.bot_url = healthy.url
    await sb.click(ACTOR, CHANNEL, message["ts"], kind.button)
    view = (await sb.wait_for(lambda s: filled_views(s, ACTOR), timeout=20))[-1]
    sb.bot_url = dying.url
    return (await sb.submit_view(ACTOR, view["id"], kind.values)).status


async def applied_once(cluster: Cluster, store: Store, kind: Kind) -> None:
    """The interaction took effect exactly once, and the person was told nothing more."""
    sb = cluster.sandbox
    if kind.final:
        await sb.wait_for(lambda s: kind.final in thread_text(s), timeout=30)

    async def ended() -> Any:
        runs = await store.runs.list()
        done = [r for r in runs if r.status in ("completed", "cancelled")]
        return runs if len(done) == len(runs) == 1 else None

    runs = await eventually(
        ended, timeout=30, interval=0.2, what="the run to end", detail=cluster.logs
    )
    trail = await store.audit.trail(runs[0].id)
    if kind.method == "cancel":
        assert runs[0].status == "cancelled"
        assert [e.outcome for e in trail if e.action == "cancel"] == ["ok"], trail
    else:
        decisions = [e for e in trail if e.action == "decide"]
        assert [(e.actor, e.outcome) for e in decisions] == [(ACTOR, "won")], decisions
    effects = executions(cluster.effects)
    if kind.button == "approve":
        assert [e["version"] for e in effects] == ["v2"]
    elif kind.button == "edit":
        assert [e["version"] for e in effects] == ["v3"]
    else:
        assert effects == []
    assert ephemeral_texts(sb, ACTOR) == []


async def killed_after_ack(replica: Replica) -> None:
    await eventually(
        lambda: replica.proc.poll() is not None,
        timeout=10,
        what=f"{replica.name} to die",
        detail=replica.log,
    )
    assert replica.proc.returncode == -9
    assert "event=fault_injected" in replica.log()


async def restarted(cluster: Cluster) -> Replica:
    """replica-a started again after its death, under the same replica id (SQLite)."""
    return await cluster.start(
        "replica-a-restarted",
        lease_seconds=LEASE,
        sweep_interval=SWEEP,
        env={"SAYSO_REPLICA_ID": "replica-a"},
    )


def assert_replayed(replica: Replica) -> None:
    log = replica.log()
    assert "event=intake_replayed" in log, log[-4000:]
    assert "Traceback" not in log and "level=ERROR" not in log, log[-8000:]


@pytest.mark.postgres
@pytest.mark.parametrize("name", list(KINDS))
async def test_a_click_acked_by_a_killed_replica_is_applied_once_by_another(
    cluster: Cluster, name: str
) -> None:
    kind = KINDS[name]
    sb = cluster.sandbox
    a, b = await asyncio.gather(
        cluster.start("replica-a", die_before=kind.method, lease_seconds=LEASE),
        cluster.start("replica-b", lease_seconds=LEASE, sweep_interval=SWEEP),
    )
    message = await start_run(sb, b, kind.command, kind.button)
    assert await interact(sb, kind, message, healthy=b, dying=a) == 200
    await killed_after_ack(a)
    async with open_store(cluster.db_url) as store:
        await applied_once(cluster, store, kind)
    assert_replayed(b)


@pytest.mark.parametrize("name", ["approve", "review", "thread_reply"])
async def test_on_sqlite_the_restarted_process_applies_a_click_it_acked(
    sqlite_cluster: Cluster, name: str
) -> None:
    kind = KINDS[name]
    cluster, sb = sqlite_cluster, sqlite_cluster.sandbox
    a = await cluster.start("replica-a", die_before=kind.method, lease_seconds=LEASE)
    message = await start_run(sb, a, kind.command, kind.button)
    if kind.values is not None:  # the form opens on the same (only) process
        sb.bot_url = a.url
    assert await interact(sb, kind, message, healthy=a, dying=a) == 200
    await killed_after_ack(a)
    again = await restarted(cluster)
    async with open_store(cluster.db_url) as store:
        await applied_once(cluster, store, kind)
    assert_replayed(again)


@pytest.mark.postgres
async def test_the_same_click_delivered_to_two_replicas_decides_once(cluster: Cluster) -> None:
    sb = cluster.sandbox
    a, b = await asyncio.gather(cluster.start("replica-a"), cluster.start("replica-b"))
    card = await start_run(sb, b, "ops deploy v2 to staging", "approve")
    body = form_body(click_payload(sb, ACTOR, CHANNEL, card["ts"], "approve"))
    async with aiohttp.ClientSession() as session:
        answers = await asyncio.gather(
            *(post(session, r.url, body, signed_headers(SECRET, body)) for r in (a, b))
        )
    assert [status for status, _ in answers] == [200, 200], answers
    async with open_store(cluster.db_url) as store:
        await applied_once(cluster, store, KINDS["approve"])
        runs = await store.runs.list()
        trail = await store.audit.trail(runs[0].id)
        assert sum(1 for e in trail if e.action == "decide") == 1  # the copy never got there
    logs = a.log() + b.log()
    assert "event=duplicate_interaction" in logs


async def started_once(cluster: Cluster) -> None:
    """The command started exactly one run, whose card is shown once."""
    sb = cluster.sandbox
    shown = await sb.wait_for(lambda s: cards(s), timeout=30)
    assert len(shown) == 1
    async with open_store(cluster.db_url) as store:
        assert len(await store.runs.list()) == 1
    roots = [m for m in sb.messages(CHANNEL) if m.get("bot_id")]
    assert len(roots) == 1  # one root message: the run started once


ASKED = {
    "command": lambda sb: sb.slash_command("U_REQUESTER", "ops deploy v2 to staging"),
    "mention": lambda sb: sb.post_message("U_REQUESTER", "<@U_SAYSO> ops deploy v2 to staging"),
}


@pytest.mark.postgres
@pytest.mark.parametrize("how", list(ASKED))
async def test_a_command_acked_by_a_killed_replica_starts_once_on_another(
    cluster: Cluster, how: str
) -> None:
    sb = cluster.sandbox
    a, b = await asyncio.gather(
        cluster.start("replica-a", die_before="start", lease_seconds=LEASE),
        cluster.start("replica-b", lease_seconds=LEASE, sweep_interval=SWEEP),
    )
    sb.bot_url = a.url
    assert (await ASKED[how](sb)).status == 200
    await killed_after_ack(a)
    await started_once(cluster)
    assert_replayed(b)


async def test_on_sqlite_the_restarted_process_starts_a_command_it_acked(
    sqlite_cluster: Cluster,
) -> None:
    cluster, sb = sqlite_cluster, sqlite_cluster.sandbox
    a = await cluster.start("replica-a", die_before="start", lease_seconds=LEASE)
    sb.bot_url = a.url
    assert (await ASKED["command"](sb)).status == 200
    await killed_after_ack(a)
    again = await restarted(cluster)
    await started_once(cluster)
    assert_replayed(again)

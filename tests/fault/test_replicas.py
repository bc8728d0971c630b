"""Two real replicas (subprocesses) on one PostgreSQL database, no balancer in front.

Clicks are built from the sandbox and posted, signed as Slack signs them, to both replicas in
turn. Tool bodies append a line to a shared file per execution, so the test counts side
effects across processes, including processes it killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.slack.outbox import SENDER_LEASE
from store import Store
from tests.fault.agents import ANSWER, executions
from tests.fault.cluster import Cluster, Replica
from tests.fault.slack import (
    SECRET,
    cards,
    click_payload,
    clicker,
    ephemeral_texts,
    form_body,
    message_text,
    post,
    request_id,
    signed_headers,
    submission_payload,
    thread,
    thread_text,
)
from tests.helpers.views import filled_views
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE = 2.0
SWEEP = 0.3


@pytest.fixture
async def store(cluster: Cluster) -> AsyncIterator[Store]:
    """The test's own view of the shared database (read-only use)."""
    s = Store(cluster.db_url, replica_id="observer")
    try:
        yield s
    finally:
        await s.close()


async def start_run(cluster: Cluster, via: Replica) -> dict:
    """`/sayso ops deploy v2 to staging` delivered to `via`; returns the deploy card."""
    cluster.sandbox.bot_url = via.url
    delivery = await cluster.sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    assert delivery.ok, delivery.summary()
    await cluster.sandbox.wait_for(lambda sb: cards(sb), timeout=20)
    return cards(cluster.sandbox)[0]


async def wait_completed(cluster: Cluster, store: Store, within: float = 20) -> str:
    async def completed() -> str | None:
        runs = await store.runs.list()
        return runs[0].id if runs and runs[0].status == "completed" else None

    run_id: str = await eventually(
        completed, timeout=within, interval=0.1, what="the run to complete", detail=cluster.logs
    )
    return run_id


async def wait_exit(replica: Replica, within: float = 10) -> int:
    await eventually(
        lambda: replica.proc.poll() is not None,
        timeout=within,
        what=f"{replica.name} to exit",
        detail=replica.log,
    )
    return replica.proc.returncode


def modal_error_text(answer: str) -> str:
    """The errors of a `response_action: errors` answer to a view submission, as one text."""
    try:
        body = json.loads(answer)
    except ValueError:
        return ""
    if not isinstance(body, dict) or body.get("response_action") != "errors":
        return ""
    return " ".join(str(v) for v in (body.get("errors") or {}).values())


def assert_clean(*replicas: Replica) -> None:
    """No unhandled exception in a surviving replica's log."""
    for r in replicas:
        log = r.log()
        assert "Traceback" not in log, f"{r.name} logged a traceback:\n{log[-8000:]}"
        assert "level=ERROR" not in log, f"{r.name} logged an error:\n{log[-8000:]}"


async def test_100_concurrent_approves_over_two_replicas_run_the_tool_once(
    cluster: Cluster, store: Store
) -> None:
    sb = cluster.sandbox
    a, b = await asyncio.gather(cluster.start("replica-a"), cluster.start("replica-b"))
    card = await start_run(cluster, b)
    rid = request_id(card)
    users = [clicker(i) for i in range(100)]
    bodies = [form_body(click_payload(sb, u, "C_GENERAL", card["ts"], "approve")) for u in users]
    targets = [(a, b)[i % 2] for i in range(len(users))]
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        answers = await asyncio.gather(
            *(
                post(session, r.url, body, signed_headers(SECRET, body))
                for r, body in zip(targets, bodies, strict=True)
            )
        )
    assert [status for status, _ in answers] == [200] * 100, answers
    await sb.wait_for(lambda _: ANSWER in thread_text(sb), timeout=20)
    request = await store.requests.get(rid)
    assert request is not None and request.state.status == "approved"
    winner = request.state.decided_by
    assert winner in users
    losers = [u for u in users if u != winner]
    await sb.wait_for(lambda _: all(ephemeral_texts(sb, u) for u in losers), timeout=20)
    for u in losers:
        texts = ephemeral_texts(sb, u)
        assert len(texts) == 1, (u, texts)
        assert f"already approved by <@{winner}>" in texts[0], (u, texts)
    assert ephemeral_texts(sb, winner) == []
    run_id = await wait_completed(cluster, store)
    effects = executions(cluster.effects)
    assert len(effects) == 1, effects
    assert effects[0]["key"].startswith(run_id)
    trail = [e for e in await store.audit.trail(run_id) if e.action == "decide"]
    assert len(trail) == 100
    assert sorted(e.outcome for e in trail) == ["lost"] * 99 + ["won"]
    assert next(e.actor for e in trail if e.outcome == "won") == winner
    assert_clean(a, b)


async def test_50_approves_race_50_rejects_one_outcome(cluster: Cluster, store: Store) -> None:
    sb = cluster.sandbox
    a, b = await asyncio.gather(cluster.start("replica-a"), cluster.start("replica-b"))
    card = await start_run(cluster, a)
    rid = request_id(card)
    approvers = [clicker(i) for i in range(50)]
    rejecters = [clicker(i) for i in range(50, 100)]
    # Each rejecter opens the Reject modal first (Slack's flow), then all submit at once.
    for i, user in enumerate(rejecters):
        sb.bot_url = (a, b)[i % 2].url
        delivery = await sb.click(user, "C_GENERAL", card["ts"], "reject")
        assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: all(filled_views(sb, u) for u in rejecters), timeout=20)
    views = {u: filled_views(sb, u)[-1] for u in rejecters}
    assert {v["callback_id"] for v in views.values()} == {"sayso_reject"}
    bodies: list[str] = []
    for approver, rejecter in zip(approvers, rejecters, strict=True):
        bodies.append(form_body(click_payload(sb, approver, "C_GENERAL", card["ts"], "approve")))
        values = {"reason": f"not now ({rejecter})"}
        bodies.append(form_body(submission_payload(sb, rejecter, views[rejecter]["id"], values)))
    # pair k: the approve goes to one replica, the reject to the other, alternating
    targets = [((a, b), (b, a))[(i // 2) % 2][i % 2] for i in range(100)]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        answers = await asyncio.gather(
            *(
                post(session, r.url, body, signed_headers(SECRET, body))
                for r, body in zip(targets, bodies, strict=True)
            )
        )
    assert [status for status, _ in answers] == [200] * 100, answers
    run_id = await wait_completed(cluster, store)
    request = await store.requests.get(rid)
    assert request is not None and request.state.status in ("approved", "rejected")
    winner = request.state.decided_by
    effects = executions(cluster.effects)
    if request.state.status == "approved":
        assert winner in approvers
        assert len(effects) == 1, effects
    else:
        assert winner in rejecters
        assert request.state.reason == f"not now ({winner})"
        assert effects == []
    # Every loser is told who won: an ephemeral, or (a modal submission answered after the
    # decision) an error shown in the modal itself.
    told = f"already {request.state.status} by <@{winner}>"
    modal_errors = {
        rejecter: modal_error_text(text)
        for rejecter, (_, text) in zip(rejecters, answers[1::2], strict=True)
    }

    def knows(user: str) -> bool:
        texts = [*ephemeral_texts(sb, user), modal_errors.get(user, "")]
        return any(told in t for t in texts)

    losers = [u for u in approvers + rejecters if u != winner]
    await sb.wait_for(lambda _: all(knows(u) for u in losers), timeout=20)
    trail = [e for e in await store.audit.trail(run_id) if e.action == "decide"]
    assert sorted(e.outcome for e in trail) == ["lost"] * 99 + ["won"]
    final = sb.message("C_GENERAL", card["ts"])
    assert final is not None and not cards(sb), "the card must no longer offer buttons"
    assert f"<@{winner}>" in message_text(final)
    assert_clean(a, b)


async def test_sigkill_inside_a_tool_body_is_recovered_by_the_other_replica(
    cluster: Cluster, store: Store
) -> None:
    sb = cluster.sandbox
    a = await cluster.start("replica-a", hang=120, lease_seconds=LEASE, sweep_interval=SWEEP)
    card = await start_run(cluster, a)
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    # The body recorded its side effect in replica A and now sleeps: kill A right there.
    await sb.wait_for(lambda _: executions(cluster.effects), timeout=20)
    assert executions(cluster.effects)[0]["pid"] == a.driver.pid
    # B joins only now: had it been sweeping during the click, it could have taken the
    # ready run before A claimed it (harmless, but then nobody would hang to be killed).
    b = await cluster.start("replica-b", lease_seconds=LEASE, sweep_interval=SWEEP)
    killed_at = time.monotonic()
    a.kill()
    assert a.proc.returncode == -9

    def interrupted(_: object) -> dict | None:
        return next((m for m in cards(sb) if "interrupted" in message_text(m).lower()), None)

    card2 = await sb.wait_for(interrupted, timeout=15)
    recovered_after = time.monotonic() - killed_at
    # A's lease lapses at most LEASE s after its last renewal; B notices at its next sweep.
    # The new card is an outbox row: if A was the sending dispatcher, its sender lease
    # lapses too (B bids again within a second).
    assert recovered_after < LEASE + SWEEP + 3 + SENDER_LEASE, recovered_after
    assert request_id(card2) != request_id(card)
    assert len(executions(cluster.effects)) == 1  # shown to people, not re-run
    runs = await store.runs.list()
    assert [r.status for r in runs] == ["waiting_for_human"]
    # Nothing is lost: approving the interrupted call runs it (in B) and the run completes.
    sb.bot_url = b.url
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card2["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda _: ANSWER in thread_text(sb), timeout=20)
    run_id = await wait_completed(cluster, store)
    effects = executions(cluster.effects)
    assert [e["pid"] for e in effects] == [a.driver.pid, b.driver.pid]
    assert len({e["key"] for e in effects}) == 1  # same idempotency key: downstream can dedupe
    assert effects[0]["key"].startswith(run_id)
    trail = await store.audit.trail(run_id)
    assert sum(1 for e in trail if e.action == "decide" and e.outcome == "won") == 2
    assert_clean(b)
    print(f"recovered {recovered_after:.2f}s after SIGKILL (lease {LEASE}s, sweep {SWEEP}s)")


async def test_sigkill_between_decision_and_continuation(cluster: Cluster, store: Store) -> None:
    sb = cluster.sandbox
    a, b = await asyncio.gather(
        cluster.start("replica-a", die_after_decision=True),
        cluster.start("replica-b", lease_seconds=LEASE, sweep_interval=SWEEP),
    )
    card = await start_run(cluster, b)
    rid = request_id(card)
    body = form_body(click_payload(sb, "U_APPROVER", "C_GENERAL", card["ts"], "approve"))
    async with aiohttp.ClientSession() as session:
        await post(session, a.url, body, signed_headers(SECRET, body))  # A may die mid-answer
    assert await wait_exit(a) == -9
    assert "event=fault_injected" in a.log()
    request = await store.requests.get(rid)
    assert request is not None and request.state.status == "approved"  # recorded before A died
    await sb.wait_for(lambda _: ANSWER in thread_text(sb), timeout=20)
    await wait_completed(cluster, store)
    effects = executions(cluster.effects)
    assert [e["pid"] for e in effects] == [b.driver.pid]
    assert sum(1 for m in thread(sb) if ANSWER in message_text(m)) == 1
    assert_clean(b)

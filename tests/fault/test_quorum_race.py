"""Quorum on two replicas sharing PostgreSQL: final approvals racing continue the run once."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from tests.fault.agents import ANSWER, executions
from tests.fault.cluster import Cluster
from tests.fault.slack import (
    SECRET,
    cards,
    click_payload,
    clicker,
    form_body,
    post,
    request_id,
    signed_headers,
    thread_text,
)
from tests.fault.test_replicas import assert_clean, store, wait_completed  # noqa: F401
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.mark.parametrize("one_before", [True, False], ids=["one-then-20", "21-at-once"])
async def test_approvals_racing_on_two_replicas_continue_the_run_once(
    cluster: Cluster,
    store,  # noqa: F811
    one_before: bool,
) -> None:
    """With one approval counted, 20 final approvals race; or 21 approvals race from none
    (none may be lost: two first approvals on two replicas must still meet the quorum)."""
    sb = cluster.sandbox
    a, b = await asyncio.gather(
        cluster.start("replica-a", min_approvals=2), cluster.start("replica-b", min_approvals=2)
    )
    sb.bot_url = a.url
    delivery = await sb.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda s: cards(s), timeout=20)
    card = cards(sb)[0]
    rid = request_id(card)
    # a split replica's worker claimed the new run too: count only the continuation's claims
    claimed_before = sum(r.log().count("event=run_claimed") for r in (a, b))
    if one_before:
        first = await sb.click(clicker(0), "C_GENERAL", card["ts"], "approve")
        assert first.ok, first.summary()

        async def one_approval() -> bool:
            request = await store.requests.get(rid)
            return request is not None and request.state.approvals == (clicker(0),)

        await eventually(one_approval, timeout=10, what="the first approval to count")
    finals = [clicker(i) for i in range(1 if one_before else 0, 21)]
    bodies = [form_body(click_payload(sb, u, "C_GENERAL", card["ts"], "approve")) for u in finals]
    targets = [(a, b)[i % 2] for i in range(len(finals))]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        answers = await asyncio.gather(
            *(
                post(session, r.url, body, signed_headers(SECRET, body))
                for r, body in zip(targets, bodies, strict=True)
            )
        )
    assert [status for status, _ in answers] == [200] * len(finals), answers
    await sb.wait_for(lambda _: ANSWER in thread_text(sb), timeout=20)
    run_id = await wait_completed(cluster, store)
    request = await store.requests.get(rid)
    assert request is not None and request.state.status == "approved"
    assert request.state.decided_by in finals
    assert len(request.state.approvals) == 2
    assert request.state.approvals[-1] == request.state.decided_by
    assert len(executions(cluster.effects)) == 1

    # losing clicks are audited after their ack, possibly after the run finished: wait for all
    async def every_click_audited() -> list[str] | None:
        trail = [e for e in await store.audit.trail(run_id) if e.action == "decide"]
        return [e.outcome for e in trail] if len(trail) >= 21 else None

    outcomes = await eventually(every_click_audited, timeout=10, what="every click's audit event")
    assert sorted(outcomes) == ["counted"] + ["lost"] * 19 + ["won"]
    claims = sum(r.log().count("event=run_claimed") for r in (a, b)) - claimed_before
    assert claims == 1, cluster.logs()
    assert_clean(a, b)


async def test_escalation_fires_once_across_two_replicas(
    cluster: Cluster,
    store,  # noqa: F811
) -> None:
    sb = cluster.sandbox
    a, b = await asyncio.gather(
        cluster.start("replica-a", escalate_after=1, sweep_interval=0.1),
        cluster.start("replica-b", escalate_after=1, sweep_interval=0.1),
    )
    sb.bot_url = a.url
    delivery = await sb.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    assert delivery.ok, delivery.summary()
    await sb.wait_for(lambda s: cards(s), timeout=20)
    rid = request_id(cards(sb)[0])
    await sb.wait_for(lambda _: "Escalated:" in thread_text(sb), timeout=20)
    await asyncio.sleep(1.0)  # both sweeps ran several times since
    assert thread_text(sb).count("has waited too long") == 1
    request = await store.requests.get(rid)
    assert request is not None and request.state.escalated_at is not None
    trail = await store.audit.trail(request.spec.run_id)
    assert [e.outcome for e in trail if e.action == "escalate"] == ["escalated"]
    assert sum(r.log().count("event=request_escalated") for r in (a, b)) == 1
    assert_clean(a, b)

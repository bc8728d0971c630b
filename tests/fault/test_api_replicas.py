"""The approval API across two real replicas on PostgreSQL: a decision taken on one replica
wakes a long-poll waiting on the other within a second (LISTEN/NOTIFY, not the sweep)."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from bot.service.api_requests import new_key_secrets
from store import Store
from store import api as api_ops
from tests.fault.cluster import Cluster, Replica
from tests.fault.slack import SECRET, click_payload, form_body, post, signed_headers

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


async def _two_replicas_and_a_key(
    cluster: Cluster, per_minute: int | None = None
) -> tuple[Replica, Replica, str]:
    """Two replicas that sweep every 30 s (only a notification reaches the other in time) and
    an API key for C_GENERAL."""
    a, b = await asyncio.gather(
        cluster.start("replica-a", sweep_interval=30), cluster.start("replica-b", sweep_interval=30)
    )
    store = Store(cluster.db_url, replica_id="observer")
    try:
        token, _ = new_key_secrets()
        assert await api_ops.create_key(store.db, "ci", token, "whsec_x", ["C_GENERAL"])
        if per_minute is not None:
            assert await api_ops.set_key_quota(store.db, "ci", per_minute)
    finally:
        await store.close()
    return a, b, token


async def test_a_decision_on_one_replica_wakes_a_long_poll_on_the_other(cluster: Cluster) -> None:
    a, b, token = await _two_replicas_and_a_key(cluster)
    auth = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=auth) as session:
        body = {"title": "Deploy", "tool": "deploy", "channel": "C_GENERAL"}
        async with session.post(f"{a.base}/v1/requests", json=body) as resp:
            assert resp.status == 201, await resp.text()
            created = await resp.json()
        # 201 means the request is durable; its card reaches Slack through the outbox after
        message_ts = created.get("message_ts")
        deadline = time.monotonic() + 15
        while not message_ts and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            async with session.get(f"{a.base}/v1/requests/{created['id']}") as got:
                message_ts = (await got.json()).get("message_ts")
        assert message_ts, f"the card was not posted\n{cluster.logs()}"
        # let the poll reach replica b and register before the click
        poll = asyncio.create_task(
            session.get(f"{b.base}/v1/requests/{created['id']}", params={"wait": "30"})
        )
        await asyncio.sleep(1.0)
        assert not poll.done()
        click = form_body(
            click_payload(cluster.sandbox, "U_APPROVER", "C_GENERAL", message_ts, "approve")
        )
        clicked = time.monotonic()
        status, _ = await post(session, a.url, click, signed_headers(SECRET, click))
        assert status == 200
        resp = await asyncio.wait_for(poll, 5)
        woken_after = time.monotonic() - clicked
        state = await resp.json()
    assert state["status"] == "approved" and state["decision"]["decided_by"] == "U_APPROVER"
    assert woken_after < 1.0, f"{woken_after:.2f}s\n{cluster.logs()}"


async def test_two_replicas_share_a_keys_quota(cluster: Cluster) -> None:
    a, b, token = await _two_replicas_and_a_key(cluster, per_minute=10)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session:
        statuses = []
        for i in range(12):  # alternately on each replica: one quota, not one each
            async with session.get(f"{(a, b)[i % 2].base}/v1/requests/nope") as resp:
                statuses.append(resp.status)
    assert statuses[:10] == [404] * 10 and statuses[10:] == [429, 429], statuses

"""SAYSO_AUDIT_WEBHOOK: each audit event reaches the SIEM, signed like the approval API's
webhooks, in order, at least once: a receiver that fails first gets it on a retry made from
the database, by another replica after a restart too."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from aiohttp import web

from bot.api.webhooks import sign
from bot.config import load_settings
from bot.ops.audit_webhook import AuditTasks, AuditWebhook
from bot.serve import free_port
from store import Store
from store import audit as audit_ops
from store.schema import audit_webhook_cursor

SECRET = "siem-secret"


@dataclass
class Receiver:
    url: str
    fail_first: int = 2
    received: list[dict[str, object]] = field(default_factory=list)
    attempts: int = 0


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    port = free_port()
    rec = Receiver(f"http://127.0.0.1:{port}/siem")

    async def siem(request: web.Request) -> web.Response:
        rec.attempts += 1
        body = await request.read()
        timestamp = request.headers["X-Sayso-Timestamp"]
        assert request.headers["X-Sayso-Signature"] == sign(SECRET, timestamp, body)
        if rec.fail_first > 0:
            rec.fail_first -= 1
            return web.Response(status=503)
        event = json.loads(body)
        assert request.headers["X-Sayso-Delivery"] == f"audit-{event['id']}"
        rec.received.append(event)
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/siem", siem)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield rec
    await runner.cleanup()


async def _until(predicate, limit: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + limit
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_audit_webhook_is_retried_until_delivered(store: Store, receiver: Receiver) -> None:
    await store.audit.record(
        actor="U0", action="before", outcome="ok"
    )  # before the webhook: not sent
    sender = AuditWebhook(
        store.audit, receiver.url, SECRET, "replica-a", interval=0.05, backoff=[0.2]
    )
    async with httpx.AsyncClient() as client:
        await sender.run_once(client)  # the first claim starts the stream at the head
        for i in range(3):
            await store.audit.record(actor=f"U{i}", action="decide", outcome="won", detail=f"n={i}")
        for _ in range(3):  # two attempts fail (503), each time the cursor stays put
            await sender.run_once(client)
            await asyncio.sleep(0.25)
        assert receiver.attempts >= 3
    # the replica died; another one holds the lease once it lapses, and finishes the job
    async with store.db.write() as conn:
        await conn.execute(audit_webhook_cursor.update().values(lease_expires_at=None))
    other = AuditWebhook(
        store.audit, receiver.url, SECRET, "replica-b", interval=0.05, backoff=[0.2]
    )
    task = asyncio.create_task(other.run_forever())
    try:
        await _until(lambda: len(receiver.received) >= 3)
    finally:
        task.cancel()
    assert [e["detail"] for e in receiver.received] == ["n=0", "n=1", "n=2"]
    assert [e["action"] for e in receiver.received] == ["decide"] * 3
    ids = [e["id"] for e in receiver.received]
    assert ids == sorted(ids)
    assert receiver.received[1]["prev_hash"] == receiver.received[0]["hash"]
    assert await audit_ops.webhook_delivered_id(store.db) == ids[-1]


async def test_the_audit_tasks_of_sayso_run_stream_events(
    store: Store, db_url: str, receiver: Receiver
) -> None:
    receiver.fail_first = 1
    settings = load_settings(
        database_url=db_url,
        sayso_audit_webhook=receiver.url,
        sayso_audit_webhook_secret=SECRET,
        sayso_audit_retention="365d",
    )
    tasks = AuditTasks(settings, owner="replica-a")
    await tasks.start()
    try:
        await asyncio.sleep(0.3)  # the sender claimed the cursor at the head
        await store.audit.record(actor="U1", action="decide", outcome="won")
        await _until(lambda: len(receiver.received) == 1)
    finally:
        await tasks.stop()
    assert receiver.attempts == 2

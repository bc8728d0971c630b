"""Webhooks of settled API requests: signed, at least once, retried from the database with the
same delivery id, and listed by `sayso runs show`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from aiohttp import web

from bot.client import verify_webhook
from bot.runs_report import show_run
from bot.serve import free_port
from tests.e2e.api_flows import create, make_key
from tests.e2e.harness import Harness
from tests.helpers.views import filled_views
from tests.helpers.waiting import eventually


@dataclass
class Receiver:
    """A caller's webhook endpoint on 127.0.0.1 that fails its first `failures` deliveries."""

    failures: int = 0
    delay: float = 0.0
    """Seconds the endpoint takes to answer."""
    received: list[tuple[dict[str, str], bytes, int]] = field(default_factory=list)
    port: int = field(default_factory=free_port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def url_at(self, host: str) -> str:
        return f"http://{host}:{self.port}/hook"

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        await asyncio.sleep(self.delay)
        status = 500 if len(self.received) < self.failures else 200
        self.received.append((dict(request.headers), body, status))
        return web.Response(status=status)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver()
    app = web.Application()
    app.router.add_post("/hook", r.handle)
    app.router.add_post("/h", r.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", r.port).start()
    try:
        yield r
    finally:
        await runner.cleanup()


@pytest.fixture
async def harness(harness: Harness) -> Harness:
    """The bot with 127.0.0.1 (any port) on SAYSO_CALLBACK_HOSTS: the receivers here listen on
    loopback, which webhooks reach only when an entry names it (issue 21, finding 11)."""
    await harness.stop_bot()
    harness.settings_overrides = {"sayso_callback_hosts": "127.0.0.1"}
    await harness.start_bot()
    return harness


async def test_a_signed_webhook_follows_the_decision(harness: Harness, receiver: Receiver) -> None:
    h = harness
    token, secret = await make_key(h)
    created = (
        await create(h, token, tool="deploy", arguments={"env": "prod"}, callback_url=receiver.url)
    ).json()
    await h.sandbox.click("U_APPROVER", "C_GENERAL", created["message_ts"], "approve")
    await h.sandbox.wait_for(lambda sb: receiver.received, timeout=5)
    headers, body, _ = receiver.received[0]
    assert verify_webhook(secret, headers, body)
    assert not verify_webhook("whsec_other", headers, body)
    assert not verify_webhook(secret, headers, body.replace(b"prod", b"dev!"))
    old = {**headers, "X-Sayso-Timestamp": str(int(headers["X-Sayso-Timestamp"]) - 301)}
    assert not verify_webhook(secret, old, body)
    state = json.loads(body)
    assert state["id"] == created["id"] and state["status"] == "approved"
    assert state["decision"]["decided_by"] == "U_APPROVER"
    async with httpx.AsyncClient(base_url=h.url) as client:
        got = await client.get(
            f"/v1/requests/{created['id']}", headers={"Authorization": f"Bearer {token}"}
        )
    assert got.json() == state  # the same JSON as GET


async def test_failing_endpoint_gets_retries_with_the_same_delivery_id(
    harness: Harness, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    h = harness
    assert h.bot is not None and h.bot.api is not None
    h.bot.api.webhooks.backoff = (0.3,)  # the schedule, shortened (5 s, 30 s, ... in service)
    receiver.failures = 2
    token, secret = await make_key(h)
    created = (await create(h, token, tool="deploy", callback_url=receiver.url)).json()
    await h.sandbox.click("U_APPROVER", "C_GENERAL", created["message_ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "no"})
    await h.sandbox.wait_for(lambda sb: len(receiver.received) >= 3, timeout=10)
    await asyncio.sleep(1.0)  # several retry sweeps: none delivers again
    statuses = [status for _, _, status in receiver.received]
    assert statuses == [500, 500, 200]
    ids = {headers["X-Sayso-Delivery"] for headers, _, _ in receiver.received}
    assert len(ids) == 1
    assert all(verify_webhook(secret, hd, body) for hd, body, _ in receiver.received)
    # `sayso runs show` lists the attempts
    runs = await h.bot.store.runs.list()
    assert await show_run(h.bot.store, runs[0].id) == 0
    shown = capsys.readouterr().out
    assert shown.count("webhook") >= 3 and "delivered" in shown and "HTTP 500" in shown


async def test_expiry_and_cancel_are_delivered_too(harness: Harness, receiver: Receiver) -> None:
    h = harness
    token, _ = await make_key(h)
    await create(h, token, tool="deploy", expires_in=0.3, callback_url=receiver.url)
    await h.sandbox.wait_for(lambda sb: len(receiver.received) == 1, timeout=10)
    created = (await create(h, token, tool="deploy", callback_url=receiver.url)).json()
    async with httpx.AsyncClient(base_url=h.url) as client:
        await client.post(
            f"/v1/requests/{created['id']}/cancel", headers={"Authorization": f"Bearer {token}"}
        )
    await h.sandbox.wait_for(lambda sb: len(receiver.received) == 2, timeout=10)
    assert [json.loads(b)["status"] for _, b, _ in receiver.received] == ["expired", "cancelled"]


async def test_a_callback_host_off_the_allowlist_is_refused(
    harness: Harness, receiver: Receiver
) -> None:
    """SSRF: with SAYSO_CALLBACK_HOSTS set, a request naming another host (the cloud metadata
    address here) is refused with 422 and nothing is created."""
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_callback_hosts": f"hooks.example.com,127.0.0.1:{receiver.port}"}
    await h.start_bot()
    token, _ = await make_key(h)
    for url in (
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:1/hook",  # the allowed host, on another port
        "http://hooks.example.com.evil.test/hook",
    ):
        refused = await create(h, token, tool="deploy", callback_url=url)
        assert refused.status_code == 422, url
        assert "callback_url" in refused.json()["error"]["message"]
    assert h.sandbox.messages("C_GENERAL") == [] and await h.bot.store.runs.list() == []
    allowed = await create(h, token, tool="deploy", callback_url=receiver.url)
    assert allowed.status_code == 201, allowed.text
    await h.sandbox.click("U_APPROVER", "C_GENERAL", allowed.json()["message_ts"], "approve")
    await h.sandbox.wait_for(lambda sb: receiver.received, timeout=5)


async def test_a_host_taken_off_the_allowlist_gets_no_more_deliveries(
    harness: Harness, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    h = harness
    token, _ = await make_key(h)
    created = (await create(h, token, tool="deploy", callback_url=receiver.url)).json()
    await h.stop_bot()
    h.settings_overrides = {"sayso_callback_hosts": "hooks.example.com"}
    await h.start_bot()
    await h.sandbox.click("U_APPROVER", "C_GENERAL", created["message_ts"], "approve")
    (run,) = await h.bot.store.runs.list()

    async def refusal_listed() -> bool:
        await show_run(h.bot.store, run.id)
        return "SAYSO_CALLBACK_HOSTS" in capsys.readouterr().out

    await eventually(refusal_listed, timeout=5, what="the refused delivery in `runs show`")
    assert receiver.received == []


async def test_one_endpoint_gets_its_webhooks_as_fast_as_it_answers(
    harness: Harness, receiver: Receiver
) -> None:
    """An endpoint takes a few attempts at once; a webhook settled while they are in flight
    goes as soon as one ends, not at the retry sweep's next turn (with one endpoint for all of
    an agent's requests, the sweep's pace was about four webhooks a second)."""
    h = harness
    assert h.bot is not None and h.bot.api is not None
    h.bot.api.webhooks.interval = 60.0  # the retry sweep out of the way
    receiver.delay = 0.3
    token, _ = await make_key(h)
    created = await asyncio.gather(
        *(create(h, token, tool="deploy", callback_url=receiver.url) for _ in range(8))
    )
    assert all(c.json().get("message_ts") for c in created)
    await asyncio.gather(
        *(
            h.sandbox.click("U_APPROVER", "C_GENERAL", c.json()["message_ts"], "approve")
            for c in created
        )
    )
    await h.sandbox.wait_for(lambda sb: len(receiver.received) == 8, timeout=10)
    assert {json.loads(body)["id"] for _, body, _ in receiver.received} == {
        c.json()["id"] for c in created
    }

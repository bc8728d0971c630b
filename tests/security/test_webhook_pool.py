"""Finding 10 (the pool): webhook attempts go through a bounded pool in which one endpoint
holds a few slots at most, each for at most the delivery timeout: however many callbacks of
one caller hang, another caller's webhook is delivered at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web

from bot.api import webhooks
from bot.serve import free_port
from tests.e2e.api_flows import create, make_key
from tests.e2e.harness import Harness
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.slow]

HANGING = 8  # twice the pool


class Endpoint:
    """A caller's webhook endpoint on 127.0.0.1 that answers after `delay` seconds."""

    def __init__(self, delay: float) -> None:
        self.port = free_port()
        self.delay = delay
        self.calls: list[float] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def handle(self, _request: web.Request) -> web.Response:
        self.calls.append(time.monotonic())
        await asyncio.sleep(self.delay)
        return web.Response()


async def _serve(endpoint: Endpoint) -> web.AppRunner:
    app = web.Application()
    app.router.add_post("/hook", endpoint.handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", endpoint.port).start()
    return runner


@pytest.fixture
async def endpoints() -> AsyncIterator[tuple[Endpoint, Endpoint]]:
    slow, fast = Endpoint(3600), Endpoint(0)
    runners = [await _serve(slow), await _serve(fast)]
    try:
        yield slow, fast
    finally:
        for runner in runners:
            await runner.cleanup()


async def test_a_hanging_endpoint_never_delays_another_callers_webhook(
    harness: Harness, endpoints: tuple[Endpoint, Endpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    slow, fast = endpoints
    monkeypatch.setattr(webhooks, "POOL_SIZE", 4)  # so one endpoint may hold 2 slots
    await h.stop_bot()
    h.settings_overrides = {"sayso_callback_hosts": "127.0.0.1"}
    await h.start_bot()
    slow_key, _ = await make_key(h, "slow")
    fast_key, _ = await make_key(h, "fast")
    slow_ids = []
    for _ in range(HANGING):
        r = await create(h, slow_key, tool="deploy", callback_url=slow.url)
        assert r.status_code == 201, r.text
        slow_ids.append(r.json()["id"])
    fast_id = (await create(h, fast_key, tool="deploy", callback_url=fast.url)).json()["id"]
    async with httpx.AsyncClient(base_url=h.url) as client:
        for request_id in slow_ids:  # settled: their webhooks hang (10 s timeout in service)
            r = await client.post(
                f"/v1/requests/{request_id}/cancel", headers={"Authorization": f"Bearer {slow_key}"}
            )
            assert r.status_code == 200, r.text
        await eventually(lambda: len(slow.calls) >= 2, timeout=10)
        await asyncio.sleep(1.5)  # a retry sweep or more (every second) has seen them all
        assert len(slow.calls) == 2  # the endpoint's share of the pool, no more
        settled = time.monotonic()
        r = await client.post(
            f"/v1/requests/{fast_id}/cancel", headers={"Authorization": f"Bearer {fast_key}"}
        )
        assert r.status_code == 200, r.text
    await eventually(lambda: fast.calls, timeout=10, what="the other caller's webhook")
    assert fast.calls[0] - settled < 1.0  # at once: not after the hanging ones' timeouts

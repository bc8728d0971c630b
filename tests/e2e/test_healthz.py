"""The health endpoint a load balancer or a container runtime asks."""

from __future__ import annotations

import aiohttp

from tests.e2e.harness import Harness


async def test_healthz_reports_the_database(harness: Harness) -> None:
    async with aiohttp.ClientSession() as s, s.get(f"{harness.url}/healthz") as r:
        assert r.status == 200
        assert (await r.json())["database"] == "reachable"

"""Finding 10: each key has a quota of requests per minute (default 60, set per key); over
it, 429 with Retry-After, and other keys are not affected."""

from __future__ import annotations

from tests.e2e.api_flows import http, make_key
from tests.e2e.harness import Harness


async def test_a_key_over_its_quota_gets_429(harness: Harness) -> None:
    h = harness
    busy, _ = await make_key(h, "busy", per_minute=None)  # the default quota
    calm, _ = await make_key(h, "calm", per_minute=None)
    async with http(h, busy) as client:
        statuses = [(await client.get("/v1/requests/nope")).status_code for _ in range(61)]
        assert statuses[:60] == [404] * 60 and statuses[60] == 429
        over = await client.get("/v1/requests/nope")
        assert over.status_code == 429 and 0 < int(over.headers["Retry-After"]) <= 60
        assert over.json()["error"]["code"] == "too_many_requests"
    async with http(h, calm) as client:
        assert (await client.get("/v1/requests/nope")).status_code == 404


async def test_the_quota_is_set_per_key(harness: Harness) -> None:
    h = harness
    assert h.bot is not None
    from store import api as api_ops

    token, _ = await make_key(h, "small", per_minute=None)
    assert await api_ops.set_key_quota(h.bot.store.db, "small", 3)
    async with http(h, token) as client:
        statuses = [(await client.get("/v1/requests/nope")).status_code for _ in range(4)]
    assert statuses == [404, 404, 404, 429]

"""Steps the approval API tests share: a key, calls over real HTTP, the card a request posted."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from bot.service.api_requests import new_key_secrets
from store import api as api_ops
from store.schema import api_keys
from tests.e2e.harness import Harness


async def make_key(
    h: Harness,
    name: str = "ci",
    channels: list[str] | None = None,
    *,
    per_minute: int | None = 100_000,
) -> tuple[str, str]:
    """A new API key in the bot's database: (token, webhook secret). It may post in
    `channels` (default: C_GENERAL). Its quota is far above what a test makes, as tests poll
    GET (`per_minute=None`: the default, 60)."""
    assert h.bot is not None
    token, secret = new_key_secrets()
    allowed = ["C_GENERAL"] if channels is None else channels
    assert await api_ops.create_key(h.bot.store.db, name, token, secret, allowed)
    async with h.bot.store.db.write() as conn:
        await conn.execute(
            api_keys.update().where(api_keys.c.name == name).values(per_minute=per_minute)
        )
    return token, secret


def http(h: Harness, token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(base_url=h.url, headers=headers, timeout=30)


async def create(h: Harness, token: str, **body: Any) -> httpx.Response:
    """POST /v1/requests. The 201 comes once the request is durable, before its card is in
    Slack; like a caller that needs the card, this reads `message_ts` with GET once posted
    (the answer is the 201 with it filled in)."""
    body.setdefault("title", "Deploy v2 to production")
    body.setdefault("channel", "C_GENERAL")
    async with http(h, token) as client:
        r = await client.post("/v1/requests", json=body)
        if r.status_code != 201 or r.json().get("message_ts"):
            return r
        created = r.json()
        for _ in range(200):
            got = await client.get(f"/v1/requests/{created['id']}")
            if got.status_code == 200 and got.json().get("message_ts"):
                created["message_ts"] = got.json()["message_ts"]
                break
            await asyncio.sleep(0.05)
        return httpx.Response(201, json=created, headers=r.headers, request=r.request)


def card_of(h: Harness, message_ts: str, channel: str = "C_GENERAL") -> dict[str, Any]:
    return h.sandbox.message(channel, message_ts)

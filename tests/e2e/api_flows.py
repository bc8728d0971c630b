"""Steps the approval API tests share: a key, calls over real HTTP, the card a request posted."""

from __future__ import annotations

from typing import Any

import httpx

from bot.service.api_requests import new_key_secrets
from store import api as api_ops
from tests.e2e.harness import Harness


async def make_key(
    h: Harness, name: str = "ci", channels: list[str] | None = None
) -> tuple[str, str]:
    """A new API key in the bot's database: (token, webhook secret)."""
    assert h.bot is not None
    token, secret = new_key_secrets()
    assert await api_ops.create_key(h.bot.store.db, name, token, secret, channels or [])
    return token, secret


def http(h: Harness, token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(base_url=h.url, headers=headers, timeout=30)


async def create(h: Harness, token: str, **body: Any) -> httpx.Response:
    body.setdefault("title", "Deploy v2 to production")
    body.setdefault("channel", "C_GENERAL")
    async with http(h, token) as client:
        return await client.post("/v1/requests", json=body)


def card_of(h: Harness, message_ts: str, channel: str = "C_GENERAL") -> dict[str, Any]:
    return h.sandbox.message(channel, message_ts)

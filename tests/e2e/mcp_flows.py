"""Steps the MCP tests share: a session of the `mcp` SDK's own client, and tool answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bot.sandbox import SlackSandbox
from tests.e2e.harness import Harness, has_button


@asynccontextmanager
async def mcp_http(h: Harness, token: str | None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the bot's /mcp, authenticated with `token`."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http,
        streamable_http_client(f"{h.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """A tool's answer: its structured content, else its text parsed as JSON."""
    result = await session.call_tool(tool, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert not result.is_error, text
    if isinstance(result.structured_content, dict) and tool != "permission_prompt":
        structured = result.structured_content
        return structured.get("result", structured) if set(structured) == {"result"} else structured
    return json.loads(text)


def open_cards(sandbox: SlackSandbox, channel: str = "C_GENERAL") -> list[dict[str, Any]]:
    """The channel's cards still waiting for a decision (they have an Approve button)."""
    return [m for m in sandbox.messages(channel) if has_button(m, "approve")]


async def next_card(h: Harness, channel: str = "C_GENERAL") -> dict[str, Any]:
    cards = await h.sandbox.wait_for(lambda sb: open_cards(sb, channel))
    assert len(cards) == 1, cards
    card: dict[str, Any] = cards[0]
    return card

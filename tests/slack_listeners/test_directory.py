"""The Slack directory against the sandbox's Web API over real HTTP: concurrent misses of one
key make one call (thirty clicks at once after the cache lapsed made thirty
`conversations.members` calls, and Slack's 429s then held the clicks)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import SlackSandbox
from bot.slack.directory import SlackDirectory

SECRET, TOKEN = "directory-secret", "xoxb-directory"


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    sb = SlackSandbox(signing_secret=SECRET, bot_token=TOKEN, rate_limits=True)
    await sb.start(host="127.0.0.1", port=0)
    try:
        yield sb
    finally:
        await sb.stop()


async def test_thirty_concurrent_misses_make_one_call_each(sandbox: SlackSandbox) -> None:
    directory = SlackDirectory(AsyncWebClient(base_url=sandbox.api_url, token=TOKEN))
    members, people = await asyncio.gather(
        asyncio.gather(*(directory.channel_members("C_GENERAL") for _ in range(30))),
        asyncio.gather(*(directory.person("U_APPROVER") for _ in range(30))),
    )
    assert len(set(members)) == 1 and "U_APPROVER" in members[0]
    assert {p.user_id for p in people if p is not None} == {"U_APPROVER"}
    assert len(sandbox.calls_to("conversations.members")) == 1
    assert len(sandbox.calls_to("users.info")) == 1
    assert not sandbox.limits.ratelimited
    # answered from the cache afterwards, with no call
    assert await directory.channel_members("C_GENERAL") == members[0]
    assert len(sandbox.calls_to("conversations.members")) == 1


async def test_one_asker_cancelled_does_not_cancel_the_others(sandbox: SlackSandbox) -> None:
    sandbox.slow_next("conversations.members", 0.3)
    directory = SlackDirectory(AsyncWebClient(base_url=sandbox.api_url, token=TOKEN))
    first = asyncio.create_task(directory.channel_members("C_GENERAL"))
    second = asyncio.create_task(directory.channel_members("C_GENERAL"))
    await asyncio.sleep(0.1)
    first.cancel()
    assert "U_APPROVER" in await second
    assert first.cancelled()
    assert len(sandbox.calls_to("conversations.members")) == 1

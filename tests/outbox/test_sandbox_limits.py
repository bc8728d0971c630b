"""The sandbox speaks Slack's limits: 429 with Retry-After past a tier or 1 post/s per
channel, outages (503 or refused connections), message metadata only when asked for."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.outbox.conftest import TOKEN, SandboxFactory


def bare(url: str) -> AsyncWebClient:
    return AsyncWebClient(base_url=url, token=TOKEN, retry_handlers=[])


async def test_limits_are_off_by_default(make_sandbox: SandboxFactory) -> None:
    sandbox = await make_sandbox()
    client = bare(sandbox.api_url)
    for i in range(10):
        await client.chat_postMessage(channel="C_A", text=str(i))
    assert sandbox.limits.ratelimited_total == 0
    assert sandbox.limits.calls["chat.postMessage"] == 10


async def test_posts_past_one_per_second_per_channel_get_429(
    make_sandbox: SandboxFactory,
) -> None:
    sandbox = await make_sandbox(rate_limits=True)
    client = bare(sandbox.api_url)
    for i in range(3):  # the burst
        await client.chat_postMessage(channel="C_A", text=str(i))
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel="C_A", text="one too many")
    assert refused.value.response.status_code == 429
    assert refused.value.response.headers["Retry-After"] == "1"
    await client.chat_postMessage(channel="C_B", text="another channel is free")
    await asyncio.sleep(1.05)
    await client.chat_postMessage(channel="C_A", text="after the wait")
    assert sandbox.limits.ratelimited == {"chat.postMessage": 1}
    assert [m["text"] for m in sandbox.messages("C_A")] == ["0", "1", "2", "after the wait"]


async def test_tier_3_allows_a_burst_then_about_50_a_minute(
    make_sandbox: SandboxFactory,
) -> None:
    sandbox = await make_sandbox(rate_limits=True)
    client = bare(sandbox.api_url)
    ts = (await client.chat_postMessage(channel="C_A", text="x"))["ts"]
    ok = 0
    for i in range(8):
        try:
            await client.chat_update(channel="C_A", ts=ts, text=str(i))
            ok += 1
        except SlackApiError as exc:
            assert exc.response.status_code == 429
            assert int(exc.response.headers["Retry-After"]) >= 1
    assert ok == 5
    assert sandbox.limits.ratelimited["chat.update"] == 3


@pytest.mark.parametrize("mode", ["503", "refuse"])
async def test_an_outage_then_slack_answers_again(mode: str, make_sandbox: SandboxFactory) -> None:
    sandbox = await make_sandbox()
    client = bare(sandbox.api_url)
    await client.chat_postMessage(channel="C_A", text="before")
    await sandbox.outage(1.0, mode=mode)
    if mode == "503":
        with pytest.raises(SlackApiError) as down:
            await client.chat_postMessage(channel="C_A", text="during")
        assert down.value.response.status_code == 503
    else:
        with pytest.raises((aiohttp.ClientError, OSError)):
            await client.chat_postMessage(channel="C_A", text="during")
    await asyncio.sleep(1.2)
    await client.chat_postMessage(channel="C_A", text="after")
    assert [m["text"] for m in sandbox.messages("C_A")] == ["before", "after"]


async def test_metadata_is_listed_only_with_include_all_metadata(
    make_sandbox: SandboxFactory,
) -> None:
    sandbox = await make_sandbox()
    client = bare(sandbox.api_url)
    meta = {"event_type": "sayso_outbox", "event_payload": {"key": "card:1"}}
    root = (await client.chat_postMessage(channel="C_A", text="root", metadata=meta))["ts"]
    await client.chat_postMessage(channel="C_A", thread_ts=root, text="reply", metadata=meta)
    plain = await client.conversations_replies(channel="C_A", ts=root)
    assert all("metadata" not in m for m in plain["messages"])
    full = await client.conversations_replies(channel="C_A", ts=root, include_all_metadata=True)
    assert [m["metadata"] for m in full["messages"]] == [meta, meta]
    history = await client.conversations_history(channel="C_A", include_all_metadata=True)
    assert history["messages"][0]["metadata"] == meta

"""chat.startStream / appendStream / stopStream in the sandbox, with Slack's errors, through
slack-sdk's own `chat_stream` helper; markdown and table blocks are checked as Slack does."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import SlackSandbox


async def _root(client: AsyncWebClient) -> str:
    resp = await client.chat_postMessage(channel="C_GENERAL", text="root")
    return str(resp["ts"])


async def test_chat_stream_grows_one_message_then_stops(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    root = await _root(client)
    stream = await client.chat_stream(
        channel="C_GENERAL",
        thread_ts=root,
        recipient_team_id="T_SANDBOX",
        recipient_user_id="U_REQUESTER",
        buffer_size=4,
    )
    await stream.append(markdown_text="**Hel")
    await stream.append(markdown_text="lo**")
    message = sandbox.message("C_GENERAL", str(stream.ts))
    assert message is not None and message["streaming"] is True
    assert message["markdown_text"] == "**Hello**"
    await stream.stop(markdown_text=" world")
    message = sandbox.message("C_GENERAL", str(stream.ts))
    assert message is not None and "streaming" not in message
    assert message["markdown_text"] == "**Hello** world"
    assert [m["ts"] for m in sandbox.thread("C_GENERAL", root)][1:] == [stream.ts]
    with pytest.raises(SlackApiError) as err:  # a stopped stream takes no more text
        await client.chat_appendStream(channel="C_GENERAL", ts=str(stream.ts), markdown_text="x")
    assert err.value.response["error"] == "message_not_in_streaming_state"


async def test_stream_errors(sandbox: SlackSandbox, client: AsyncWebClient) -> None:
    root = await _root(client)
    with pytest.raises(SlackApiError) as err:  # in a channel Slack streams to one person
        await client.chat_startStream(channel="C_GENERAL", thread_ts=root, markdown_text="hi")
    assert err.value.response["error"] == "missing_recipient_team_id"
    with pytest.raises(SlackApiError) as err:
        await client.chat_startStream(
            channel="C_GENERAL",
            thread_ts="1.000",
            recipient_team_id="T_SANDBOX",
            recipient_user_id="U_REQUESTER",
        )
    assert err.value.response["error"] == "thread_not_found"
    with pytest.raises(SlackApiError) as err:
        await client.chat_stopStream(channel="C_GENERAL", ts=root)
    assert err.value.response["error"] == "message_not_in_streaming_state"
    sandbox.refuse_streaming = True
    with pytest.raises(SlackApiError) as err:
        await client.chat_startStream(
            channel="C_GENERAL",
            thread_ts=root,
            recipient_team_id="T_SANDBOX",
            recipient_user_id="U_REQUESTER",
        )
    assert err.value.response["error"] == "feature_not_enabled"


async def test_markdown_and_table_blocks_are_checked(client: AsyncWebClient) -> None:
    table = {"type": "table", "rows": [[{"type": "raw_text", "text": "a"}]]}
    ok = await client.chat_postMessage(
        channel="C_GENERAL", text="t", blocks=[{"type": "markdown", "text": "**hi**"}, table]
    )
    assert ok["ok"]
    for blocks in (
        [{"type": "markdown", "text": "x" * 7000}, {"type": "markdown", "text": "y" * 7000}],
        [table, table],
        [{"type": "table", "rows": [[{"type": "raw_text", "text": "a"}] * 21]}],
    ):
        with pytest.raises(SlackApiError) as err:
            await client.chat_postMessage(channel="C_GENERAL", text="t", blocks=blocks)
        assert err.value.response["error"] == "invalid_blocks"

"""Small helpers shared by listeners: who acts, and telling them something privately."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Actor

log = logging.getLogger("sayso.slack")

# chat.postEphemeral errors meaning the person cannot see it there: tell them in a DM instead
UNSEEN = ("user_not_in_channel", "channel_not_found", "not_in_channel", "is_archived")


def actor_from(body: dict[str, Any]) -> Actor:
    user = body.get("user") or {}
    team = (body.get("team") or {}).get("id")
    return Actor(user_id=user.get("id", ""), team_id=user.get("team_id") or team)


def where(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """The channel and thread a block action came from (None for App Home)."""
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    message = body.get("message") or {}
    thread = container.get("thread_ts") or message.get("thread_ts") or message.get("ts")
    return channel, thread


async def tell(
    client: AsyncWebClient,
    user_id: str,
    text: str,
    channel: str | None,
    thread_ts: str | None = None,
) -> None:
    """An ephemeral message to one person (a DM when there is no channel or they can't see it).

    `text` is our own mrkdwn (mentions allowed), never a person's input."""
    try:
        if channel:
            try:
                await client.chat_postEphemeral(
                    channel=channel, user=user_id, thread_ts=thread_ts, text=text
                )
                return
            except SlackApiError as exc:
                if exc.response.get("error") not in UNSEEN:
                    raise
                # e.g. an App Home click on a request of a channel the person is not in
        await client.chat_postMessage(channel=user_id, text=text)
    except SlackApiError as exc:
        log.warning("event=tell_failed user=%s error=%s", user_id, exc.response.get("error"))

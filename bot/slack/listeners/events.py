"""Events: `@sayso` mentions, thread replies and the App Home tab."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Service
from bot.slack.blocks import messages
from bot.slack.intake import intake_key_of, recorded, run_id_for
from bot.slack.listeners.common import refresh_home, service_of, tell
from bot.slack.render import agent_infos

log = logging.getLogger("sayso.slack")

PERSON_SUBTYPES = (None, "thread_broadcast")
"""Message subtypes written by a person: edits, deletions and bot posts have others, and a
reply also sent to the channel ("thread_broadcast") is still a person's reply."""


async def first_delivery(service: Service, body: dict[str, Any], context: AsyncBoltContext) -> bool:
    """Slack retries events it thinks were missed: handle each event_id once (an event the
    intake recorded is handled once already: its replay must not be dropped here)."""
    event_id = body.get("event_id")
    if not event_id or intake_key_of(context) is not None:
        return True
    if await service.first_delivery(event_id):
        return True
    log.info("event=duplicate_delivery event_id=%s", event_id)
    return False


async def on_mention(
    body: dict[str, Any],
    event: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """`@sayso [agent] <request>` starts a run (or shows help)."""
    service = service_of(context)
    if event.get("bot_id") or not await first_delivery(service, body, context):
        return
    user, channel = event.get("user"), event.get("channel")
    if not user or not channel:
        return
    thread_ts = event.get("thread_ts")
    if thread_ts and await service.is_run_thread(channel, thread_ts):
        return  # a reply in a run's thread: the message listener handles it
    parsed = service.parse(event.get("text", ""))
    if parsed.kind == "help":
        await client.chat_postEphemeral(
            channel=channel,
            user=user,
            **messages.help_message(agent_infos(service.agents, service.policies)),
        )
        return
    if parsed.kind == "error":
        await tell(client, user, parsed.message, channel, thread_ts)
        return
    team_id = event.get("user_team") or event.get("team") or body.get("team_id")
    outcome = await service.start(
        parsed, requester=user, team_id=team_id, channel_id=channel, run_id=run_id_for(context)
    )
    if not outcome.ok and outcome.message:
        await tell(client, user, outcome.message, channel, thread_ts)


async def on_message(
    body: dict[str, Any],
    event: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """A person's reply in a thread: maybe an answer for a run waiting there."""
    if event.get("bot_id") or event.get("subtype") not in PERSON_SUBTYPES:
        return
    if not event.get("thread_ts"):
        return
    service = service_of(context)
    if not await first_delivery(service, body, context):
        return
    outcome = await service.thread_reply(
        channel_id=event["channel"],
        thread_ts=event["thread_ts"],
        user_id=event.get("user", ""),
        team_id=event.get("user_team") or event.get("team") or body.get("team_id"),
        text=event.get("text", ""),
        ts=event.get("ts", ""),
        run_id=run_id_for(context),
    )
    if not outcome.ok and outcome.message:
        user, channel, thread_ts = event.get("user", ""), event["channel"], event["thread_ts"]
        await tell(client, user, outcome.message, channel, thread_ts)


async def on_home_opened(event: dict[str, Any], context: AsyncBoltContext) -> None:
    """The App Home tab opened: publish what waits for this person."""
    if event.get("tab", "home") != "home":
        return
    await refresh_home(context, event["user"])


def register(app: AsyncApp) -> None:
    app.event("app_mention")(recorded(on_mention))
    app.event("message")(recorded(on_message))
    app.event("app_home_opened")(on_home_opened)

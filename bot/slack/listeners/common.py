"""Helpers shared by listeners: the service, who acts, and telling them something privately."""

from __future__ import annotations

import logging
import weakref
from typing import Any, Final

from slack_bolt.async_app import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Actor, Service
from bot.slack.render import slack_text
from bot.slack.writes import Writes
from store import ApprovalRequestRecord
from store.outbox import Outbox

log = logging.getLogger("sayso.slack")

SERVICE_KEY: Final = "sayso_service"
"""Where the app's middleware puts the Service in each request's Bolt context."""

HOMES_KEY: Final = "sayso_homes"
"""Where the app's middleware puts the App Home refresher (bot/slack/home_refresh.py)."""

# chat.postEphemeral errors meaning the person cannot see it there: tell them in a DM instead
UNSEEN = ("user_not_in_channel", "channel_not_found", "not_in_channel", "is_archived")

_OUTBOXES: weakref.WeakKeyDictionary[AsyncWebClient, Writes] = weakref.WeakKeyDictionary()


def use_outbox(client: AsyncWebClient, outbox: Outbox) -> None:
    """What `tell` says through `client` becomes an outbox row (sent by the dispatcher, paced,
    through outages; an ephemeral expires unsent after a couple of minutes)."""
    _OUTBOXES[client] = Writes(outbox)


def service_of(context: AsyncBoltContext) -> Service:
    """The Service the app's middleware put in this request's context."""
    service = context.get(SERVICE_KEY)
    if not isinstance(service, Service):
        raise RuntimeError("no Service in the Bolt context: build the app with build_bot()")
    return service


async def refresh_home(context: AsyncBoltContext, user_id: str) -> None:
    """Publish this person's App Home again (coalesced), when this app shows one."""
    homes = context.get(HOMES_KEY)
    if homes is not None:
        await homes.refresh(user_id)


def actor_from(body: dict[str, Any]) -> Actor:
    user = body.get("user") or {}
    team = (body.get("team") or {}).get("id")
    return Actor(user_id=user.get("id", ""), team_id=user.get("team_id") or team)


def where(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """The channel and thread a block action came from (None for App Home and modals)."""
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

    `text` is our own mrkdwn (mentions allowed), never a person's input. Through the outbox
    when the app has one (`use_outbox`): the dispatcher says an ephemeral the person cannot see
    there in a DM instead (bot/slack/outbox_send.py)."""
    text = slack_text(text)
    writes = _OUTBOXES.get(client)
    if writes is not None:
        try:
            await writes.ephemeral(user_id, text, channel, thread_ts)
        except Exception:
            log.exception("event=tell_failed user=%s", user_id)
        return
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


async def tell_actor(
    client: AsyncWebClient,
    service: Service,
    body: dict[str, Any],
    text: str,
    request: ApprovalRequestRecord | None = None,
) -> None:
    """Tell the person who clicked or submitted: where they clicked, else in the thread of
    `request`'s run (App Home clicks, modal submissions), else in a DM."""
    channel, thread = where(body)
    if channel is None and request is not None:
        channel = request.state.channel_id
        run = await service.run_of(request)
        thread = run.thread_ts if run else None
    await tell(client, actor_from(body).user_id, text, channel, thread)

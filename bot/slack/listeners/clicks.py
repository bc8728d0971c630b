"""The step every click on a request's button takes first, after its ack.

Bolt runs its middleware before it answers Slack; a click is acked before any database read,
so this step runs as the start of the listener (`on_request_click`): ack, open the loading
modal at once with the trigger id (buttons that open a form), load the request the button
names (`RequestAtHand`, put in the context by bot/slack/request_at_hand.py), and refuse a
button from another card, once for every button, said where the person is looking (an
ephemeral, or the modal the click opened) and put on the record. The listener itself gets a
`Click` with the request already read.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from slack_bolt.async_app import AsyncAck, AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Actor, Service
from bot.slack.blocks import modals
from bot.slack.listeners.common import actor_from, service_of, tell_actor
from bot.slack.render import slack_text
from bot.slack.request_at_hand import request_at_hand
from store import ApprovalRequestRecord, RunRecord

log = logging.getLogger("sayso.slack")

FOREIGN: Final = (
    "This button does not belong to the card it was clicked on, so nothing was done. "
    "Use the buttons on the request's own card."
)
GONE: Final = "This request no longer exists."


@dataclass(frozen=True)
class Click:
    """A click on a button naming an approval request, past the ack and the card check."""

    request_id: str
    request: ApprovalRequestRecord | None
    """As read once for this click (None: no request by that id)."""
    actor: Actor
    view_id: str | None = None
    """The loading modal this click opened at once (buttons that open a form)."""
    run: RunRecord | None = None
    """The request's run, read with it."""


ClickListener = Callable[
    [Click, dict[str, Any], dict[str, Any], AsyncWebClient, AsyncBoltContext], Awaitable[None]
]


def foreign(body: dict[str, Any], request: ApprovalRequestRecord | None) -> bool:
    """A click on one card naming another card's request (Slack never sends that: the value
    is ours). Clicks from App Home (a view) may name any request."""
    container = body.get("container") or {}
    if request is None or request.state.message_ts is None or container.get("type") != "message":
        return False
    return (container.get("message_ts"), container.get("channel_id")) != (
        request.state.message_ts,
        request.state.channel_id,
    )


async def open_loading(
    client: AsyncWebClient, service: Service, body: dict[str, Any]
) -> str | None:
    """Open a loading modal AT ONCE, before any database or directory look-up (the trigger
    id lives 3 s); returns its view id, to fill in with `fill_view`."""
    try:
        resp = await client.views_open(
            trigger_id=body.get("trigger_id", ""), view=modals.loading_modal()
        )
    except SlackApiError as exc:
        error = exc.response.get("error")
        log.warning("event=modal_not_opened error=%s", error)
        text = f"I could not open the form (`{error}`): click again."
        await tell_actor(client, service, body, text)
        return None
    view = resp.get("view") or {}
    return str(view.get("id") or "") or None


async def fill_view(client: AsyncWebClient, view_id: str, view: dict[str, Any]) -> None:
    try:
        await client.views_update(view_id=view_id, view=view)
    except SlackApiError as exc:  # the person closed it meanwhile
        log.info("event=modal_not_updated error=%s", exc.response.get("error"))


async def refuse_in_view(client: AsyncWebClient, view_id: str, text: str) -> None:
    await fill_view(client, view_id, modals.notice_modal("Not possible", slack_text(text)))


async def refused_foreign(
    client: AsyncWebClient,
    service: Service,
    body: dict[str, Any],
    request: ApprovalRequestRecord | None,
    view_id: str | None,
) -> bool:
    """A click naming another card's request: put it on the record and tell the person, in
    the modal the click opened, else privately where they clicked."""
    if request is None or not foreign(body, request):
        return False
    action = ((body.get("actions") or [{}])[0]).get("action_id", "")
    await service.refuse_foreign_click(request, actor_from(body), str(action))
    if view_id is not None:
        await refuse_in_view(client, view_id, FOREIGN)
    else:
        await tell_actor(client, service, body, FOREIGN)
    return True


def on_request_click(*, opens_modal: bool) -> Callable[[ClickListener], Callable[..., Any]]:
    """The Bolt listener of a button naming a request: the shared first step, then `handle`.
    `opens_modal`: the button opens a form, so a loading modal is opened before anything is
    read (a refusal is then said in it)."""

    def wrap(handle: ClickListener) -> Callable[..., Awaitable[None]]:
        async def listener(
            ack: AsyncAck,
            body: dict[str, Any],
            action: dict[str, Any],
            client: AsyncWebClient,
            context: AsyncBoltContext,
        ) -> None:
            await ack()
            service = service_of(context)
            view_id = await open_loading(client, service, body) if opens_modal else None
            if opens_modal and view_id is None:
                return
            hand = request_at_hand(context)
            request = await hand.load()
            if await refused_foreign(client, service, body, request, view_id):
                return
            click = Click(hand.request_id, request, actor_from(body), view_id, hand.run)
            await handle(click, body, action, client, context)

        listener.__name__ = handle.__name__
        listener.__qualname__ = handle.__qualname__
        listener.__doc__ = handle.__doc__
        return listener

    return wrap

"""Buttons on cards, on App Home and on failure messages."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Service
from bot.slack.blocks import modals
from bot.slack.blocks.data import CardInfo
from bot.slack.ids import BUTTON_DECISION, ActionId
from bot.slack.listeners.common import actor_from, service_of, tell_actor
from bot.slack.render import card_info
from store import ApprovalRequestRecord

log = logging.getLogger("sayso.slack")

FORMS: dict[ActionId, Callable[[CardInfo], dict[str, Any]]] = {
    ActionId.EDIT: modals.edit_modal,
    ActionId.REJECT: modals.reject_modal,
    ActionId.ANSWER: modals.answer_modal,
    ActionId.REVIEW: modals.review_modal,
}
"""Buttons that open a form (a modal) before anything is decided."""

FOREIGN = (
    "This button does not belong to the card it was clicked on, so nothing was done. "
    "Use the buttons on the request's own card."
)
GONE = "This request no longer exists."


def foreign(body: dict[str, Any], request: ApprovalRequestRecord | None) -> bool:
    """A click on one card naming another card's request (Slack never sends that: the value
    is ours). Clicks from App Home (a view) may name any request."""
    container = body.get("container") or {}
    if request is None or request.message_ts is None or container.get("type") != "message":
        return False
    return (container.get("message_ts"), container.get("channel_id")) != (
        request.message_ts,
        request.channel_id,
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
    await fill_view(client, view_id, modals.notice_modal("Not possible", text))


async def on_approve(
    ack: AsyncAck,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Approve: decided at once (a confirm dialog, if the tool asks for one, came first)."""
    await ack()
    service = service_of(context)
    request_id = action.get("value", "")
    if foreign(body, await service.approval_request(request_id)):
        await tell_actor(client, service, body, FOREIGN)
        return
    decision = BUTTON_DECISION[ActionId.APPROVE]
    outcome = await service.decide(request_id, actor_from(body), decision)
    if not outcome.ok:
        await tell_actor(client, service, body, outcome.message, outcome.request)


async def on_open_form(
    ack: AsyncAck,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Edit, Reject, Answer, Review: open the form, if this person may decide the request."""
    await ack()
    service = service_of(context)
    view_id = await open_loading(client, service, body)
    if view_id is None:
        return
    outcome = await service.check(action.get("value", ""), actor_from(body))
    if foreign(body, outcome.request):
        await refuse_in_view(client, view_id, FOREIGN)
        return
    if not outcome.ok or outcome.request is None or outcome.run is None:
        await refuse_in_view(client, view_id, outcome.message or GONE)
        return
    card = card_info(outcome.request, outcome.run, service.agents)
    await fill_view(client, view_id, FORMS[ActionId(action["action_id"])](card))


async def on_view_args(
    ack: AsyncAck,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """View full arguments: anyone who sees the card may read them."""
    await ack()
    service = service_of(context)
    view_id = await open_loading(client, service, body)
    if view_id is None:
        return
    found = await service.request_with_run(action.get("value", ""))
    if found is None:
        await refuse_in_view(client, view_id, GONE)
        return
    request, run = found
    if foreign(body, request):
        await refuse_in_view(client, view_id, FOREIGN)
        return
    card = card_info(request, run, service.agents)
    await fill_view(client, view_id, modals.view_args_modal(card))


async def on_retry(
    ack: AsyncAck,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Retry on a failed run's message."""
    await ack()
    service = service_of(context)
    outcome = await service.retry(action.get("value", ""), actor_from(body))
    if not outcome.ok:
        await tell_actor(client, service, body, outcome.message)


def register(app: AsyncApp) -> None:
    app.action(ActionId.APPROVE)(on_approve)
    for action_id in FORMS:
        app.action(action_id)(on_open_form)
    app.action(ActionId.VIEW_ARGS)(on_view_args)
    app.action(ActionId.RETRY)(on_retry)

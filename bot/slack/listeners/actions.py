"""Buttons on cards, on App Home and on failure messages."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Service
from bot.slack.blocks import modals
from bot.slack.blocks.data import CardInfo
from bot.slack.listeners.common import actor_from, tell, where
from bot.slack.render import card_info

log = logging.getLogger("sayso.slack")

MODALS: dict[str, Callable[[CardInfo], dict[str, Any]]] = {
    "edit": modals.edit_modal,
    "reject": modals.reject_modal,
    "answer": modals.answer_modal,
    "review": modals.review_modal,
}


FOREIGN = (
    "This button does not belong to the card it was clicked on, so nothing was done. "
    "Use the buttons on the request's own card."
)


def foreign(body: dict[str, Any], request: Any) -> bool:
    """A click on one card naming another card's request (Slack never sends that: the value
    is ours). Clicks from App Home (a view) may name any request."""
    container = body.get("container") or {}
    if request is None or request.message_ts is None or container.get("type") != "message":
        return False
    return (container.get("message_ts"), container.get("channel_id")) != (
        request.message_ts,
        request.channel_id,
    )


def register(app: AsyncApp, service: Service) -> None:
    async def reply(client: AsyncWebClient, body: dict[str, Any], text: str, request: Any) -> None:
        channel, thread = where(body)
        if channel is None and request is not None:
            channel = request.channel_id
            run = await service.store.get_run(request.run_id)
            thread = run.thread_ts if run else None
        await tell(client, actor_from(body).user_id, text, channel, thread)

    @app.action("approve")
    async def on_approve(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        request_id = action.get("value", "")
        if foreign(body, await service.store.get_request(request_id)):
            await reply(client, body, FOREIGN, None)
            return
        outcome = await service.decide(request_id, actor_from(body), "approve")
        if not outcome.ok:
            await reply(client, body, outcome.message, outcome.request)

    async def open_modal(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        name = action["action_id"]
        outcome = await service.check(action.get("value", ""), actor_from(body))
        if foreign(body, outcome.request):
            await reply(client, body, FOREIGN, None)
            return
        if not outcome.ok or outcome.request is None:
            await reply(client, body, outcome.message, outcome.request)
            return
        run = await service.store.get_run(outcome.request.run_id)
        if run is None:
            return
        card = card_info(outcome.request, run, service.agents)
        await open_view(client, body, MODALS[name](card))

    async def open_view(client: AsyncWebClient, body: dict[str, Any], view: dict[str, Any]) -> None:
        """views.open with the click's trigger_id (valid 3 s); say so when Slack refuses it."""
        try:
            await client.views_open(trigger_id=body.get("trigger_id", ""), view=view)
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.warning("event=modal_not_opened error=%s", error)
            await reply(client, body, f"I could not open the form (`{error}`): click again.", None)

    for name in MODALS:
        app.action(name)(open_modal)

    @app.action("view_args")
    async def on_view_args(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        request = await service.store.get_request(action.get("value", ""))
        run = await service.store.get_run(request.run_id) if request else None
        if request is None or run is None:
            await reply(client, body, "This request no longer exists.", None)
            return
        if foreign(body, request):
            await reply(client, body, FOREIGN, None)
            return
        card = card_info(request, run, service.agents)
        await open_view(client, body, modals.view_args_modal(card))

    @app.action("retry")
    async def on_retry(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        problem = await service.retry(action.get("value", ""), actor_from(body))
        if problem:
            await reply(client, body, problem, None)

"""Buttons on cards, on App Home and on failure messages."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
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
        outcome = await service.decide(action.get("value", ""), actor_from(body), "approve")
        if not outcome.ok:
            await reply(client, body, outcome.message, outcome.request)

    async def open_modal(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        name = action["action_id"]
        outcome = await service.check(action.get("value", ""), actor_from(body))
        if not outcome.ok or outcome.request is None:
            await reply(client, body, outcome.message, outcome.request)
            return
        run = await service.store.get_run(outcome.request.run_id)
        if run is None:
            return
        card = card_info(outcome.request, run, service.agents)
        await client.views_open(trigger_id=body["trigger_id"], view=MODALS[name](card))

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
        card = card_info(request, run, service.agents)
        await client.views_open(trigger_id=body["trigger_id"], view=modals.view_args_modal(card))

    @app.action("retry")
    async def on_retry(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        problem = await service.retry(action.get("value", ""), actor_from(body))
        if problem:
            await reply(client, body, problem, None)

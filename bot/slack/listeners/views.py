"""Modal submissions: edited arguments, reject reasons, answers and reviews."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Action, Service
from bot.slack.blocks import modals
from bot.slack.listeners.common import actor_from, tell

log = logging.getLogger("sayso.slack")


def _first_block(view: dict[str, Any]) -> str:
    for block in view.get("blocks", []):
        if block.get("type") == "input" and block.get("block_id"):
            return block["block_id"]
    return "value"


def register(app: AsyncApp, service: Service) -> None:
    async def submit(
        ack: Any,
        body: dict[str, Any],
        view: dict[str, Any],
        client: AsyncWebClient,
        action: Action,
        **values: Any,
    ) -> None:
        """Check first and answer the modal within 3 s (field errors inline); then record."""
        request_id = (view.get("private_metadata") or "").strip()
        actor = actor_from(body)
        checked = await service.precheck(request_id, actor, action, **values)
        if not checked.ok:
            blocks = {b.get("block_id") for b in view.get("blocks", [])}
            errors = {k: v for k, v in checked.errors.items() if k in blocks}
            await ack(
                response_action="errors", errors=errors or {_first_block(view): checked.message}
            )
            return
        await ack()
        outcome = await service.decide(request_id, actor, action, **values)
        if not outcome.ok:
            request = outcome.request
            run = await service.store.get_run(request.run_id) if request else None
            channel = request.channel_id if request else None
            await tell(
                client, actor.user_id, outcome.message, channel, run.thread_ts if run else None
            )

    async def tool_of(view: dict[str, Any]) -> tuple[Any, Any]:
        request_id = (view.get("private_metadata") or "").strip()
        request = await service.store.get_request(request_id) if request_id else None
        run = await service.store.get_run(request.run_id) if request else None
        tool = service.agents.tool(run.agent_id, request.tool_name) if run and request else None
        return request, tool

    @app.view("sayso_edit")
    async def on_edit(
        ack: Any, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        request, tool = await tool_of(view)
        original = dict(request.arguments or {}) if request else {}
        parameters = tool.parameters if tool else None
        arguments, errors = modals.parse_edit(
            view["state"]["values"], parameters, original=original
        )
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        await submit(ack, body, view, client, "edit", arguments=arguments)

    @app.view("sayso_reject")
    async def on_reject(
        ack: Any, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        reason = modals.parse_reject(view["state"]["values"])
        await submit(ack, body, view, client, "reject", reason=reason)

    @app.view("sayso_answer")
    async def on_answer(
        ack: Any, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        _, tool = await tool_of(view)
        returns_object = bool(tool and tool.returns_object)
        output, errors = modals.parse_answer(view["state"]["values"], returns_object)
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        await submit(ack, body, view, client, "answer", output=output)

    @app.view("sayso_review")
    async def on_review(
        ack: Any, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        text, errors = modals.parse_review(view["state"]["values"])
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        await submit(ack, body, view, client, "review", output=text)

"""Modal submissions: edited arguments, reject reasons, answers and reviews."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Outcome, Service
from bot.slack.blocks import modals
from bot.slack.listeners.common import actor_from, tell

log = logging.getLogger("sayso.slack")


def _first_block(view: dict[str, Any]) -> str:
    for block in view.get("blocks", []):
        if block.get("type") == "input" and block.get("block_id"):
            return block["block_id"]
    return "value"


def register(app: AsyncApp, service: Service) -> None:
    async def finish(
        ack: Any,
        body: dict[str, Any],
        view: dict[str, Any],
        outcome: Outcome,
        client: AsyncWebClient,
    ) -> None:
        """Close the modal on success; show field errors inline; otherwise tell the person."""
        if outcome.ok:
            await ack()
            return
        if outcome.kind == "invalid":
            blocks = {b.get("block_id") for b in view.get("blocks", [])}
            errors = {k: v for k, v in outcome.errors.items() if k in blocks}
            if not errors:
                errors = {_first_block(view): outcome.message}
            await ack(response_action="errors", errors=errors)
            return
        await ack()
        request = outcome.request
        channel = request.channel_id if request else None
        run = await service.store.get_run(request.run_id) if request else None
        await tell(
            client, body["user"]["id"], outcome.message, channel, run.thread_ts if run else None
        )

    async def load(view: dict[str, Any]) -> tuple[str, Any]:
        request_id = (view.get("private_metadata") or "").strip()
        request = await service.store.get_request(request_id) if request_id else None
        return request_id, request

    @app.view("sayso_edit")
    async def on_edit(
        ack: Any, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        request_id, request = await load(view)
        if request is None:
            await ack(
                response_action="errors",
                errors={_first_block(view): "This request no longer exists."},
            )
            return
        run = await service.store.get_run(request.run_id)
        tool = service.agents.tool(run.agent_id, request.tool_name) if run else None
        parameters = tool.parameters if tool else None
        arguments, errors = modals.parse_edit(
            view["state"]["values"], parameters, original=dict(request.arguments or {})
        )
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        outcome = await service.decide(request_id, actor_from(body), "edit", arguments=arguments)
        await finish(ack, body, view, outcome, client)

    @app.view("sayso_reject")
    async def on_reject(
        ack: Any, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        request_id, _ = await load(view)
        reason = modals.parse_reject(view["state"]["values"])
        outcome = await service.decide(request_id, actor_from(body), "reject", reason=reason)
        await finish(ack, body, view, outcome, client)

    @app.view("sayso_answer")
    async def on_answer(
        ack: Any, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        request_id, request = await load(view)
        if request is None:
            await ack(response_action="errors", errors={"answer": "This request no longer exists."})
            return
        run = await service.store.get_run(request.run_id)
        tool = service.agents.tool(run.agent_id, request.tool_name) if run else None
        output, errors = modals.parse_answer(
            view["state"]["values"], bool(tool and tool.returns_object)
        )
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        outcome = await service.decide(request_id, actor_from(body), "answer", output=output)
        await finish(ack, body, view, outcome, client)

    @app.view("sayso_review")
    async def on_review(
        ack: Any, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        request_id, _ = await load(view)
        text, errors = modals.parse_review(view["state"]["values"])
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        outcome = await service.decide(request_id, actor_from(body), "review", output=text)
        await finish(ack, body, view, outcome, client)

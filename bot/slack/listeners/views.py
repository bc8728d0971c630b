"""Modal submissions: edited arguments, reject reasons, approvals with a reason, answers and
reviews."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Tool
from bot.service import OUTPUT_FIELD, REASON_FIELD, Service
from bot.slack.blocks import modals
from bot.slack.ids import SUBMIT_DECISION, BlockId, CallbackId
from bot.slack.intake import is_replay, recorded
from bot.slack.listeners.common import actor_from, service_of, tell_actor
from bot.slack.render import slack_text
from bot.slack.request_at_hand import request_at_hand
from store import ApprovalRequestRecord

log = logging.getLogger("sayso.slack")


def _inputs(view: dict[str, Any]) -> list[str]:
    """The block ids of the modal's inputs, in order."""
    blocks = view.get("blocks", [])
    return [str(b["block_id"]) for b in blocks if b.get("type") == "input" and b.get("block_id")]


OUTPUT_INPUT = {CallbackId.ANSWER: BlockId.ANSWER_INPUT, CallbackId.REVIEW: BlockId.REVIEW_INPUT}
"""The input of each form where the person writes a call's output."""


def _field_errors(
    view: dict[str, Any], callback_id: CallbackId, errors: dict[str, str], message: str
) -> dict[str, str]:
    """The service's field errors under the modal's inputs (an output's under the form's
    output input), else `message` under its first input: Slack refuses errors naming
    blocks that are not inputs."""
    inputs = _inputs(view)
    if callback_id in OUTPUT_INPUT and OUTPUT_FIELD in errors:
        errors = {**errors, OUTPUT_INPUT[callback_id]: errors[OUTPUT_FIELD]}
    if callback_id is CallbackId.EDIT and REASON_FIELD in errors:
        errors = {**errors, BlockId.EDIT_REASON_INPUT: errors[REASON_FIELD]}
    shown = {k: slack_text(v) for k, v in errors.items() if k in inputs}
    return shown or ({inputs[0]: slack_text(message)} if inputs else {})


async def _submit(
    ack: AsyncAck,
    body: dict[str, Any],
    view: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
    callback_id: CallbackId,
    **given: Any,
) -> None:
    """Check first and answer the modal within 3 s (field errors inline); then record. A
    replay (its modal closed long ago) tells a refusal instead, unless it was already done."""
    service = service_of(context)
    hand = request_at_hand(context)  # every sayso form names its request (private_metadata)
    request_id = hand.request_id
    actor = actor_from(body)
    action = SUBMIT_DECISION[callback_id]
    read = await hand.load()
    checked = await service.precheck(
        request_id, actor, action, read=read, read_run=hand.run, **given
    )
    if not checked.ok and is_replay(context):
        await ack()
        if checked.kind != "lost":
            await tell_actor(client, service, body, checked.message, checked.request)
        return
    if not checked.ok:
        errors = _field_errors(view, callback_id, checked.errors, checked.message)
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        await ack()  # a form without inputs: close it and say why
        await tell_actor(client, service, body, checked.message, checked.request)
        return
    await ack()
    outcome = await service.decide(request_id, actor, action, **given)
    if not outcome.ok and not (outcome.kind == "lost" and is_replay(context)):
        await tell_actor(client, service, body, outcome.message, outcome.request)


async def _request_and_tool(
    service: Service, context: AsyncBoltContext
) -> tuple[ApprovalRequestRecord | None, Tool | None]:
    found = await request_at_hand(context).with_run()
    if found is None:
        return None, None
    request, run = found
    return request, service.agents.tool_of(run.agent_id, request)


async def on_edit(
    ack: AsyncAck,
    body: dict[str, Any],
    view: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Approve with edits: the arguments as the person changed them."""
    service = service_of(context)
    request, tool = await _request_and_tool(service, context)
    original = dict(request.current_arguments or {}) if request else {}
    parameters = tool.parameters if tool else None
    arguments, errors = modals.parse_edit(
        view["state"]["values"],
        parameters,
        original=original,
        sensitive=tool.sensitive if tool else (),
    )
    if errors:
        await ack(response_action="errors", errors=errors)
        return
    reason = modals.parse_edit_reason(view["state"]["values"])
    await _submit(
        ack, body, view, client, context, CallbackId.EDIT, arguments=arguments, reason=reason
    )


async def on_reasoned(
    ack: AsyncAck,
    body: dict[str, Any],
    view: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Reject (an optional reason) or Approve (with the reason the request needs)."""
    reason = modals.parse_reason(view["state"]["values"])
    decision = CallbackId(view["callback_id"])
    await _submit(ack, body, view, client, context, decision, reason=reason)


async def on_answer(
    ack: AsyncAck,
    body: dict[str, Any],
    view: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """The answer to a question, or the result of a manual step."""
    service = service_of(context)
    _, tool = await _request_and_tool(service, context)
    returns_object = bool(tool and tool.returns_object)
    output, errors = modals.parse_answer(view["state"]["values"], returns_object)
    if errors:
        await ack(response_action="errors", errors=errors)
        return
    await _submit(ack, body, view, client, context, CallbackId.ANSWER, output=output)


async def on_review(
    ack: AsyncAck,
    body: dict[str, Any],
    view: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """A reply to a human review."""
    text, errors = modals.parse_review(view["state"]["values"])
    if errors:
        await ack(response_action="errors", errors=errors)
        return
    await _submit(ack, body, view, client, context, CallbackId.REVIEW, output=text)


def register(app: AsyncApp) -> None:
    app.view(CallbackId.EDIT)(recorded(on_edit))
    app.view(CallbackId.REJECT)(recorded(on_reasoned))
    app.view(CallbackId.ANSWER)(recorded(on_answer))
    app.view(CallbackId.REVIEW)(recorded(on_review))
    app.view(CallbackId.APPROVE)(recorded(on_reasoned))

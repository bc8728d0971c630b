"""Buttons on cards, on App Home, on failure messages and on a run's root message."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Final

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Actor, Outcome, Service
from bot.slack.blocks import modals
from bot.slack.blocks.data import CardInfo
from bot.slack.ids import BUTTON_DECISION, ActionId
from bot.slack.intake import is_replay, recorded
from bot.slack.listeners.clicks import (
    GONE,
    Click,
    fill_view,
    on_request_click,
    open_loading,
    refuse_in_view,
)
from bot.slack.listeners.common import actor_from, service_of, tell_actor
from bot.slack.render import card_info
from store import ApprovalRequestRecord, RunRecord

log = logging.getLogger("sayso.slack")

FORMS: dict[ActionId, Callable[[CardInfo], dict[str, Any]]] = {
    ActionId.EDIT: modals.edit_modal,
    ActionId.REJECT: modals.reject_modal,
    ActionId.ANSWER: modals.answer_modal,
    ActionId.REVIEW: modals.review_modal,
}
REASON_FORM: Final = modals.approve_modal
"""What Approve opens when the request needs a reason."""
"""Buttons that open a form (a modal) before anything is decided."""


@on_request_click(opens_modal=False)
async def on_approve(
    click: Click,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Approve: decided at once (a confirm dialog, if the tool asks for one, came first)."""
    service = service_of(context)
    request = click.request
    if request is not None and request.policy.require_reason and request.state.status == "pending":
        await _open_form(click, body, action, client, service)  # a reason first, in a modal
        return
    decision = BUTTON_DECISION[ActionId.APPROVE]
    outcome = await service.decide(
        click.request_id, click.actor, decision, read=request, read_run=click.run
    )
    if not outcome.ok and not already_done(context, outcome):
        await tell_actor(client, service, body, outcome.message, outcome.request)


@on_request_click(opens_modal=False)
async def on_approve_always(
    click: Click,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Approve, and allow the tool in this thread for a while (its confirm came first)."""
    service = service_of(context)
    outcome = await service.decide(
        click.request_id,
        click.actor,
        "approve",
        standing=True,
        read=click.request,
        read_run=click.run,
    )
    if not outcome.ok and not already_done(context, outcome):
        await tell_actor(client, service, body, outcome.message, outcome.request)


@on_request_click(opens_modal=True)
async def on_open_form(
    click: Click,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Edit, Reject, Answer, Review: open the form, if this person may decide the request."""
    await _open_form(click, body, action, client, service_of(context))


async def _open_form(
    click: Click,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    service: Service,
) -> None:
    view_id = click.view_id or await open_loading(client, service, body)
    if view_id is None:
        return
    outcome = await service.check(
        click.request_id, click.actor, read=click.request, read_run=click.run
    )
    found = await _shown(client, view_id, outcome)
    if found is None:
        return
    request, run = found
    card = card_info(request, run, service.agents)
    if request.current_arguments is not request.spec.arguments and card.edited_arguments:
        card = replace(card, arguments=dict(card.edited_arguments))  # edit an edit (masked)
    action_id = ActionId(action["action_id"])
    form = REASON_FORM if action_id is ActionId.APPROVE else FORMS[action_id]
    await fill_view(client, view_id, form(card))


@on_request_click(opens_modal=True)
async def on_view_args(
    click: Click,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """View full arguments: for the request's requester and the people who may decide it."""
    service = service_of(context)
    assert click.view_id is not None  # opened by the click
    outcome = await service.view_arguments(click.request_id, click.actor, read=click.request)
    found = await _shown(client, click.view_id, outcome)
    if found is not None:
        request, run = found
        view = modals.view_args_modal(card_info(request, run, service.agents))
        await fill_view(client, click.view_id, view)


async def _shown(
    client: AsyncWebClient, view_id: str, outcome: Outcome
) -> tuple[ApprovalRequestRecord, RunRecord] | None:
    """What a checked click is about, or None once the refusal is said in its modal (the
    service audited it)."""
    if not outcome.ok or outcome.request is None or outcome.run is None:
        await refuse_in_view(client, view_id, outcome.message or GONE)
        return None
    return outcome.request, outcome.run


def already_done(context: AsyncBoltContext, outcome: Outcome) -> bool:
    """A replayed click refused because it was already done ("lost": first, maybe, by its
    own first attempt, which died before it closed its intake row): not told again (the card
    shows who decided)."""
    return outcome.kind == "lost" and is_replay(context)


async def _act_on_value(
    client: AsyncWebClient,
    service: Service,
    body: dict[str, Any],
    action: dict[str, Any],
    use_case: Callable[[str, Actor], Awaitable[Outcome]],
    replay: bool,
) -> None:
    """Buttons whose value names what they act on (a run, a grant): the use case decides;
    a refusal is told to the person who clicked (on a replay, not one saying that it was
    already done: cancelled, retried)."""
    outcome = await use_case(action.get("value", ""), actor_from(body))
    if not outcome.ok and not (replay and outcome.kind in ("lost", "invalid")):
        await tell_actor(client, service, body, outcome.message)


def _acting_on_value(
    use_case: Callable[[Service], Callable[[str, Actor], Awaitable[Outcome]]], doc: str
) -> Callable[..., Awaitable[None]]:
    """The listener of a button whose value names what it acts on."""

    async def listener(
        ack: AsyncAck,
        body: dict[str, Any],
        action: dict[str, Any],
        client: AsyncWebClient,
        context: AsyncBoltContext,
    ) -> None:
        await ack()
        service = service_of(context)
        await _act_on_value(client, service, body, action, use_case(service), is_replay(context))

    listener.__doc__ = doc
    return listener


on_revoke = _acting_on_value(
    lambda s: s.revoke, "Revoke a standing approval, from its message in the thread."
)
on_retry = _acting_on_value(lambda s: s.retry, "Retry on a failed run's message.")
on_cancel = _acting_on_value(lambda s: s.cancel, "Cancel on a run's root message: the kill switch.")


def register(app: AsyncApp) -> None:
    """Buttons that change state are `recorded` (bot/slack/intake.py); those that only open a
    modal are not (the trigger id is used inline)."""
    app.action(ActionId.APPROVE)(recorded(on_approve))
    for action_id in FORMS:
        app.action(action_id)(on_open_form)
    app.action(ActionId.VIEW_ARGS)(on_view_args)
    app.action(ActionId.RETRY)(recorded(on_retry))
    app.action(ActionId.CANCEL)(recorded(on_cancel))
    app.action(ActionId.APPROVE_ALWAYS)(recorded(on_approve_always))
    app.action(ActionId.REVOKE)(recorded(on_revoke))

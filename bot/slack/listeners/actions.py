"""Buttons on cards, on App Home, on failure messages and on a run's root message."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Final

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import Actor, Outcome, Service
from bot.slack.blocks import modals
from bot.slack.blocks.data import CardInfo
from bot.slack.ids import BUTTON_DECISION, ActionId
from bot.slack.intake import is_replay, recorded
from bot.slack.listeners.common import actor_from, service_of, tell_actor
from bot.slack.render import card_info, slack_text
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


async def refused_foreign(
    client: AsyncWebClient,
    service: Service,
    body: dict[str, Any],
    request: ApprovalRequestRecord | None,
) -> bool:
    """A click naming another card's request: tell the person, put it on the record."""
    if request is None or not foreign(body, request):
        return False
    action = ((body.get("actions") or [{}])[0]).get("action_id", "")
    await service.refuse_foreign_click(request, actor_from(body), str(action))
    await tell_actor(client, service, body, FOREIGN)
    return True


async def refused_foreign_in_view(
    client: AsyncWebClient,
    service: Service,
    body: dict[str, Any],
    request: ApprovalRequestRecord | None,
    view_id: str,
) -> bool:
    """`refused_foreign` for a click that already opened a (loading) modal: said in it."""
    if request is None or not foreign(body, request):
        return False
    action = ((body.get("actions") or [{}])[0]).get("action_id", "")
    await service.refuse_foreign_click(request, actor_from(body), str(action))
    await refuse_in_view(client, view_id, FOREIGN)
    return True


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
    request = await service.approval_request(request_id)
    if await refused_foreign(client, service, body, request):
        return
    if request is not None and request.require_reason and request.status == "pending":
        await _open_form(body, action, client, service)  # a reason first, in a modal
        return
    decision = BUTTON_DECISION[ActionId.APPROVE]
    outcome = await service.decide(request_id, actor_from(body), decision)
    if not outcome.ok and not already_done(context, outcome):
        await tell_actor(client, service, body, outcome.message, outcome.request)


async def on_approve_always(
    ack: AsyncAck,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """Approve, and allow the tool in this thread for a while (its confirm came first)."""
    await ack()
    service = service_of(context)
    request_id = action.get("value", "")
    if await refused_foreign(client, service, body, await service.approval_request(request_id)):
        return
    outcome = await service.decide(request_id, actor_from(body), "approve", standing=True)
    if not outcome.ok and not already_done(context, outcome):
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
    await _open_form(body, action, client, service_of(context))


async def _open_form(
    body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient, service: Service
) -> None:
    found = await _checked_in_view(client, service, body, action, service.check)
    if found is None:
        return
    view_id, request, run = found
    card = card_info(request, run, service.agents)
    if request.current_arguments is not request.arguments and card.edited_arguments:
        card = replace(card, arguments=dict(card.edited_arguments))  # edit an edit (masked)
    action_id = ActionId(action["action_id"])
    form = REASON_FORM if action_id is ActionId.APPROVE else FORMS[action_id]
    await fill_view(client, view_id, form(card))


async def on_view_args(
    ack: AsyncAck,
    body: dict[str, Any],
    action: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    """View full arguments: for the request's requester and the people who may decide it."""
    await ack()
    service = service_of(context)
    found = await _checked_in_view(client, service, body, action, service.view_arguments)
    if found is not None:
        view_id, request, run = found
        await fill_view(
            client, view_id, modals.view_args_modal(card_info(request, run, service.agents))
        )


async def _checked_in_view(
    client: AsyncWebClient,
    service: Service,
    body: dict[str, Any],
    action: dict[str, Any],
    check: Callable[[str, Actor], Awaitable[Outcome]],
) -> tuple[str, ApprovalRequestRecord, RunRecord] | None:
    """Open a loading modal at once, then `check` the click: the modal's view id and what
    it is about, or None once the refusal is said in the modal (and audited)."""
    view_id = await open_loading(client, service, body)
    if view_id is None:
        return None
    request_id = action.get("value", "")
    request = await service.approval_request(request_id)
    if await refused_foreign_in_view(client, service, body, request, view_id):
        return None
    outcome = await check(request_id, actor_from(body))
    if not outcome.ok or outcome.request is None or outcome.run is None:
        await refuse_in_view(client, view_id, outcome.message or GONE)
        return None
    return view_id, outcome.request, outcome.run


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

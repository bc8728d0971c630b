"""A button on one card naming another card's request (Slack never sends that: a forged or
tampered click) is refused once, by the first step every request button shares
(bot/slack/listeners/clicks.py), for every button that names a request: told once (in the
modal the click opened, else privately), audited once, and nothing is decided. Driven through
the whole bot with signed requests from the sandbox Slack."""

from __future__ import annotations

import asyncio

from bot.slack.ids import ActionId, CallbackId
from bot.slack.listeners.clicks import FOREIGN
from bot.slack.request_at_hand import REQUEST_ACTIONS
from tests.e2e.flows import card_request_id
from tests.e2e.harness import Harness
from tests.helpers.waiting import eventually

USER = "U_APPROVER"
OPENS_A_MODAL = (
    ActionId.EDIT,
    ActionId.REJECT,
    ActionId.ANSWER,
    ActionId.REVIEW,
    ActionId.VIEW_ARGS,
)
TOLD_PRIVATELY = (ActionId.APPROVE, ActionId.APPROVE_ALWAYS)


async def deploy_card(h: Harness, n: int) -> dict:
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": f"v{n}"})])
    await h.sandbox.slash_command("U_REQUESTER", f"ops deploy v{n} to staging")
    await h.sandbox.wait_for(
        lambda sb: len(sb.messages("C_GENERAL")) == n and len(h.cards()) == 1, timeout=10
    )
    return h.cards()[0]


def ephemerals(h: Harness) -> list[str]:
    return [m.get("text") or "" for m in h.sandbox.ephemerals(USER)]


def notices(h: Harness) -> list[dict]:
    views = h.sandbox.open_views(USER)
    return [v for v in views if v.get("callback_id") == CallbackId.NOTICE]


async def test_every_request_button_names_its_own_cards_request_or_is_refused_once(
    harness: Harness,
) -> None:
    h = harness
    assert set(TOLD_PRIVATELY + OPENS_A_MODAL) == REQUEST_ACTIONS  # every such button
    first, second = await deploy_card(h, 1), await deploy_card(h, 2)
    first_id = card_request_id(first)
    for action_id in TOLD_PRIVATELY + OPENS_A_MODAL:
        payload = h.sandbox.click_payload(USER, "C_GENERAL", second["ts"], ActionId.APPROVE)
        payload["actions"][0]["action_id"] = str(action_id)  # a tampered click
        payload["actions"][0]["value"] = first_id
        told = len(ephemerals(h))
        delivery = await h.sandbox.send_payload("block_actions", payload)
        assert delivery.status == 200, action_id
        if action_id in OPENS_A_MODAL:  # said in the modal the click opened at once
            await eventually(lambda: any(FOREIGN in str(v["blocks"]) for v in notices(h)))
            [notice] = h.sandbox.open_views(USER)
            assert notice["title"]["text"] == "Not possible"
            await h.sandbox.close_view(USER, notice["id"])
            assert len(ephemerals(h)) == told
        else:
            await eventually(lambda told=told: len(ephemerals(h)) > told)
            assert ephemerals(h)[told:] == [FOREIGN]
            assert h.sandbox.open_views(USER) == []
    await asyncio.sleep(0.3)  # anything said or written twice would show by now
    assert len(ephemerals(h)) == len(TOLD_PRIVATELY)
    assert h.sandbox.open_views(USER) == []
    assert h.bot is not None
    request = await h.bot.store.requests.get(first_id)
    assert request is not None and request.state.status == "pending"
    other = await h.bot.store.requests.get(card_request_id(second))
    assert other is not None and other.state.status == "pending"
    trail = await h.bot.store.audit.trail(request.spec.run_id)
    refused = [(e.actor, e.action, e.detail) for e in trail if e.outcome == "denied"]
    reason = "button from another card"
    assert refused == [(USER, str(a), reason) for a in TOLD_PRIVATELY + OPENS_A_MODAL]
    assert [e for e in trail if e.outcome not in ("denied",) and e.actor == USER] == []

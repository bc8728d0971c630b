"""Quorum: a request that needs two distinct people, never the requester; a reject ends it;
an edit resets the count. Through the sandbox, as people click."""

from __future__ import annotations

import pytest

from tests.e2e.flows import card_request_id, open_modal, start_deploy, wait_answer
from tests.e2e.harness import Harness, has_button, message_text
from tests.e2e.policy_agents import make_policy_agents


@pytest.fixture
async def h(harness: Harness) -> Harness:
    await harness.stop_bot()
    harness.make_agents = make_policy_agents
    await harness.start_bot()
    return harness


def ephemeral_text(h: Harness, user: str) -> str:
    return "\n".join(message_text(m) for m in h.sandbox.ephemerals(user))


def card_now(h: Harness, card: dict) -> dict:
    return h.sandbox.message("C_GENERAL", card["ts"])


async def wait_card(h: Harness, card: dict, text: str) -> str:
    """Until the card (updated in place) shows `text`; returns its text."""
    await h.sandbox.wait_for(lambda _: text in message_text(card_now(h, card)))
    return message_text(card_now(h, card))


async def test_two_approvals_run_the_call_once(h: Harness) -> None:
    card = await start_deploy(h)
    assert "0 of 2 approvals" in message_text(card)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_card(h, card, "1 of 2 approvals: ✅ <@U_APPROVER> · waiting for 1 more")
    assert has_button(card_now(h, card), "approve")
    assert h.effects.deploys == [] and len(h.model.requests) == 1
    # a second click by the same person changes nothing, and says so
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda _: "already approved" in ephemeral_text(h, "U_APPROVER"))
    assert "waiting for 1 more" in ephemeral_text(h, "U_APPROVER")
    await h.idle()
    assert h.effects.deploys == [] and len(h.model.requests) == 1
    await h.sandbox.click("U_MEMBER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Deployed v2 to staging.")
    await h.idle()
    assert len(h.effects.deploys) == 1
    done = card_now(h, card)
    assert not has_button(done, "approve")
    assert "<@U_APPROVER>" in message_text(done) and "<@U_MEMBER>" in message_text(done)
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.state.status == "approved" and request.state.approvals == (
        "U_APPROVER",
        "U_MEMBER",
    )
    trail = [e for e in await h.bot.store.audit.trail(request.spec.run_id) if e.action == "decide"]
    assert [(e.actor, e.outcome) for e in trail] == [
        ("U_APPROVER", "counted"),
        ("U_APPROVER", "repeated"),
        ("U_MEMBER", "won"),
    ]


async def test_the_requester_is_never_one_of_the_two(h: Harness) -> None:
    card = await start_deploy(h)
    await h.sandbox.click("U_REQUESTER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda _: "You started this run" in ephemeral_text(h, "U_REQUESTER"))
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_card(h, card, "1 of 2 approvals")
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.state.status == "pending" and request.state.approvals == ("U_APPROVER",)
    assert h.effects.deploys == []


async def test_a_reject_after_one_approval_ends_the_request(h: Harness) -> None:
    card = await start_deploy(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_card(h, card, "1 of 2 approvals")
    view = await open_modal(h, "U_MEMBER", card, "reject")
    await h.sandbox.submit_view("U_MEMBER", view["id"], {"reason": "not today"})
    await wait_answer(h, "Deployed v2 to staging.")  # the fake model's next reply
    assert h.effects.deploys == []
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.state.status == "rejected" and request.state.decided_by == "U_MEMBER"
    assert "Rejected" in message_text(card_now(h, card))


async def test_an_edit_after_one_approval_resets_the_count(h: Harness) -> None:
    card = await start_deploy(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_card(h, card, "1 of 2 approvals")
    view = await open_modal(h, "U_MEMBER", card, "edit")
    await h.sandbox.submit_view("U_MEMBER", view["id"], {"version": "v3"})
    await wait_card(h, card, "✅ <@U_MEMBER>")
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.state.status == "pending"
    assert request.state.approvals == ("U_MEMBER",)  # the editor's approval counts as one
    assert request.state.edited_arguments["version"] == "v3"
    shown = message_text(card_now(h, card))
    assert "1 of 2 approvals: ✅ <@U_MEMBER>" in shown and "v3" in shown
    assert h.effects.deploys == []
    # the first approver approved v2, not v3: they approve again, and it runs
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Deployed v2 to staging.")
    await h.idle()
    assert [d["version"] for d in h.effects.deploys] == ["v3"]
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.state.status == "edited" and set(request.state.approvals) == {
        "U_MEMBER",
        "U_APPROVER",
    }

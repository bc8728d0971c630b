"""A tool that needs a reason: Approve opens a modal whose reason must be filled in; the
reason is stored, shown on the card and given to the tool body."""

from __future__ import annotations

import pytest

from tests.e2e.flows import actor, card_request_id, open_modal, wait_answer
from tests.e2e.harness import Harness, has_button, message_text
from tests.e2e.policy_agents import make_policy_agents


@pytest.fixture
async def h(harness: Harness) -> Harness:
    await harness.stop_bot()
    harness.make_agents = make_policy_agents
    await harness.start_bot()
    return harness


async def start_restart(h: Harness) -> dict:
    h.model.reply(tool_calls=[("restart", {"service": "db"})])
    h.model.reply(text="Restarted db.")
    await h.sandbox.slash_command("U_REQUESTER", "ops restart db")
    await h.sandbox.wait_for(lambda _: len(h.cards()) == 1, timeout=10)
    return h.cards()[0]


async def test_an_empty_reason_gets_a_field_error_and_a_given_one_reaches_the_tool(
    h: Harness,
) -> None:
    card = await start_restart(h)
    view = await open_modal(h, "U_APPROVER", card, "approve")
    assert view["callback_id"] == "sayso_approve"
    inputs = [b for b in view["blocks"] if b["type"] == "input"]
    assert [(b["block_id"], b["element"]["action_id"]) for b in inputs] == [("reason", "value")]
    answer = await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "  "})
    assert answer.status == 200
    assert "reason" in h.sandbox.view_errors(view["id"])
    assert h.sandbox.view_is_open(view["id"])
    assert h.effects.restarts == []
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.state.status == "pending"
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "Incident 42: db stuck"})
    await wait_answer(h, "Restarted db.")
    await h.idle()
    assert h.effects.restarts == ["db"]
    assert h.effects.reasons == ["Incident 42: db stuck"]
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.state.status == "approved" and request.state.reason == "Incident 42: db stuck"
    done = h.sandbox.message("C_GENERAL", card["ts"])
    assert "Incident 42: db stuck" in message_text(done) and not has_button(done, "approve")


async def test_the_service_refuses_an_approval_without_a_reason(h: Harness) -> None:
    """Whatever the front end: an approval of such a request without a reason is refused."""
    card = await start_restart(h)
    outcome = await h.bot.service.decide(card_request_id(card), actor("U_APPROVER"), "approve")
    assert outcome.kind == "invalid" and "reason" in outcome.errors
    assert (await h.bot.store.requests.get(card_request_id(card))).state.status == "pending"

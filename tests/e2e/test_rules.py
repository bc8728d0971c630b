"""Rules on arguments: production needs the approvers group while staging runs at once; an
edit that moves a call under a stricter rule applies it."""

from __future__ import annotations

import pytest

from tests.e2e.flows import card_request_id, open_modal, wait_answer
from tests.e2e.harness import Harness, message_text
from tests.e2e.policy_agents import make_policy_agents


@pytest.fixture
async def h(harness: Harness) -> Harness:
    await harness.stop_bot()
    harness.make_agents = make_policy_agents
    await harness.start_bot()
    return harness


def ephemeral_text(h: Harness, user: str) -> str:
    return "\n".join(message_text(m) for m in h.sandbox.ephemerals(user))


async def test_staging_runs_at_once_while_production_needs_the_group(h: Harness) -> None:
    h.model.reply(tool_calls=[("release", {"environment": "staging", "version": "v2"})])
    h.model.reply(text="Released to staging.")
    await h.sandbox.slash_command("U_REQUESTER", "ops release v2 to staging")
    await wait_answer(h, "Released to staging.")
    assert h.cards() == [] and h.effects.deploys == [{"environment": "staging", "version": "v2"}]

    h.model.reply(tool_calls=[("release", {"environment": "production", "version": "v2"})])
    h.model.reply(text="Released to production.")
    await h.sandbox.slash_command("U_REQUESTER", "ops release v2 to production")
    await h.sandbox.wait_for(lambda _: len(h.cards()) == 1, timeout=10)
    card = h.cards()[0]
    assert "<!subteam^S_APPROVERS>" in message_text(card)
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.policy.rule == "production" and request.policy.approvers == ("S_APPROVERS",)
    await h.sandbox.click("U_MEMBER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(
        lambda _: "Only <!subteam^S_APPROVERS>" in ephemeral_text(h, "U_MEMBER")
    )
    assert len(h.effects.deploys) == 1
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Released to production.")
    assert h.effects.deploys[-1] == {"environment": "production", "version": "v2"}


async def test_an_edit_into_a_stricter_rule_applies_it(h: Harness) -> None:
    h.model.reply(tool_calls=[("scale", {"environment": "staging", "replicas": 3})])
    h.model.reply(text="Scaled.")
    await h.sandbox.slash_command("U_REQUESTER", "ops scale to 3")
    await h.sandbox.wait_for(lambda _: len(h.cards()) == 1, timeout=10)
    card = h.cards()[0]
    rid = card_request_id(card)
    assert (await h.bot.store.requests.get(rid)).policy.min_approvals == 1
    view = await open_modal(h, "U_MEMBER", card, "edit")
    await h.sandbox.submit_view("U_MEMBER", view["id"], {"environment": "production"})

    await h.sandbox.wait_for(
        lambda _: "1 of 2 approvals" in message_text(h.sandbox.message("C_GENERAL", card["ts"]))
    )
    request = await h.bot.store.requests.get(rid)
    assert request.state.status == "pending" and request.policy.rule == "prod"
    assert request.state.approvals == ("U_MEMBER",)
    assert h.effects.deploys == []
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Scaled.")
    await h.idle()
    assert h.effects.deploys == [{"environment": "production", "replicas": 3}]


async def test_help_lists_who_must_approve_each_tool(h: Harness) -> None:
    await h.sandbox.slash_command("U_REQUESTER", "help")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_REQUESTER"))
    text = ephemeral_text(h, "U_REQUESTER")
    assert "approval: any full member, 2 approvals" in text  # deploy
    assert "approval (by rule): any full member" in text  # release
    assert "└ production: <!subteam^S_APPROVERS>" in text
    assert "└ prod: any full member, 2 approvals" in text  # scale
    assert "approval: <@U_APPROVER>" in text  # rollback

"""Escalation: an undecided request calls in the escalation group, which may then decide."""

from __future__ import annotations

import pytest

from tests.e2e.flows import card_request_id, wait_answer
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


async def test_after_the_escalation_the_group_may_decide(h: Harness) -> None:
    h.model.reply(tool_calls=[("rollback", {"service": "api"})])
    h.model.reply(text="Rolled back.")
    await h.sandbox.slash_command("U_REQUESTER", "ops roll api back")
    await h.sandbox.wait_for(lambda _: len(h.cards()) == 1, timeout=10)
    card = h.cards()[0]
    await h.sandbox.click("U_MEMBER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda _: "Only <@U_APPROVER>" in ephemeral_text(h, "U_MEMBER"))
    # the escalation's post and the card's update are two messages sent side by side: wait
    # for the post itself (the card may show "Escalated to" a moment before it lands)
    await h.sandbox.wait_for(lambda _: "*Escalated:*" in h.thread_text(), timeout=10)
    escalations = [m for m in h.thread() if "*Escalated:*" in message_text(m)]
    assert len(escalations) == 1 and "<@U_MEMBER>" in message_text(escalations[0])

    def shown() -> str:
        return message_text(h.sandbox.message("C_GENERAL", card["ts"]))

    await h.sandbox.wait_for(lambda _: "Escalated to <@U_MEMBER>" in shown())
    assert "Who may decide: <@U_APPROVER>, <@U_MEMBER>" in shown()
    await h.sandbox.click("U_MEMBER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Rolled back.")
    await h.idle()
    assert h.effects.restarts == ["rollback:api"]
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request.state.decided_by == "U_MEMBER"
    trail = await h.bot.store.audit.trail(request.spec.run_id)
    assert [e.outcome for e in trail if e.action == "escalate"] == ["escalated"]

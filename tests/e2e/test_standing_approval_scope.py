"""Security, round two, finding 2: a standing approval covers only calls its giver could have
approved by hand under the same rule, with no reason needed and self-approval allowed. Anything
else gets a card (reproduced from outside: signed clicks and thread replies on the sandbox)."""

from __future__ import annotations

import pytest

from tests.e2e.flows import wait_answer
from tests.e2e.harness import Harness, buttons, has_button, message_text
from tests.e2e.policy_agents import make_policy_agents


@pytest.fixture
async def h(harness: Harness) -> Harness:
    await harness.stop_bot()
    harness.make_agents = make_policy_agents
    await harness.start_bot()
    return harness


def open_cards(h: Harness, root: str) -> list[dict]:
    return [m for m in h.sandbox.thread("C_GENERAL", root) if has_button(m, "approve")]


async def staging_with_standing_approval(h: Harness) -> str:
    """Riley ships to staging; Avery approves and allows `ship` in the thread. The root's ts."""
    h.model.reply(tool_calls=[("ship", {"environment": "staging", "version": "v1"})])
    h.model.reply(text="Staging shipped.")
    await h.sandbox.slash_command("U_REQUESTER", "ops ship v1 to staging")
    await h.sandbox.wait_for(lambda _: h.root() and open_cards(h, h.root()["ts"]), timeout=10)
    root = h.root()["ts"]
    card = open_cards(h, root)[0]
    assert any(b["action_id"] == "approve_always" for b in buttons(card))
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve_always")
    await wait_answer(h, "Staging shipped.")
    await h.sandbox.wait_for(
        lambda _: any(has_button(m, "revoke") for m in h.sandbox.thread("C_GENERAL", root))
    )
    return root


async def test_a_call_under_another_rule_gets_a_card(h: Harness) -> None:
    root = await staging_with_standing_approval(h)
    h.model.reply(tool_calls=[("ship", {"environment": "production", "version": "v2"})])
    h.model.reply(text="Production shipped.")
    await h.sandbox.post_message("U_REQUESTER", "now production", thread_ts=root)
    await h.sandbox.wait_for(lambda _: len(open_cards(h, root)) == 1, timeout=10)
    assert h.effects.deploys == [{"environment": "staging", "version": "v1"}]
    assert "auto-approved" not in h.thread_text()
    runs = await h.bot.store.runs.list()
    follow = next(r for r in runs if r.status == "waiting_for_human")
    pending = [r for r in await h.bot.store.requests.current(follow.id) if r.pending]
    assert [(r.policy.rule, r.policy.require_reason, r.policy.approvers) for r in pending] == [
        ("prod", True, ("U_APPROVER2",))
    ]


async def test_the_givers_own_calls_get_a_card_when_self_approval_is_off(h: Harness) -> None:
    root = await staging_with_standing_approval(h)
    h.model.reply(tool_calls=[("ship", {"environment": "staging", "version": "v3"})])
    h.model.reply(text="Avery's staging shipped.")
    await h.sandbox.post_message("U_APPROVER", "ship v3 to staging too", thread_ts=root)
    await h.sandbox.wait_for(lambda _: len(open_cards(h, root)) == 1, timeout=10)
    assert h.effects.deploys == [{"environment": "staging", "version": "v1"}]
    assert "auto-approved" not in h.thread_text()


async def test_a_call_the_giver_could_approve_runs_and_the_audit_names_the_giver(
    h: Harness,
) -> None:
    root = await staging_with_standing_approval(h)
    h.model.reply(tool_calls=[("ship", {"environment": "staging", "version": "v4"})])
    h.model.reply(text="Staging again.")
    await h.sandbox.post_message("U_REQUESTER", "ship v4 to staging", thread_ts=root)
    await wait_answer(h, "Staging again.")
    assert h.effects.deploys[-1] == {"environment": "staging", "version": "v4"}
    assert "auto-approved under the standing approval <@U_APPROVER>" in h.thread_text()
    trail = [e for r in await h.bot.store.runs.list() for e in await h.bot.store.audit.trail(r.id)]
    auto = [e for e in trail if e.action == "decide" and (e.actor or "").startswith("grant:")]
    assert len(auto) == 1 and auto[0].outcome == "won"
    assert "given by U_APPROVER" in (auto[0].detail or "")


async def test_an_approver_by_group_may_revoke(h: Harness) -> None:
    """Finding 15: the tool's approvers given as a group may revoke (the check knows the
    workspace and looks the group up)."""
    h.model.reply(tool_calls=[("get_traces", {"service": "api"})])
    h.model.reply(text="Traces read.")
    await h.sandbox.slash_command("U_REQUESTER", "ops get_traces api")
    await h.sandbox.wait_for(lambda _: h.root() and open_cards(h, h.root()["ts"]), timeout=10)
    root = h.root()["ts"]
    await h.sandbox.click("U_APPROVER", "C_GENERAL", open_cards(h, root)[0]["ts"], "approve_always")
    await wait_answer(h, "Traces read.")
    line = lambda: next(  # noqa: E731
        (m for m in h.sandbox.thread("C_GENERAL", root) if has_button(m, "revoke")), None
    )
    await h.sandbox.wait_for(lambda _: line())
    standing = line()
    assert standing is not None
    await h.sandbox.click("U_APPROVER2", "C_GENERAL", standing["ts"], "revoke")
    await h.sandbox.wait_for(
        lambda sb: (
            "revoked by <@U_APPROVER2>" in message_text(sb.message("C_GENERAL", standing["ts"]))
        ),
        timeout=10,
    )

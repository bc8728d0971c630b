"""Slash command -> card -> Approve -> the tool runs once -> the answer lands in the thread;
long arguments are cut on the card and shown whole in a modal."""

from __future__ import annotations

from tests.e2e.flows import start_deploy
from tests.e2e.harness import Harness, has_button, message_text
from tests.helpers.views import filled_views


async def test_slash_command_posts_root_and_card(harness: Harness) -> None:
    card = await start_deploy(harness)
    root = harness.root()
    text = message_text(root)
    assert "<@U_REQUESTER>" in text and "ops" in text and "deploy v2 to staging" in text
    assert {b["action_id"] for b in card["blocks"][-1]["elements"] if "action_id" in b} >= {
        "approve",
        "edit",
        "reject",
    }
    assert "staging" in message_text(card)
    assert harness.effects.deploys == []


async def test_approve_runs_the_tool_once_and_posts_the_answer(harness: Harness) -> None:
    card = await start_deploy(harness)
    d = await harness.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert d.status == 200
    await harness.sandbox.wait_for(
        lambda sb: "Deployed v2 to staging." in harness.thread_text(), timeout=10
    )
    assert len(harness.effects.deploys) == 1
    updated = harness.sandbox.message("C_GENERAL", card["ts"])
    assert not has_button(updated, "approve")
    assert "<@U_APPROVER>" in message_text(updated)
    # the second click on a decided card: an ephemeral saying by whom, nothing runs again


async def test_long_arguments_are_cut_with_a_view_full_arguments_modal(harness: Harness) -> None:
    h = harness
    version = "v" + "9" * 5000
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": version})])
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy the long one")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    card = h.cards()[0]
    assert has_button(card, "view_args")
    assert "cut" in message_text(card).lower()
    await h.sandbox.click("U_MEMBER", "C_GENERAL", card["ts"], "view_args")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_MEMBER")))[-1]
    assert view["callback_id"] == "sayso_view_args"
    shown = "".join(message_text({"blocks": [b]}) for b in view["blocks"])
    assert shown.count("9") >= 5000
    assert not [c for c in h.sandbox.calls if not c.response.get("ok")]  # Slack accepted all

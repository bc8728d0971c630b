"""Slash command -> card -> Approve -> the tool runs once -> the answer lands in the thread."""

from __future__ import annotations

from tests.e2e.conftest import Harness, has_button, message_text

DEPLOY = {"environment": "staging", "version": "v2"}


async def start_deploy(h: Harness, args: dict | None = None) -> dict:
    h.model.reply(tool_calls=[("deploy", args or DEPLOY)])
    h.model.reply(text="Deployed v2 to staging.")
    d = await h.sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    assert d.status == 200
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    return h.cards()[0]


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

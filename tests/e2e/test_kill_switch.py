"""The kill switch: Cancel on a run's root message ends the run before its next tool, closes
its open requests and updates their cards; only the requester, the approvers of its open
requests and admins may use it (issue 11)."""

from __future__ import annotations

import json
from typing import Any

from bot.sandbox import payloads
from tests.e2e.flows import start_deploy
from tests.e2e.harness import Harness, buttons, has_button, message_text
from tests.helpers.waiting import eventually


async def _cancel(h: Harness, user: str) -> None:
    d = await h.sandbox.click(user, "C_GENERAL", h.root()["ts"], "cancel")
    assert d.status == 200


async def _click_as_shown(h: Harness, user: str, message: dict[str, Any], action_id: str) -> None:
    """A click on `message` as it was shown before (a stale message, or a replayed click)."""
    button = next(b for b in buttons(message) if b["action_id"] == action_id)
    block = next(b["block_id"] for b in message["blocks"] if button in b.get("elements", []))
    payload = payloads.block_actions(
        h.sandbox.person(user),
        [payloads.action(button, block)],
        h.sandbox.issue_trigger(user),
        container={"type": "message", "message_ts": message["ts"], "channel_id": "C_GENERAL"},
    )
    assert (await h.sandbox.send_payload("block_actions", payload)).status == 200


async def test_the_requester_cancels_while_a_card_is_pending(harness: Harness) -> None:
    h = harness
    card = await start_deploy(h)
    assert has_button(h.root(), "cancel")
    await _cancel(h, "U_REQUESTER")
    await h.sandbox.wait_for(lambda sb: "Cancelled by <@U_REQUESTER>" in h.thread_text(), 10)
    await h.idle()
    assert "Cancelled" in message_text(h.root()) and not has_button(h.root(), "cancel")
    updated = h.sandbox.message("C_GENERAL", card["ts"])
    assert not has_button(updated, "approve") and "cancelled" in message_text(updated).lower()
    (run,) = await h.bot.store.runs.list()
    assert run.status == "cancelled"
    (request,) = await h.bot.store.requests.for_run(run.id)
    assert (request.state.status, request.state.decided_by) == ("cancelled", "U_REQUESTER")
    trail = await h.bot.store.audit.trail(run.id)
    assert [(e.actor, e.outcome) for e in trail if e.action == "cancel"] == [("U_REQUESTER", "ok")]
    # an Approve click from the card as it was before changes nothing
    await _click_as_shown(h, "U_APPROVER", card, "approve")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_APPROVER"))
    await h.idle()
    assert "cancelled" in json.dumps(h.sandbox.ephemerals("U_APPROVER"))
    assert h.effects.deploys == [] and len(h.model.requests) == 1


async def test_a_second_cancel_by_its_canceller_is_answered_as_the_first(
    harness: Harness,
) -> None:
    """A replayed Cancel (the process died after the cancel, its click replayed from the
    intake) or a second click tells the canceller what the first did, and changes nothing."""
    h = harness
    await start_deploy(h)
    root = h.root()
    await _cancel(h, "U_REQUESTER")
    await h.sandbox.wait_for(lambda sb: "Cancelled by <@U_REQUESTER>" in h.thread_text(), 10)
    await h.idle()
    said, shown = len(h.sandbox.ephemerals("U_REQUESTER")), h.thread_text()
    await _click_as_shown(h, "U_REQUESTER", root, "cancel")
    intake = h.bot.store.intake()

    async def processed() -> bool:
        return await intake.pending_count() == 0

    await eventually(processed, timeout=10, what="the second click processed")
    await h.idle()
    # as for the first click: its note in the thread (not twice), and no refusal
    assert h.sandbox.ephemerals("U_REQUESTER")[said:] == []
    assert h.thread_text() == shown
    (run,) = await h.bot.store.runs.list()
    trail = await h.bot.store.audit.trail(run.id)
    assert [(e.actor, e.outcome) for e in trail if e.action == "cancel"] == [("U_REQUESTER", "ok")]


async def test_a_strangers_cancel_is_refused(harness: Harness) -> None:
    h = harness
    h.model.reply(tool_calls=[("restart", {"service": "api"})])
    h.model.reply(text="Restarted.")
    await h.sandbox.slash_command("U_REQUESTER", "ops restart api")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    for user in ("U_MEMBER", "U_GUEST", "U_EXTERNAL"):
        await _cancel(h, user)
        await h.sandbox.wait_for(lambda sb, u=user: sb.ephemerals(u))
    assert "may cancel" in json.dumps(h.sandbox.ephemerals("U_MEMBER"))
    await h.idle()
    (run,) = await h.bot.store.runs.list()
    assert run.status == "waiting_for_human"
    assert has_button(h.root(), "cancel") and has_button(h.cards()[0], "approve")
    trail = await h.bot.store.audit.trail(run.id)
    assert sum(1 for e in trail if e.action == "cancel" and e.outcome == "denied") == 3
    # an approver of its open request may
    await _cancel(h, "U_APPROVER2")
    await h.sandbox.wait_for(lambda sb: not has_button(h.root(), "cancel"), timeout=10)
    assert h.effects.restarts == []


async def test_an_admin_may_cancel_any_run(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_admins": "U_MEMBER"}
    await h.start_bot()
    h.model.reply(tool_calls=[("restart", {"service": "api"})])
    await h.sandbox.slash_command("U_REQUESTER", "ops restart api")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    await _cancel(h, "U_MEMBER")
    await h.sandbox.wait_for(lambda sb: not has_button(h.root(), "cancel"), timeout=10)
    (run,) = await h.bot.store.runs.list()
    assert run.status == "cancelled"


async def test_cancelling_a_running_run_stops_it_before_the_next_tool(harness: Harness) -> None:
    h = harness
    h.model.reply(tool_calls=[("get_status", {"service": "api"})], delay=1.5)
    h.model.reply(text="All healthy.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is the api")
    await h.sandbox.wait_for(lambda sb: len(h.model.requests) == 1, timeout=10)
    await _cancel(h, "U_REQUESTER")  # while the model is still answering
    await h.sandbox.wait_for(lambda sb: "Cancelled by" in h.thread_text(), timeout=10)
    await h.idle()
    await h.sandbox.wait_for(lambda sb: h.model.pending == 1, timeout=5)  # never asked again
    assert "get_status" not in h.thread_text()  # its body never started
    (run,) = await h.bot.store.runs.list()
    assert run.status == "cancelled"
    assert run.result is not None and run.result.run.status == "cancelled"


async def test_retry_is_for_the_requester_the_approvers_and_admins(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_approvers": "U_APPROVER", "sayso_admins": "U_MEMBER"}
    await h.start_bot()
    h.model.fail(500)
    h.model.fail(500)
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: any(has_button(m, "retry") for m in h.thread()))
    failure = next(m for m in h.thread() if has_button(m, "retry"))
    await h.sandbox.click("U_APPROVER2", "C_GENERAL", failure["ts"], "retry")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_APPROVER2"))
    assert "admin" in json.dumps(h.sandbox.ephemerals("U_APPROVER2"))
    assert (await h.bot.store.runs.list())[0].status == "failed"
    h.model.reply(text="Recovered by an admin.")
    await h.sandbox.click("U_MEMBER", "C_GENERAL", failure["ts"], "retry")
    await h.sandbox.wait_for(lambda sb: "Recovered by an admin." in h.thread_text(), timeout=10)

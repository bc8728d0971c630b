"""Standing approvals: "Approve, and allow `get_logs` in this thread for 1 h" lets later calls
in the same thread run without a card, never in another thread; Revoke ends it; so does time."""

from __future__ import annotations

import asyncio

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


def approval_cards(h: Harness) -> list[dict]:
    return [m for m in h.thread() if has_button(m, "approve")]


def grant_messages(h: Harness) -> list[dict]:
    return [m for m in h.thread() if has_button(m, "revoke")]


async def first_call_with_grant(h: Harness, tool: str = "get_logs") -> str:
    """A run asks for `tool`; Avery approves and allows it in the thread. Returns the root."""
    h.model.reply(tool_calls=[(tool, {"service": "api"})])
    h.model.reply(text="First look done.")
    await h.sandbox.slash_command("U_REQUESTER", f"ops {tool} api")
    await h.sandbox.wait_for(lambda _: len(approval_cards(h)) == 1, timeout=10)
    card = approval_cards(h)[0]
    always = next(b for b in buttons(card) if b["action_id"] == "approve_always")
    assert "in this thread" in always["text"]["text"] and "confirm" in always
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve_always")
    await wait_answer(h, "First look done.")
    await h.sandbox.wait_for(lambda _: grant_messages(h))
    return h.root()["ts"]


async def follow_up(h: Harness, root: str, tool: str = "get_logs", answer: str = "Again.") -> None:
    h.model.reply(tool_calls=[(tool, {"service": "web"})])
    h.model.reply(text=answer)
    await h.sandbox.post_message("U_REQUESTER", f"{tool} web too", thread_ts=root)


async def test_a_standing_approval_covers_this_thread_only_until_revoked(h: Harness) -> None:
    root = await first_call_with_grant(h)
    grant = grant_messages(h)[0]
    assert "<@U_APPROVER> allowed `get_logs` in this thread" in message_text(grant)
    await follow_up(h, root, answer="Logs again.")
    await wait_answer(h, "Logs again.")
    assert approval_cards(h) == []  # no new card (the first one is decided)
    assert "auto-approved under the standing approval <@U_APPROVER>" in h.thread_text()
    assert h.effects.restarts == ["logs:api", "logs:web"]
    runs = await h.bot.store.runs.list()
    trail = await h.bot.store.audit.trail(runs[0].id)
    auto = [e for e in trail if e.action == "decide"]
    assert len(auto) == 1 and auto[0].actor.startswith("grant:") and auto[0].outcome == "won"

    # another thread: the grant does not apply
    h.model.reply(tool_calls=[("get_logs", {"service": "db"})])
    h.model.reply(text="Other thread.")
    await h.sandbox.slash_command("U_REQUESTER", "ops get_logs db")
    await h.sandbox.wait_for(lambda _: h.root()["ts"] != root and approval_cards(h), timeout=10)
    assert h.effects.restarts == ["logs:api", "logs:web"]
    other = approval_cards(h)[0]
    await h.sandbox.click("U_APPROVER", "C_GENERAL", other["ts"], "approve")
    await wait_answer(h, "Other thread.")

    # Revoke: a guest may not; the granter may; then the first thread asks again
    await h.sandbox.click("U_GUEST", "C_GENERAL", grant["ts"], "revoke")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_GUEST"))
    assert has_button(h.sandbox.message("C_GENERAL", grant["ts"]), "revoke")
    await h.sandbox.click("U_APPROVER", "C_GENERAL", grant["ts"], "revoke")
    await h.sandbox.wait_for(
        lambda sb: "revoked by <@U_APPROVER>" in message_text(sb.message("C_GENERAL", grant["ts"]))
    )
    assert not has_button(h.sandbox.message("C_GENERAL", grant["ts"]), "revoke")
    await follow_up(h, root, answer="Asked again.")
    thread = lambda: h.sandbox.thread("C_GENERAL", root)  # noqa: E731
    await h.sandbox.wait_for(
        lambda _: len([m for m in thread() if has_button(m, "approve")]) == 1, timeout=10
    )
    assert h.effects.restarts == ["logs:api", "logs:web", "logs:db"]


async def test_a_standing_approval_expires_on_time(h: Harness) -> None:
    root = await first_call_with_grant(h, "get_metrics")
    await asyncio.sleep(2.2)  # the grant lasts 2 s
    await follow_up(h, root, "get_metrics")
    await h.sandbox.wait_for(lambda _: len(approval_cards(h)) == 1, timeout=10)
    await h.idle()
    assert h.effects.restarts == ["metrics:api"]
    assert "auto-approved" not in h.thread_text()

"""The live status checklist is folded into the run's root message: five tool calls leave the
root (updated in place, a few times), the card and the answer, not a message per tool."""

from __future__ import annotations

from typing import Any

from tests.e2e.harness import Harness, message_text

ANSWER = "## Deployed\n\n| service | state |\n|---|---|\n| api | up |\n| db | up |\n"


def _is_status(message: dict[str, Any]) -> bool:
    blocks = message.get("blocks") or []
    return bool(blocks) and str(blocks[0].get("block_id", "")).startswith("run_activity:")


async def test_five_tool_calls_leave_one_status_message_a_card_and_the_answer(
    harness: Harness,
) -> None:
    h = harness
    h.model.reply(
        tool_calls=[("get_status", {"service": "api"}), ("get_status", {"service": "db"})]
    )
    h.model.reply(
        tool_calls=[
            ("get_status", {"service": "web"}),
            ("get_status", {"service": "queue"}),
            ("deploy", {"environment": "staging", "version": "v2"}),
        ]
    )
    h.model.reply(text=ANSWER)
    await h.sandbox.slash_command("U_REQUESTER", "ops check and deploy v2")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    await h.sandbox.wait_for(
        lambda sb: "waiting for approval" in message_text(h.root()), timeout=10
    )
    assert message_text(h.root()).count("✓") == 4  # the checklist, in the root

    card = h.cards()[0]
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda sb: "Deployed" in h.thread_text(), timeout=10)
    await h.idle()
    replies = h.thread()[1:]
    assert not [m for m in replies if _is_status(m)]  # no separate status message
    assert [m["ts"] for m in replies if m["ts"] == card["ts"]] == [card["ts"]]
    answers = [m for m in replies if any(b["type"] == "table" for b in m.get("blocks", []))]
    assert len(answers) == 1
    assert len(replies) == 2, [message_text(m)[:60] for m in replies]
    assert "waiting" not in message_text(h.root()) and h.root().get("edited")
    updates = [c for c in h.sandbox.calls if c.method == "chat.update"]
    assert all(c.response.get("ok") for c in h.sandbox.calls)
    assert len(updates) <= 6  # coalesced, not one per event

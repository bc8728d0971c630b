"""The live status checklist builder."""

from __future__ import annotations

from bot.slack.blocks import limits
from bot.slack.blocks.status import Step, activity, checklist, status_message


def test_checklist_reads_as_steps_with_what_waits() -> None:
    steps = [Step("get_status", "done"), Step("deploy", "approval"), Step("notify", "queued")]
    assert checklist(steps) == (
        "✓ `get_status` · ⏳ `deploy` — waiting for approval (card below) · ◻ `notify` — queued"
    )
    assert activity(steps) == "⏳ `deploy` — waiting for approval (card below)"
    assert activity([Step("a", "done")]) is None


def test_a_long_run_shows_its_last_steps_within_limits() -> None:
    steps = [Step("t" * 200, "done")] * 500 + [Step("x", "failed")]
    m = status_message("run1", steps)
    limits.validate_message(m)
    text = m["blocks"][0]["text"]["text"]
    assert "earlier steps" in text
    assert m["blocks"][0]["block_id"] == "run_activity:run1"

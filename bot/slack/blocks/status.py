"""A run's live status: one checklist of its tool calls, updated in place in the thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.slack.blocks import limits as L
from bot.slack.blocks.cards import _q
from bot.slack.blocks.fmt import one_line
from bot.slack.ids import BlockId

StepState = Literal["done", "failed", "running", "approval", "manual", "hitl", "queued"]

_MARK: dict[StepState, str] = {
    "done": "✓",
    "failed": "✗",
    "running": "⏳",
    "approval": "⏳",
    "manual": "⏳",
    "hitl": "⏳",
    "queued": "◻",
}
_NOTE: dict[StepState, str] = {
    "done": "",
    "failed": " — failed",
    "running": " — running",
    "approval": " — waiting for approval (card below)",
    "manual": " — waiting for a person (card below)",
    "hitl": " — waiting for an answer (card below)",
    "queued": " — queued",
}
SHOWN_STEPS = 30  # older steps are summed up ("… 12 earlier steps")


@dataclass(frozen=True)
class Step:
    """One tool call of a run, as the checklist shows it."""

    tool: str
    state: StepState


def step_text(step: Step) -> str:
    return f"{_MARK[step.state]} {_q(step.tool)}{_NOTE[step.state]}"


def checklist(steps: Sequence[Step]) -> str:
    """ "✓ `get_status` · ⏳ `deploy` — waiting for approval (card below) · ◻ `notify` — queued"."""
    shown = list(steps[-SHOWN_STEPS:])
    parts = [step_text(s) for s in shown]
    if len(steps) > len(shown):
        parts.insert(0, f"… {len(steps) - len(shown):,} earlier steps")
    return " · ".join(parts)


def activity(steps: Sequence[Step]) -> str | None:
    """A short line for the root message: the step that is under way or waiting, if any."""
    for step in steps:
        if step.state not in ("done", "failed", "queued"):
            return one_line(step_text(step))
    return None


def status_message(run_id: str, steps: Sequence[Step]) -> dict[str, Any]:
    """The run's live status message in its thread (block_id names the run)."""
    body = L.cut_text(":gear: " + (checklist(steps) or "Working…"), L.SECTION_TEXT)
    done = sum(1 for s in steps if s.state == "done")
    fallback = f"Working: {done} of {len(steps)} steps done"
    return {"text": fallback, "blocks": [L.section(body, L.block_id(BlockId.RUN_ACTIVITY, run_id))]}

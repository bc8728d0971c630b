"""What the store's decided requests mean to the runtime, and how a run's output is shown."""

from __future__ import annotations

import json
from typing import Any

from bot.agent import AgentToolDecision, AgentToolEdit, AgentToolOutput
from store import ApprovalRequestRecord

EXPIRED_REASON = "The approval request expired before anyone decided; the call did not run."
CANCELLED_REASON = "The approval request was cancelled; the call did not run."
REVIEW_EXPIRED_INPUT = (
    "(No review: the request for a person to review your last response expired before anyone "
    "answered. Nobody approved it.)"
)


def render_output(output: Any) -> str:
    if output is None:
        return "(the agent finished without an answer)"
    return output if isinstance(output, str) else json.dumps(output, indent=2, default=str)


def decisions_from(requests: list[ApprovalRequestRecord]) -> dict[str, Any]:
    """Turn decided approval requests into `continue_run` arguments."""
    out: dict[str, Any] = {"approvals": [], "rejections": [], "edits": [], "tool_outputs": []}
    for r in requests:
        if (
            r.spec.kind == "review" and r.state.status != "answered"
        ):  # expired: nobody said anything
            out["human_input"] = REVIEW_EXPIRED_INPUT
        elif r.spec.kind == "review":
            out["human_input"] = (
                r.state.output if isinstance(r.state.output, str) else json.dumps(r.state.output)
            )
        elif r.state.status == "approved":
            out["approvals"].append(
                AgentToolDecision(
                    r.spec.call_id, r.state.reason or None, decided_by=r.state.decided_by
                )
            )
        elif r.state.status == "edited":
            out["edits"].append(
                AgentToolEdit(
                    r.spec.call_id,
                    dict(r.state.edited_arguments or {}),
                    reason=r.state.reason or None,
                    decided_by=r.state.decided_by,
                )
            )
        elif r.state.status == "answered":
            out["tool_outputs"].append(
                AgentToolOutput(r.spec.call_id, r.state.output, decided_by=r.state.decided_by)
            )
        elif r.state.status in ("rejected", "expired", "cancelled"):
            reason = r.state.reason or None
            if r.state.status == "expired":
                reason = EXPIRED_REASON
            elif r.state.status == "cancelled":
                reason = reason or CANCELLED_REASON
            out["rejections"].append(
                AgentToolDecision(r.spec.call_id, reason, decided_by=r.state.decided_by)
            )
    return out

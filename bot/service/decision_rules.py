"""What a decision must satisfy before it is written: an action the request allows, valid
arguments, output and reason; and what a person is told when someone else was first."""

from __future__ import annotations

from typing import Any

from bot.agent.tools import Tool, argument_errors
from bot.agent.vocabulary import ALL_APPROVAL_DECISIONS, PersonAction
from bot.service.outcome import Outcome
from bot.service.text import person
from store import ApprovalRequestRecord

VERB: dict[str, str] = {
    "approved": "approved",
    "edited": "approved with edits",
    "rejected": "rejected",
    "answered": "answered",
    "expired": "expired",
    "cancelled": "cancelled",
}
OUTPUT_FIELD = "output"
"""The field error key for an answer or a review (edits use the argument names)."""
REASON_FIELD = "reason"
"""The field error key for a reason that must be given."""
REASON_NEEDED = "Write why you approve: this request needs a reason."

ANSWERS: tuple[PersonAction, ...] = ("answer", "review")
"""Actions that give the call its output."""


def needs_reason(request: ApprovalRequestRecord, action: PersonAction, reason: str | None) -> bool:
    """Approving (or editing) a request that needs a reason, without one."""
    return (
        request.policy.require_reason
        and action in ("approve", "edit")
        and not (reason or "").strip()
    )


def already_decided(request: ApprovalRequestRecord) -> str:
    if request.state.status == "expired":
        return "This request expired before anyone decided; nothing ran."
    verb = VERB.get(request.state.status, request.state.status)
    by = (
        f" by {person(request.state.decided_by)}"
        if request.state.decided_by and request.state.decided_by[:1] in ("U", "W")
        else ""
    )
    return f"This request was already {verb}{by}."


def invalid_input(
    request: ApprovalRequestRecord,
    tool: Tool | None,
    action: PersonAction,
    arguments: Any,
    output: Any,
) -> Outcome | None:
    if request.spec.kind == "review":
        ok = action in ANSWERS
    elif request.spec.kind in ("manual", "hitl"):
        ok = action in ("answer", "reject")
    else:
        ok = action in (tool.allowed_decisions if tool else ALL_APPROVAL_DECISIONS)
    if not ok:
        return Outcome("invalid", f"`{action}` is not a decision this request allows.", request)
    if action == "edit":
        if tool is None:
            return Outcome(
                "invalid", f"Tool `{request.spec.tool_name}` is no longer defined.", request
            )
        errors = argument_errors(tool, arguments or {})
        if errors:
            return Outcome("invalid", "Some arguments are not valid.", request, errors)
    if action == "answer" and tool is not None:
        try:
            tool.parse_output(output)
        except ValueError as exc:
            return Outcome("invalid", str(exc), request, {OUTPUT_FIELD: str(exc)})
    if action == "review" and not (isinstance(output, str) and output.strip()):
        message = "Write your review."
        return Outcome("invalid", message, request, {OUTPUT_FIELD: message})
    return None

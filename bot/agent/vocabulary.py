"""One vocabulary for the whole project: the kinds, statuses and decisions every layer names.

Defined once here (the runtime is the bottom layer) and imported by the store, the service and
the Slack builders. The string values are stored in the database and in saved runs: never
change one, add new ones instead.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# -- the runtime ----------------------------------------------------------------------------

RunStatus = Literal["running", "waiting_for_human", "completed", "failed", "cancelled"]
ENDED_RUN_STATUSES: Final[tuple[RunStatus, ...]] = ("completed", "failed", "cancelled")

ToolKind = Literal["auto", "approval", "manual", "hitl"]
"""Who acts on a call: nobody (auto), an approver, another system (manual), the requester."""

PendingKind = Literal["approval", "manual", "hitl"]
PauseKind = Literal["tool_approval", "external_output", "tool_input", "human_review"]
CallState = Literal["pending", "ready", "started", "finished"]

ApprovalDecision = Literal["approve", "edit", "reject"]
"""What an approver may do with a call needing approval (a tool's `allowed_decisions`)."""
ALL_APPROVAL_DECISIONS: Final[tuple[ApprovalDecision, ...]] = get_args(ApprovalDecision)

DecisionType = Literal["approve", "edit", "reject", "output"]
"""A decision as the runtime records it: an approval decision, or an output supplied for a
manual or hitl call ("output" is what the store calls "answered")."""

# -- approval requests (the store and the service) ------------------------------------------

RequestKind = Literal["approval", "manual", "hitl", "review"]
RequestStatus = Literal[
    "pending", "approved", "edited", "rejected", "answered", "expired", "cancelled"
]
DecidedStatus = Literal["approved", "edited", "rejected", "answered"]
"""How a decided request ended (a `RequestStatus` other than pending, expired, cancelled)."""
DECIDED_STATUSES: Final[frozenset[DecidedStatus]] = frozenset(get_args(DecidedStatus))

PersonAction = Literal["approve", "edit", "reject", "answer", "review"]
"""What a person does to a request: the three approval decisions, answering a manual or hitl
call, or answering a human review."""

OUTCOME_OF: Final[dict[PersonAction, DecidedStatus]] = {
    "approve": "approved",
    "edit": "edited",
    "reject": "rejected",
    "answer": "answered",
    "review": "answered",
}

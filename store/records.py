"""What the store hands out: immutable records, leases, policies and outcomes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from bot.agent.state import RunResult
from bot.agent.util import utcnow
from bot.agent.vocabulary import (
    PauseKind,
    RequestKind,
    RequestStatus,
    RunStatus,
)
from store.crypto import EncryptionKeyError, Unreadable

ANYONE = "*"


def args_hash(tool_name: str | None, arguments: Any) -> str | None:
    """sha256 of the tool name followed by the canonical (sorted, compact) JSON arguments."""
    if tool_name is None and arguments is None:
        return None
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{tool_name or ''}{canonical}".encode()).hexdigest()


class LeaseLostError(Exception):
    """The run's lease was taken over by another replica: this holder must stop writing."""


@dataclass
class Lease:
    """A replica's claim on a run. `version` is the fencing token; saves advance it."""

    run_id: str
    owner: str
    version: int
    expires_at: datetime
    taken_over: bool = False
    """Claimed from a holder whose lease lapsed (its process died or stalled), not from a run
    that was released or handed off."""


@dataclass(frozen=True)
class RequestPolicy:
    """The rule that applies to an approval request: who may decide it, until when, how many
    must approve, and whether the requester may. The same record when a request is created
    (the policy the store is asked for) and on a stored request (`ApprovalRequestRecord.policy`).

    `approvers` are given as the principals listed: user and group ids, or `*`. An empty list
    (or one that has `*`) means any full member may decide, as it always has at creation. Once
    made, `approvers` is the tuple of listed ids without `*`, and `anyone` (derived, never
    passed) says whether any full member may decide too; `principals` is what the store keeps.
    `min_approvals` distinct people must approve before the call runs."""

    approvers: Sequence[str]
    expires_at: datetime
    allow_self_approval: bool = True
    min_approvals: int = 1
    require_reason: bool = False
    rule: str | None = None
    """The label of the policy rule that applied when the call was proposed (or edited)."""
    escalate_at: datetime | None = None
    escalate_to: Sequence[str] = ()
    """Who is called in when the request escalates (user or group ids)."""
    standing_seconds: int | None = None
    """How long an "Approve, and allow in this thread" grant lasts (None: not offered)."""
    anyone: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        listed = tuple(self.approvers)
        object.__setattr__(self, "approvers", tuple(p for p in listed if p != ANYONE))
        object.__setattr__(self, "anyone", ANYONE in listed or not listed)
        object.__setattr__(self, "escalate_to", tuple(self.escalate_to or ()))

    @property
    def principals(self) -> list[str]:
        """The principals stored for the request: the listed ids, and `*` for anyone."""
        return sorted({*self.approvers, *([ANYONE] if self.anyone else [])})


@dataclass(frozen=True)
class RunRecord:
    id: str
    agent_id: str
    status: RunStatus
    pause_kind: PauseKind | None
    pause_step: int | None
    pause_seq: int
    requester: str | None
    team_id: str | None
    channel_id: str | None
    thread_ts: str | None
    request_text: str
    created_at: datetime
    updated_at: datetime
    version: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    state: str | None
    state_schema_version: int | None
    shown_version: int | None = None
    """The version whose end was put to Slack (see `store.runs.mark_shown`)."""

    @cached_property
    def result(self) -> RunResult | None:
        """The saved run state, parsed on first use (None before the first save);
        EncryptionKeyError when no key reads it."""
        if isinstance(self.state, Unreadable):
            raise EncryptionKeyError(self.state.why)
        return RunResult.model_validate_json(self.state) if self.state else None

    def leased(self, now: datetime | None = None) -> bool:
        if self.lease_owner is None or self.lease_expires_at is None:
            return False
        return self.lease_expires_at >= (now or utcnow())


@dataclass(frozen=True)
class RequestSpec:
    """What was asked: one call (or question, or review) of one pause of a run."""

    run_id: str
    pause_seq: int
    call_id: str
    step: int
    tool_name: str
    kind: RequestKind
    arguments: Any
    """The call's arguments as proposed (an edit is kept aside, in the state)."""
    requester: str | None
    created_at: datetime
    api_spec: dict[str, Any] | None = None
    """Set on requests made through the approval API: title, schema, context, decisions."""


@dataclass(frozen=True)
class RequestState:
    """Where a request stands: its status, who decided and how, and its card in Slack."""

    status: RequestStatus
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None
    edited_arguments: Any = None
    output: Any = None
    channel_id: str | None = None
    message_ts: str | None = None
    interrupted: bool = False
    reminded_at: datetime | None = None
    escalated_at: datetime | None = None
    approvals: tuple[str, ...] = ()
    """Who approved so far towards the quorum (in order), while `min_approvals` > 1."""


@dataclass(frozen=True)
class ApprovalRequestRecord:
    """One pending call (or human review) of one pause, and what became of it: what was asked
    (`spec`), the rule that applies (`policy`) and where it stands (`state`)."""

    id: str
    spec: RequestSpec
    policy: RequestPolicy
    state: RequestState

    @property
    def pending(self) -> bool:
        return self.state.status == "pending"

    @property
    def current_arguments(self) -> Any:
        """What would run if approved now: a quorum request edited while pending runs the
        edit (a decided request keeps its proposal in `arguments`, its edit aside)."""
        if self.state.status == "pending" and self.state.edited_arguments is not None:
            return self.state.edited_arguments
        return self.spec.arguments

    @property
    def approvals_missing(self) -> int:
        """How many more approvals the quorum needs (0 once it is met)."""
        return max(0, self.policy.min_approvals - len(self.state.approvals))

    def expired_at(self, now: datetime | None = None) -> bool:
        """Past its deadline (whether or not a sweep has marked it `expired` yet)."""
        return self.state.status == "expired" or self.policy.expires_at <= (now or utcnow())


@dataclass(frozen=True)
class StandingApproval:
    """A standing approval: calls of `tool_name` in one thread run without a card until
    `expires_at`, unless revoked."""

    id: str
    agent_id: str
    tool_name: str
    channel_id: str
    thread_ts: str
    granted_by: str
    granted_at: datetime
    expires_at: datetime
    request_id: str | None = None
    message_ts: str | None = None
    revoked_by: str | None = None
    revoked_at: datetime | None = None

    def live(self, now: datetime | None = None) -> bool:
        return self.revoked_at is None and self.expires_at > (now or utcnow())


@dataclass(frozen=True)
class DecisionResult:
    """The result of one attempt to decide a request.

    `won`: this attempt's decision was recorded. Otherwise `request` shows who decided and how
    (or `expired` is True). `request` is None only when no such request exists.
    `run_ready`: after this write the run's current pause has no pending request left."""

    won: bool
    request: ApprovalRequestRecord | None
    expired: bool = False
    run_ready: bool = False
    lease: Lease | None = None
    """Set when the decision that made the run ready also took its lease for this replica
    (in the same transaction, when asked to): the caller continues the run."""

    @property
    def found(self) -> bool:
        return self.request is not None


@dataclass(frozen=True)
class AuditEvent:
    id: int
    at: datetime
    actor: str | None
    action: str
    run_id: str | None
    call_id: str | None
    request_id: str | None
    tool_name: str | None
    args_hash: str | None
    outcome: str
    detail: str | None = field(default=None)

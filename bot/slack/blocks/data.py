"""What the builders receive: plain frozen data, filled by the service layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.agent.vocabulary import (
    ALL_APPROVAL_DECISIONS,
    ApprovalDecision,
    RequestKind,
    RequestStatus,
    RunStatus,
    ToolKind,
)


@dataclass(frozen=True)
class CardInfo:
    """One approval request: a pending call (approval, manual, hitl) or a review pause."""

    request_id: str
    run_id: str
    agent_id: str
    tool_name: str  # for review: "human_review"
    kind: RequestKind
    arguments: dict[str, Any]  # review: {"reason": ..., "payload": ...}
    status: RequestStatus = "pending"
    tool_description: str = ""
    requester: str | None = None
    expires_at: datetime | None = None
    allowed_decisions: tuple[ApprovalDecision, ...] = ALL_APPROVAL_DECISIONS
    confirm: bool = False
    interrupted: bool = False
    approvers: tuple[str, ...] = ()
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None
    edited_arguments: dict[str, Any] | None = None
    output: Any = None
    returns_object: bool = False
    parameters: dict[str, Any] | None = None
    created_at: datetime | None = None  # added: orders the home tab (newest first)
    sensitive: frozenset[str] = frozenset()
    """Arguments marked `Sensitive()`: already masked in `arguments`, blank in the edit modal."""
    defaults: dict[str, Any] = field(default_factory=dict)
    """Parameters the arguments leave out, with the defaults they will run with."""
    min_approvals: int = 1
    require_reason: bool = False
    rule: str | None = None
    escalate_to: tuple[str, ...] = ()
    escalated_at: datetime | None = None
    standing_seconds: int | None = None
    approvals: tuple[str, ...] = ()  # who approved so far, towards `min_approvals`
    display: str | None = None
    """An API request's `display` (a command, a diff): shown as code, never as mrkdwn."""


@dataclass(frozen=True)
class RunInfo:
    """One agent run, as shown in its root message and on the home tab."""

    run_id: str
    agent_id: str
    status: RunStatus
    request_text: str
    requester: str | None = None
    channel_id: str | None = None
    thread_ts: str | None = None
    created_at: datetime | None = None
    error: str | None = None
    permalink: str | None = None  # added: link to the thread (chat.getPermalink), if known
    activity: str | None = None  # the step under way or waiting (from the live status)
    queued_ahead: int = 0  # a running run not yet taken by a worker: runs waiting before it


@dataclass(frozen=True)
class WhoApproves:
    """Who must approve a tool's calls (or, for a rule, the calls it matches)."""

    approvers: tuple[str, ...]  # empty: any full member
    min_approvals: int = 1
    rule: str | None = None  # None: the tool's own settings
    when: str = ""  # "always", "by rule", ... (the tool's line only)


@dataclass(frozen=True)
class AgentInfo:
    """An agent and its tools, for the help message."""

    agent_id: str
    description: str
    tools: tuple[tuple[str, ToolKind, str], ...]  # (name, kind, description)
    approvals: dict[str, tuple[WhoApproves, ...]] | None = None
    """By tool name, from the effective policy (None: not shown)."""

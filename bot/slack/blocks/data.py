"""What the builders receive: plain frozen data, filled by the service layer."""

from __future__ import annotations

from dataclasses import dataclass
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
    queued_ahead: int = 0  # a running run not yet taken by a worker: runs waiting before it


@dataclass(frozen=True)
class AgentInfo:
    """An agent and its tools, for the help message."""

    agent_id: str
    description: str
    tools: tuple[tuple[str, ToolKind, str], ...]  # (name, kind, description)

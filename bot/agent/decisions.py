"""What callers pass to `Agent.continue_run`, and what callbacks receive."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.agent.messages import Message, ModelResponse


@dataclass
class AgentToolDecision:
    """Approve (in `approvals`) or reject (in `rejections`) one call by its exact id."""

    call_id: str
    reason: str | None = None
    decided_by: str | None = None


@dataclass
class AgentToolEdit:
    """Approve one call with replaced arguments (validated against the tool's schema)."""

    call_id: str
    arguments: dict[str, Any]
    reason: str | None = None
    decided_by: str | None = None
    tool_name: str | None = None


@dataclass
class AgentToolOutput:
    """The output of a manual or hitl call, supplied by a person or another system."""

    call_id: str
    output: Any
    decided_by: str | None = None


@dataclass
class AgentHumanReviewRequest:
    """Returned by a `human_review` callback to pause the run for a person's input."""

    reason: str
    payload: Any = None


@dataclass
class HumanReviewContext:
    """What a `human_review` callback sees for each model response."""

    run_id: str
    agent_id: str
    step: int
    messages: list[Message]
    response: ModelResponse
    output: Any
    context: dict[str, Any] = field(default_factory=dict)


ReviewVerdict = AgentHumanReviewRequest | None
HumanReviewHook = Callable[[HumanReviewContext], ReviewVerdict | Awaitable[ReviewVerdict]]
"""An agent's `human_review` callback (sync or async): a request pauses the run, None goes on."""


@dataclass
class RunEvent:
    """Progress reported to an `on_event` callback (e.g. to show it in a Slack thread)."""

    type: str  # model_response | tool_started | tool_finished | paused | completed | failed
    run_id: str
    call_id: str | None = None
    tool: str | None = None
    detail: str | None = None

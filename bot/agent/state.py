"""Run state: plain, versioned, JSON-serializable data.

A `RunResult` is everything needed to continue a run, possibly minutes later in another
process. It round-trips through `model_dump_json()` / `model_validate_json()`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from bot.agent.decisions import (
    AgentHumanReviewRequest,
    AgentToolDecision,
    AgentToolEdit,
    AgentToolOutput,
)
from bot.agent.errors import UnknownSchemaVersionError
from bot.agent.messages import Message, ToolCall, Usage
from bot.agent.util import utcnow
from bot.agent.vocabulary import (
    CallState,
    DecisionType,
    PauseKind,
    PendingKind,
    RunStatus,
    ToolKind,
)

SCHEMA_VERSION = 1

DEFAULT_REJECT_REASON = "Tool call rejected"


class ToolCallDecision(BaseModel):
    """A person's (or system's) decision on one pending call, named by its exact call id."""

    call_id: str
    type: DecisionType
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    output: Any = None
    decided_by: str | None = None
    decided_at: datetime = Field(default_factory=utcnow)

    @classmethod
    def approve(
        cls, call_id: str, *, reason: str | None = None, decided_by: str | None = None
    ) -> ToolCallDecision:
        return cls(call_id=call_id, type="approve", reason=reason, decided_by=decided_by)

    @classmethod
    def reject(
        cls, call_id: str, reason: str | None = None, *, decided_by: str | None = None
    ) -> ToolCallDecision:
        return cls(call_id=call_id, type="reject", reason=reason, decided_by=decided_by)

    @classmethod
    def edit(
        cls,
        call_id: str,
        arguments: dict[str, Any],
        *,
        reason: str | None = None,
        decided_by: str | None = None,
    ) -> ToolCallDecision:
        return cls(
            call_id=call_id, type="edit", arguments=arguments, reason=reason, decided_by=decided_by
        )

    @classmethod
    def answer(
        cls, call_id: str, output: Any, *, decided_by: str | None = None
    ) -> ToolCallDecision:
        return cls(call_id=call_id, type="output", output=output, decided_by=decided_by)


RecordableDecision = ToolCallDecision | AgentToolEdit | AgentToolOutput
"""What `RunResult.record` and `Agent.record` take: a decision that says what it decides."""


def as_tool_call_decision(decision: RecordableDecision) -> ToolCallDecision:
    """The `ToolCallDecision` an exported decision stands for.

    Raises `TypeError` for a type that does not say what it decides, naming the one to use.
    """
    if isinstance(decision, ToolCallDecision):
        return decision
    if isinstance(decision, AgentToolEdit):
        return ToolCallDecision.edit(
            decision.call_id,
            decision.arguments,
            reason=decision.reason,
            decided_by=decision.decided_by,
        )
    if isinstance(decision, AgentToolOutput):
        return ToolCallDecision.answer(
            decision.call_id, decision.output, decided_by=decision.decided_by
        )
    raise TypeError(_not_recordable(decision))


def _not_recordable(decision: object) -> str:
    if isinstance(decision, AgentToolDecision):
        return (
            f"An AgentToolDecision does not say whether it approves or rejects call "
            f"{decision.call_id}: record ToolCallDecision.approve(call_id) or "
            "ToolCallDecision.reject(call_id, reason), or pass it to Agent.continue_run in "
            "approvals=[...] or rejections=[...]"
        )
    if isinstance(decision, AgentHumanReviewRequest):
        return (
            "An AgentHumanReviewRequest is what a human_review callback returns to pause a run; "
            "answer a review with Agent.continue_run(human_input=...)"
        )
    return (
        f"Cannot record a {type(decision).__name__}: use ToolCallDecision (approve, reject, "
        "edit, answer), AgentToolEdit or AgentToolOutput"
    )


class PendingToolCall(BaseModel):
    """A call waiting for a person: a decision (`approval`) or an output (`manual`, `hitl`)."""

    call: ToolCall
    kind: PendingKind
    interrupted: bool = False
    decision: ToolCallDecision | None = None


class HumanReview(BaseModel):
    reason: str
    payload: Any = None


class Pause(BaseModel):
    kind: PauseKind
    step: int
    seq: int = 1  # 1 for the run's first pause, 2 for the next...: names this pause uniquely
    pending_tool_calls: list[PendingToolCall] = Field(default_factory=list)
    review: HumanReview | None = None

    def pending(self, call_id: str) -> PendingToolCall | None:
        return next((p for p in self.pending_tool_calls if p.call.id == call_id), None)


class TurnCall(BaseModel):
    """Progress of one tool call of the current model turn (decided -> started -> finished)."""

    call: ToolCall
    kind: ToolKind
    state: CallState = "ready"
    interrupted: bool = False
    decision: ToolCallDecision | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    content: str | None = None
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class Turn(BaseModel):
    """The tool calls of one assistant message, until each has exactly one result."""

    step: int
    calls: list[TurnCall] = Field(default_factory=list)
    human_input: str | None = None

    def get(self, call_id: str) -> TurnCall | None:
        return next((c for c in self.calls if c.call.id == call_id), None)


class Run(BaseModel):
    id: str
    agent_id: str
    model: str
    status: RunStatus = "running"
    pause: Pause | None = None
    messages: list[Message] = Field(default_factory=list)
    turn: Turn | None = None
    step: int = 0
    pauses: int = 0
    max_steps: int = 20
    context: dict[str, Any] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class RunResult(BaseModel):
    """What `Agent.run` and `Agent.continue_run` return, and what a state accessor stores."""

    schema_version: int = SCHEMA_VERSION
    run: Run
    output: Any = None

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != SCHEMA_VERSION:
            raise UnknownSchemaVersionError(
                f"Unknown run state schema version {value}: this sayso reads version "
                f"{SCHEMA_VERSION}. Upgrade sayso to continue this run."
            )
        return value

    # Pydantic wraps a ValueError raised in a validator into a ValidationError; surface the
    # schema version problem itself so callers can catch UnknownSchemaVersionError.
    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> RunResult:
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            _raise_schema_version_error(exc)
            raise

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> RunResult:
        try:
            return super().model_validate_json(json_data, **kwargs)
        except ValidationError as exc:
            _raise_schema_version_error(exc)
            raise

    @property
    def pending_tool_calls(self) -> list[PendingToolCall]:
        return self.run.pause.pending_tool_calls if self.run.pause else []

    def resolve(self, decision: RecordableDecision) -> tuple[ToolCallDecision, PendingToolCall]:
        """The decision as a `ToolCallDecision`, and the pending call it decides.

        Raises `TypeError` for a type that does not say what it decides, and `ValueError`
        for a run that is not waiting, an unknown call id, or an edit naming another tool.
        """
        recorded = as_tool_call_decision(decision)
        run = self.run
        if run.status != "waiting_for_human" or run.pause is None:
            raise ValueError(f"Run {run.id} is not waiting for human input (status: {run.status})")
        pending = run.pause.pending(recorded.call_id)
        if pending is None:
            raise ValueError(f"Unknown tool call {recorded.call_id} for run {run.id}")
        edited_tool = decision.tool_name if isinstance(decision, AgentToolEdit) else None
        if edited_tool and edited_tool != pending.call.name:
            raise ValueError(
                f"An edit cannot change the tool of call {recorded.call_id} "
                f"({pending.call.name} -> {edited_tool})"
            )
        return recorded, pending

    def record(self, decision: RecordableDecision) -> ToolCallDecision:
        """Record one decision on the paused run (decisions may arrive one at a time).

        Args:
            decision: a `ToolCallDecision`, an `AgentToolEdit` (its `reason` is kept) or an
                `AgentToolOutput`. An `AgentToolDecision` is refused with a `TypeError`: it
                does not say whether it approves or rejects.

        Returns the decision as recorded. Raises `ValueError` for a run that is not waiting,
        an unknown call id, a second decision for the same call, or a decision type that
        does not fit the call's kind. Edited arguments are checked against the tool's schema
        only by `Agent.record`.
        """
        run = self.run
        recorded, pending = self.resolve(decision)
        if pending.decision is not None:
            raise ValueError(f"Tool call {recorded.call_id} already has a decision")
        if pending.kind == "approval" and recorded.type == "output":
            raise ValueError(
                f"Tool call {recorded.call_id} needs approval: approve, edit or reject it"
            )
        if pending.kind != "approval" and recorded.type in ("approve", "edit"):
            raise ValueError(
                f"Tool call {recorded.call_id} is a {pending.kind} call: give its output"
            )
        pending.decision = recorded
        run.updated_at = utcnow()
        return recorded


def _raise_schema_version_error(exc: ValidationError) -> None:
    for err in exc.errors():
        original = (err.get("ctx") or {}).get("error")
        if isinstance(original, UnknownSchemaVersionError):
            raise original from None

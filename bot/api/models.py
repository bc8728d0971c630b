"""The approval API's bodies, as pydantic models: they validate requests, shape answers, make
the OpenAPI document, and are shared with the Python client (bot/client.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ApiKind = Literal["approval", "question", "review"]
ApiStatus = Literal["pending", "approved", "rejected", "answered", "expired", "cancelled"]
ApiDecisionType = Literal["approve", "edit", "reject", "answer"]
MAX_WAIT = 60


class CreateRequest(BaseModel):
    """POST /v1/requests."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    kind: ApiKind = "approval"
    title: str = Field(min_length=1, max_length=2000)
    tool: str | None = Field(default=None, min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    json_schema: dict[str, Any] | None = Field(
        default=None,
        alias="schema",
        description="JSON Schema of the arguments: enables Edit, with validation.",
    )
    channel: str | None = Field(default=None, min_length=1, max_length=64)
    thread_ts: str | None = Field(default=None, max_length=64)
    requested_by: str | None = Field(default=None, description="A Slack user id.")
    approvers: list[str] = Field(default_factory=list, description="Slack user or group ids.")
    min_approvals: int = Field(default=1, ge=1)
    allow_self_approval: bool = True
    allowed_decisions: list[Literal["approve", "edit", "reject"]] | None = Field(
        default=None, min_length=1
    )
    expires_in: float | None = Field(default=None, gt=0, description="Seconds.")
    callback_url: str | None = Field(default=None, pattern=r"^https?://", max_length=2000)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    context: dict[str, Any] | None = None


class CreatedRequest(BaseModel):
    """201 (or 200 for a repeated idempotency key)."""

    id: str
    status: ApiStatus
    channel: str | None
    message_ts: str | None


class Approval(BaseModel):
    user: str
    decision: ApiDecisionType
    at: datetime | None


class Decision(BaseModel):
    type: ApiDecisionType
    arguments: dict[str, Any] | None = None
    reason: str | None = None
    answer: Any = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    approvals: list[Approval] = Field(default_factory=list)


class RequestState(BaseModel):
    """GET /v1/requests/{id}, and the body of every webhook delivery."""

    id: str
    kind: ApiKind
    status: ApiStatus
    decision: Decision | None
    created_at: datetime
    expires_at: datetime
    context: dict[str, Any] | None = Field(
        default=None, description="The request's `context`, as it was created."
    )
    channel: str | None = None
    message_ts: str | None = Field(
        default=None, description="The card's ts once Slack shows it (the 201 comes before)."
    )


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail

"""The approval API's bodies, as pydantic models: they validate requests, shape answers, make
the OpenAPI document, and are shared with the Python client (bot/client.py)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

ApiKind = Literal["approval", "question", "review"]
ApiStatus = Literal["pending", "approved", "rejected", "answered", "expired", "cancelled"]
ApiDecisionType = Literal["approve", "edit", "reject", "answer"]
MAX_WAIT = 60


REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a request id in a path may be."""
MAX_JSON_DEPTH = 20
"""`arguments` and `context` nest objects and arrays at most this deep."""
MAX_EXPIRES_IN = 365 * 24 * 3600
MAX_MIN_APPROVALS = 20
USER_ID = r"^[UW][A-Z0-9_]{1,63}$"
"""A Slack user id (`U…` or `W…`)."""
PRINCIPAL_ID = r"^[UWS][A-Z0-9_]{1,63}$"
"""A Slack user id, or a user group id (`S…`)."""
CHANNEL_ID = r"^[A-Za-z0-9_#.-]{1,64}$"
THREAD_TS = r"^[0-9]{1,20}\.[0-9]{1,20}$"
NO_CONTROL = r"^[^\x00-\x1f\x7f]*$"
"""One line of text: no NUL, no control characters."""
TEXT = r"^[^\x00]*$"
"""Text with line breaks allowed, but no NUL (PostgreSQL cannot store one)."""
KEY_TEXT = r"^[\x21-\x7e]*$"
"""Printable ASCII without spaces (idempotency keys)."""


def _json_problem(value: Any, depth: int = 0) -> str | None:
    if depth > MAX_JSON_DEPTH:
        return f"nests deeper than {MAX_JSON_DEPTH} levels"
    if isinstance(value, str):
        return "holds a NUL character" if "\x00" in value else None
    if isinstance(value, dict):
        for key, child in value.items():
            if "\x00" in key:
                return "holds a NUL character"
            if (problem := _json_problem(child, depth + 1)) is not None:
                return problem
    elif isinstance(value, list):
        for child in value:
            if (problem := _json_problem(child, depth + 1)) is not None:
                return problem
    return None


def _bounded_json(value: Any) -> Any:
    problem = _json_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


BoundedObject = Annotated[
    dict[str, Any],
    AfterValidator(_bounded_json),
    Field(
        description=f"A JSON object, at most {MAX_JSON_DEPTH} levels deep, with no NUL "
        "character in any key or string."
    ),
]


CallbackUrl = Annotated[
    str,
    Field(
        # RFC 3986's characters only (a URI is ASCII: non-ASCII is percent-encoded)
        pattern=r"^https?://[A-Za-z0-9.:\[\]_-]+(/[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]*)?$",
        max_length=2000,
        json_schema_extra={"format": "uri"},
    ),
]


class AnsweredInClient(BaseModel):
    """A question its caller's own client already answered (MCP elicitation, `sayso mcp`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    answer: str = Field(min_length=1, max_length=3000, pattern=TEXT)
    client: str = Field(min_length=1, max_length=100, pattern=NO_CONTROL)


class CreateRequest(BaseModel):
    """POST /v1/requests. Strict: JSON types are never coerced (`0` is not `false`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    kind: ApiKind = "approval"
    title: str = Field(min_length=1, max_length=2000, pattern=TEXT)
    tool: str | None = Field(default=None, min_length=1, max_length=200, pattern=NO_CONTROL)
    arguments: BoundedObject = Field(default_factory=dict)
    json_schema: dict[str, Any] | None = Field(
        default=None,
        alias="schema",
        description="JSON Schema (2020-12) of the arguments: enables Edit, with validation. "
        "At most 32 KiB and 16 levels deep; `$ref` only to `#...` inside it; patterns in RE2 "
        "syntax.",
    )
    channel: str | None = Field(default=None, pattern=CHANNEL_ID, max_length=64)
    thread_ts: str | None = Field(
        default=None,
        pattern=THREAD_TS,
        max_length=64,
        description="Post in this thread: one this key's own requests started.",
    )
    requested_by: str | None = Field(
        default=None,
        pattern=USER_ID,
        max_length=64,
        description="A Slack user id, shown on the card (never mentioned, never an approver).",
    )
    approvers: list[Annotated[str, Field(pattern=PRINCIPAL_ID, max_length=64)]] = Field(
        default_factory=list, max_length=100, description="Slack user or group ids."
    )
    min_approvals: int = Field(default=1, ge=1, le=MAX_MIN_APPROVALS)
    allow_self_approval: bool = True
    allowed_decisions: list[Literal["approve", "edit", "reject"]] | None = Field(
        default=None,
        min_length=1,
        max_length=3,
        json_schema_extra={"uniqueItems": True},
        description="Each at most once; `edit` only with a `schema`, and not alone without one.",
    )
    expires_in: float | None = Field(default=None, gt=0, le=MAX_EXPIRES_IN, description="Seconds.")
    callback_url: CallbackUrl | None = Field(
        default=None,
        description="http(s) URL the decision is posted to; its host must be one "
        "SAYSO_CALLBACK_HOSTS allows (and, by default, not a private address).",
    )
    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=200, pattern=KEY_TEXT
    )
    context: BoundedObject | None = None
    answered_in_client: AnsweredInClient | None = Field(
        default=None,
        description="Only for a question its caller's client already answered: it is stored "
        "answered in the key's name, with no card.",
    )
    display: str | None = Field(
        default=None,
        max_length=2900,
        pattern=TEXT,
        description=(
            "Text shown on the card below the title, as Slack mrkdwn (code blocks allowed): "
            "a command, a diff. Not part of the arguments."
        ),
    )


class CancelBody(BaseModel):
    """POST /v1/requests/{id}/cancel (optional body)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    reason: str | None = Field(default=None, max_length=2000, pattern=TEXT)


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
    receipt: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Once decided, when the deployment has SAYSO_SIGNING_KEY: the decision bound to the "
            "SHA-256 of the arguments that will run, Ed25519-signed (check it with "
            "bot.client.verify_receipt and GET /v1/receipts/public-key)."
        ),
    )


class PublicKey(BaseModel):
    """GET /v1/receipts/public-key."""

    algorithm: Literal["Ed25519"]
    public_key: str = Field(description="`ed25519:<base64url of the 32-byte key>`")
    key_id: str
    pem: str


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail

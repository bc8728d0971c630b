"""Store records -> the API's answers (the same JSON for GET and for webhooks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.api.models import ApiDecisionType, ApiKind, ApiStatus, Approval, Decision, RequestState
from store import ApprovalRequestRecord

if TYPE_CHECKING:
    from bot.receipts import ReceiptSigner

_KIND: dict[str, ApiKind] = {"approval": "approval", "hitl": "question", "review": "review"}
_STATUS: dict[str, ApiStatus] = {
    "pending": "pending",
    "approved": "approved",
    "edited": "approved",
    "rejected": "rejected",
    "answered": "answered",
    "expired": "expired",
    "cancelled": "cancelled",
}
_TYPE: dict[str, ApiDecisionType] = {
    "approved": "approve",
    "edited": "edit",
    "rejected": "reject",
    "answered": "answer",
}
REQUEST_KIND_OF: dict[ApiKind, Any] = {
    "approval": "approval",
    "question": "hitl",
    "review": "review",
}


def decision_of(request: ApprovalRequestRecord) -> Decision | None:
    kind = _TYPE.get(request.state.status)
    if kind is None:
        return None
    arguments = None
    if kind in ("approve", "edit"):
        arguments = dict(request.state.edited_arguments or request.spec.arguments or {})
    approvals: list[Approval] = []
    if kind in ("approve", "edit") and request.state.decided_by:
        # every distinct approver towards a quorum, in order; the last one decided it
        people = [p for p in request.state.approvals if p != request.state.decided_by]
        approvals = [Approval(user=p, decision="approve", at=None) for p in people]
        approvals.append(
            Approval(user=request.state.decided_by, decision=kind, at=request.state.decided_at)
        )
    return Decision(
        type=kind,
        arguments=arguments,
        reason=request.state.reason,
        answer=request.state.output if kind == "answer" else None,
        decided_by=request.state.decided_by,
        decided_at=request.state.decided_at,
        approvals=approvals,
    )


def receipt_of(
    request: ApprovalRequestRecord, signer: ReceiptSigner | None
) -> dict[str, Any] | None:
    """The signed receipt of a decided request (None while undecided or with no key). Made
    from the stored decision each time it is read: the same decision, the same receipt."""
    kind = _TYPE.get(request.state.status)
    if signer is None or kind is None:
        return None
    return signer.receipt(
        request_id=request.id,
        tool=request.spec.tool_name,
        arguments=dict(request.state.edited_arguments or request.spec.arguments or {}),
        decision=kind,
        decided_by=request.state.decided_by,
        decided_at=request.state.decided_at,
        rule=request.policy.rule,
    )


def request_state(
    request: ApprovalRequestRecord, signer: ReceiptSigner | None = None
) -> RequestState:
    status = _STATUS[request.state.status]
    if status == "pending" and request.expired_at():
        status = "expired"  # past its deadline; the sweep marks it soon
    return RequestState(
        id=request.id,
        kind=_KIND.get(request.spec.kind, "approval"),
        status=status,
        decision=decision_of(request),
        created_at=request.spec.created_at,
        expires_at=request.policy.expires_at,
        context=(request.spec.api_spec or {}).get("context"),
        channel=request.state.channel_id,
        message_ts=request.state.message_ts,
        receipt=receipt_of(request, signer),
    )


def state_json(
    request: ApprovalRequestRecord, signer: ReceiptSigner | None = None
) -> dict[str, Any]:
    return request_state(request, signer).model_dump(mode="json")


def configured_signer() -> ReceiptSigner | None:
    """The deployment's receipt signer (SAYSO_SIGNING_KEY), read once by each front at start.

    Until the composition root (bot/compose.py) passes the signer to the API front and the
    worker's webhook sender, they read the settings here, through bot.config."""
    from bot.config import ConfigError, load_settings

    try:
        return load_settings().receipt_signer()
    except ConfigError:  # the bot checked its settings at start; a test's may differ
        return None

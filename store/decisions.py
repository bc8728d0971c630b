"""Deciding approval requests exactly once (a conditional write that only a pending request
passes), claiming the run a decision makes ready, and expiring requests nobody decided."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NotRequired, TypedDict, Unpack

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.schema_tool import API_AGENT_PREFIX
from bot.agent.util import utcnow
from bot.agent.vocabulary import DECIDED_STATUSES, DecidedStatus
from store.audit import add_audit
from store.db import READY_CHANNEL, Database, param
from store.records import (
    ApprovalRequestRecord,
    DecisionResult,
    Lease,
)
from store.requests import _one, claim_due, fetch, pause_ready, principals_column, records_of
from store.schema import approval_requests as req
from store.schema import runs


async def _audit_expiry(
    conn: AsyncConnection, r: ApprovalRequestRecord, now: datetime, detail: str
) -> None:
    """Exactly one `expire` event per expired request, by whichever path expired it."""
    await add_audit(
        conn,
        actor="system",
        action="expire",
        run_id=r.spec.run_id,
        call_id=r.spec.call_id,
        request_id=r.id,
        tool_name=r.spec.tool_name,
        arguments=r.spec.arguments,
        outcome="expired",
        detail=detail,
        now=now,
        request=r,
    )


def _hashed_arguments(request: ApprovalRequestRecord, status: DecidedStatus, edited: Any) -> Any:
    return edited if status == "edited" and edited is not None else request.spec.arguments


def _attempt_outcome(request: ApprovalRequestRecord | None, won: bool) -> str:
    if request is None:
        return "not_found"
    if won:
        return "won"
    return "expired" if request.state.status == "expired" else "lost"


def _attempt_detail(
    request: ApprovalRequestRecord | None, won: bool, status: DecidedStatus, reason: str | None
) -> str:
    """What the audit says of one attempt: what was wanted, the reason given with a recorded
    decision, or who decided first."""
    detail = f"wanted={status}"
    if won and reason:
        detail += f" reason={json.dumps(reason, ensure_ascii=False)}"
    if request is not None and not won:
        detail += f" status={request.state.status} decided_by={request.state.decided_by}"
    return detail


class DecisionInput(TypedDict):
    """One attempt to decide a request: who, to what outcome, and what they gave with it."""

    actor: str
    status: DecidedStatus
    reason: NotRequired[str | None]
    edited_arguments: NotRequired[dict[str, Any] | None]
    output: NotRequired[Any]


_DECIDE = (
    req.update()
    .where(
        req.c.id == param("id", req.c.id),
        req.c.status == "pending",
        req.c.expires_at > param("now", req.c.expires_at),
    )
    .values(
        status=param("status", req.c.status),
        decided_by=param("actor", req.c.decided_by),
        decided_at=param("now", req.c.decided_at),
        reason=param("reason", req.c.reason),
        edited_arguments=param("edited", req.c.edited_arguments),
        output=param("output", req.c.output),
    )
    .returning(*req.columns)
)
"""The conditional write that decides a pending request (built once: one per decision)."""
_DECIDE_WITH_APPROVERS = _DECIDE.returning(principals_column("postgresql"))
"""On PostgreSQL the decided request comes back with its approvers, not read after it (on
SQLite `records_of` reads them: SQLAlchemy writes a subquery's columns in SQLite's
`RETURNING` without their table)."""


async def decide(
    db: Database,
    request_id: str,
    *,
    now: datetime | None = None,
    claim: LeaseClaim | None = None,
    **attempt: Unpack[DecisionInput],
) -> DecisionResult:
    # Longer than 60 lines because the conditional write, its audit and the claim are one
    # transaction.
    """Decide a pending request exactly once (audited). With `claim`, a decision that makes
    the run ready also takes its lease in the same transaction (`DecisionResult.lease`)."""
    actor, status, reason = attempt["actor"], attempt["status"], attempt.get("reason")
    edited_arguments, output = attempt.get("edited_arguments"), attempt.get("output")
    if status not in DECIDED_STATUSES:
        raise ValueError(f"Unknown decision {status!r}: use one of {sorted(DECIDED_STATUSES)}")
    if status == "edited" and edited_arguments is None:
        raise ValueError("An edit needs edited_arguments")
    now = now or utcnow()
    won = expired = False
    lease: Lease | None = None
    async with db.write() as conn:
        params = {"p_id": request_id, "p_now": now, "p_status": status, "p_actor": actor}
        params.update(p_reason=reason, p_edited=edited_arguments, p_output=output)
        decide = _DECIDE_WITH_APPROVERS if db.is_postgres else _DECIDE
        decided = (await conn.execute(decide, params)).all()
        won = len(decided) == 1
        request = (await records_of(conn, decided))[0] if won else await _one(conn, request_id)
        if request is not None and not won and request.state.status == "pending":
            # Still pending, so past its deadline: whoever gets here first expires it.
            result = await conn.execute(
                req.update()
                .where(req.c.id == request_id, req.c.status == "pending", req.c.expires_at <= now)
                .values(status="expired", decided_by="system", decided_at=now)
            )
            expired = result.rowcount == 1
            request = await _one(conn, request_id)
            if expired and request is not None:
                await _audit_expiry(conn, request, now, f"noticed by {actor}")
        if won and request is not None and claim is not None:
            lease = await _claim_if_ready(conn, request, claim, now)
        if won and request is not None and lease is None and db.is_postgres:
            # Wake workers as the decision commits (they check whether the run is ready).
            await conn.execute(sa.select(sa.func.pg_notify(READY_CHANNEL, request.spec.run_id)))
        # last: the audit chain's head stays locked from here to the commit
        await add_audit(
            conn,
            actor=actor,
            action="decide",
            run_id=request.spec.run_id if request else None,
            call_id=request.spec.call_id if request else None,
            request_id=request_id,
            tool_name=request.spec.tool_name if request else None,
            arguments=_hashed_arguments(request, status, edited_arguments) if request else None,
            outcome=_attempt_outcome(request, won),
            detail=_attempt_detail(request, won, status, reason),
            now=now,
            request=request if won else None,
        )
    run_ready = lease is not None
    if request is not None and (won or expired) and lease is None:
        # Checked after commit: of two deciders finishing a pause together, the later one
        # sees both decisions (a check inside either transaction could miss the other's).
        run_ready = await pause_ready(db, request.spec.run_id, request.spec.pause_seq)
    return DecisionResult(
        won=won,
        request=request,
        expired=request is not None and request.state.status == "expired" and not won,
        run_ready=run_ready,
        lease=lease,
    )


def _claim_if_ready_statement() -> sa.Update:
    run_id, seq = param("run_id", runs.c.id), param("seq", runs.c.pause_seq)
    now = param("now", runs.c.lease_expires_at)
    pending = sa.exists().where(
        req.c.run_id == run_id, req.c.pause_seq == seq, req.c.status == "pending"
    )
    return (
        runs.update()
        .where(
            runs.c.id == run_id,
            runs.c.status == "waiting_for_human",
            runs.c.pause_seq == seq,
            runs.c.agent_id.not_like(API_AGENT_PREFIX + "%"),
            sa.or_(runs.c.lease_owner.is_(None), runs.c.lease_expires_at < now),
            ~pending,
        )
        .values(
            lease_owner=param("owner", runs.c.lease_owner),
            lease_expires_at=param("expires", runs.c.lease_expires_at),
            version=runs.c.version + 1,
        )
        .returning(runs.c.version)
    )


_CLAIM_IF_READY = _claim_if_ready_statement()


async def _claim_if_ready(
    conn: AsyncConnection, request: ApprovalRequestRecord, claim: LeaseClaim, now: datetime
) -> Lease | None:
    """In the decision's transaction: take the run's lease if this decision completed its
    pause (no request of it pending any more, as this transaction sees it) and nobody holds
    it. One statement instead of a check after commit plus a claim. When another decision of
    the same pause is in flight it still looks pending here: nothing is claimed, and the
    check after commit (`pause_ready`) sees both."""
    expires = now + timedelta(seconds=claim.lease_seconds)
    params = {"p_run_id": request.spec.run_id, "p_seq": request.spec.pause_seq, "p_now": now}
    params.update(p_owner=claim.owner, p_expires=expires)
    version = await conn.scalar(_CLAIM_IF_READY, params)
    if version is None:
        return None
    return Lease(
        run_id=request.spec.run_id, owner=claim.owner, version=int(version), expires_at=expires
    )


@dataclass(frozen=True)
class LeaseClaim:
    """Who takes a run's lease, and for how long, when a decision makes the run ready."""

    owner: str
    lease_seconds: float


async def expire_due(db: Database, now: datetime | None, limit: int) -> list[ApprovalRequestRecord]:
    """Mark pending requests past their deadline `expired`; return only those this call did."""
    now = now or utcnow()
    past = [req.c.status == "pending", req.c.expires_at <= now]
    async with db.write() as conn:
        done = await claim_due(
            conn,
            past,
            req.c.expires_at,
            limit,
            past,
            {"status": "expired", "decided_by": "system", "decided_at": now},
        )
        if not done:
            return []
        records = await fetch(conn, sa.select(req).where(req.c.id.in_(done)))
        for r in records:
            await _audit_expiry(conn, r, now, "deadline sweep")
    return sorted(records, key=lambda r: (r.policy.expires_at, r.id))

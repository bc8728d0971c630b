"""Quorum approvals: a request that needs several distinct people, decided exactly once.

Each approval is a row of `request_approvals` (one per person). The row that completes the
quorum flips the request with the same conditional write as any decision, in the same
transaction, after taking the request's row lock: of two final approvals on two replicas,
the second waits, then finds the request decided and loses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.util import utcnow
from bot.agent.vocabulary import DecidedStatus
from store.audit import add_audit
from store.db import Database, insert_ignore
from store.decisions import decide
from store.records import ApprovalRequestRecord, DecisionResult, RequestPolicy, args_hash
from store.requests import _one, pause_ready
from store.schema import approval_requests as req
from store.schema import request_approvals as rv
from store.schema import request_approvers as ra


@dataclass(frozen=True)
class ApprovalCount:
    """One approval towards a quorum.

    `counted`: this person's approval was new (False: they had approved already).
    `decision`: what the write did to the request (`won` once the quorum is met by this
    approval; a lost or expired attempt when the request was no longer pending)."""

    counted: bool
    decision: DecisionResult

    @property
    def request(self) -> ApprovalRequestRecord | None:
        return self.decision.request


async def _lock(conn: AsyncConnection, db: Database, request_id: str) -> Any:
    """The request's row, locked until the transaction ends (PostgreSQL; SQLite writes are
    serial already)."""
    query = sa.select(
        req.c.status,
        req.c.expires_at,
        req.c.tool_name,
        req.c.arguments,
        req.c.edited_arguments,
        req.c.min_approvals,
    ).where(req.c.id == request_id)
    if db.is_postgres:
        query = query.with_for_update()
    return (await conn.execute(query)).first()


async def count_approval(
    db: Database,
    request_id: str,
    *,
    actor: str,
    edited_arguments: dict[str, Any] | None = None,
    reason: str | None = None,
    now: datetime | None = None,
) -> ApprovalCount:
    """Count `actor`'s approval of a quorum request (an edit first replaces the arguments
    and resets the approvals so far: approvers approve what will run)."""
    now = now or utcnow()
    async with db.write() as conn:
        row = await _lock(conn, db, request_id)
        if row is None or row.status != "pending" or row.expires_at <= now:
            row = None  # decided, expired or gone: the ordinary path says which, and audits
        else:
            counted, won, detail = await _count(conn, db, request_id, row, actor, edited_arguments)
            if won:
                await conn.execute(
                    req.update()
                    .where(req.c.id == request_id, req.c.status == "pending")
                    .values(
                        status="edited" if _edited(row, edited_arguments) else "approved",
                        decided_by=actor,
                        decided_at=now,
                        reason=reason,
                    )
                )
            request = await _one(conn, request_id)
            assert request is not None
            await add_audit(
                conn,
                actor=actor,
                action="decide",
                run_id=request.spec.run_id,
                call_id=request.spec.call_id,
                request_id=request_id,
                tool_name=request.spec.tool_name,
                arguments=_current(row, edited_arguments),
                outcome="won" if won else ("counted" if counted else "repeated"),
                detail=detail + (f" reason={json.dumps(reason)}" if reason and counted else ""),
                now=now,
                request=request if won else None,
            )
    if row is None:
        status: DecidedStatus = "edited" if edited_arguments is not None else "approved"
        outcome = await decide(
            db,
            request_id,
            actor=actor,
            status=status,
            edited_arguments=edited_arguments,
            reason=reason,
            now=now,
        )
        return ApprovalCount(counted=False, decision=outcome)
    assert request is not None
    ready = won and await pause_ready(db, request.spec.run_id, request.spec.pause_seq)
    return ApprovalCount(counted, DecisionResult(won=won, request=request, run_ready=ready))


def _edited(row: Any, edited_arguments: dict[str, Any] | None) -> bool:
    return edited_arguments is not None or row.edited_arguments is not None


def _current(row: Any, edited_arguments: dict[str, Any] | None) -> Any:
    """The arguments approvals are for now: an edit's, else the proposed ones."""
    if edited_arguments is not None:
        return edited_arguments
    return row.edited_arguments if row.edited_arguments is not None else row.arguments


async def _count(
    conn: AsyncConnection,
    db: Database,
    request_id: str,
    row: Any,
    actor: str,
    edited_arguments: dict[str, Any] | None,
) -> tuple[bool, bool, str]:
    """(counted, quorum met, audit detail) for one approval, under the row lock."""
    if edited_arguments is not None:
        await conn.execute(rv.delete().where(rv.c.request_id == request_id))
        await conn.execute(
            req.update().where(req.c.id == request_id).values(edited_arguments=edited_arguments)
        )
    digest = args_hash(row.tool_name, _current(row, edited_arguments)) or ""
    inserted = await conn.execute(
        insert_ignore(db, rv)
        .values(request_id=request_id, approver=actor, at=utcnow(), args_hash=digest)
        .on_conflict_do_nothing(index_elements=["request_id", "approver"])
    )
    total = await conn.scalar(
        sa.select(sa.func.count()).where(rv.c.request_id == request_id, rv.c.args_hash == digest)
    )
    count, needed = int(total or 0), int(row.min_approvals or 1)
    wanted = "edited" if _edited(row, edited_arguments) else "approved"
    detail = f"wanted={wanted} approvals={count}/{needed}"
    if edited_arguments is not None:
        detail += " edit_reset=1"
    return inserted.rowcount == 1, count >= needed, detail


async def reapply_policy(
    db: Database, request_id: str, policy: RequestPolicy
) -> ApprovalRequestRecord | None:
    """Put a pending request under a stricter policy (an edit moved its call under another
    rule): its approvers, quorum, self-approval and reason requirement; its deadline stays.
    Returns the request as it is after (unchanged when it was no longer pending)."""
    async with db.write() as conn:
        changed = await conn.execute(
            req.update()
            .where(req.c.id == request_id, req.c.status == "pending")
            .values(
                min_approvals=policy.min_approvals,
                require_reason=policy.require_reason,
                allow_self_approval=policy.allow_self_approval,
                rule=policy.rule,
            )
        )
        if changed.rowcount == 1:
            await conn.execute(ra.delete().where(ra.c.request_id == request_id))
            await conn.execute(
                ra.insert(),
                [{"request_id": request_id, "principal": p} for p in policy.principals],
            )
        return await _one(conn, request_id)

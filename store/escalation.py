"""Escalation: a request undecided past its `escalate_at` calls in more people, exactly once."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from bot.agent.util import utcnow
from store.audit import add_audit
from store.db import Database, insert_ignore
from store.records import ApprovalRequestRecord
from store.requests import claim_due, fetch
from store.schema import approval_requests as req
from store.schema import request_approvers as ra


async def escalate_due(
    db: Database, now: datetime | None, limit: int
) -> list[ApprovalRequestRecord]:
    """Claim pending requests past their escalation time (never escalated, not expired):
    their `escalate_to` may now decide too. Returns only those this call escalated (safe in
    every replica at once: the claim is a conditional update on `escalated_at`)."""
    now = now or utcnow()
    unescalated = [req.c.status == "pending", req.c.escalated_at.is_(None)]
    due = [*unescalated, req.c.escalate_at <= now, req.c.expires_at > now]
    async with db.write() as conn:
        done = await claim_due(
            conn, due, req.c.escalate_at, limit, unescalated, {"escalated_at": now}
        )
        if not done:
            return []
        records = await fetch(conn, sa.select(req).where(req.c.id.in_(done)))
        for r in records:
            called_in = [str(p) for p in (r.policy.escalate_to or [])]
            if called_in and not r.policy.anyone:
                await conn.execute(
                    insert_ignore(db, ra)
                    .values([{"request_id": r.id, "principal": p} for p in called_in])
                    .on_conflict_do_nothing(index_elements=["request_id", "principal"])
                )
            await add_audit(
                conn,
                actor="system",
                action="escalate",
                run_id=r.spec.run_id,
                call_id=r.spec.call_id,
                request_id=r.id,
                tool_name=r.spec.tool_name,
                arguments=r.spec.arguments,
                outcome="escalated",
                detail="to=" + ",".join(called_in),
                now=now,
            )
        return await fetch(conn, sa.select(req).where(req.c.id.in_(done)))

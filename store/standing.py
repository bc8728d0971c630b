"""Standing approvals: one tool, one thread, until a time or a revoke (the SQL behind
`store.standing`; the table keeps its first name, `standing_grants`)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from bot.agent.util import utcnow
from store.audit import add_audit
from store.db import Database
from store.records import StandingApproval
from store.schema import standing_grants as g

_COLUMNS = [c.name for c in g.columns]


def _record(row: Any) -> StandingApproval:
    m = row._mapping
    return StandingApproval(**{name: m[name] for name in _COLUMNS})


async def add(
    db: Database,
    *,
    agent_id: str,
    tool_name: str,
    channel_id: str,
    thread_ts: str,
    granted_by: str,
    lasts: timedelta,
    request_id: str | None,
    run_id: str | None,
    now: datetime | None = None,
) -> StandingApproval:
    now = now or utcnow()
    approval_id = uuid.uuid4().hex
    values = {
        "id": approval_id,
        "agent_id": agent_id,
        "tool_name": tool_name,
        "channel_id": channel_id,
        "thread_ts": thread_ts,
        "granted_by": granted_by,
        "granted_at": now,
        "expires_at": now + lasts,
        "request_id": request_id,
    }
    async with db.write() as conn:
        await conn.execute(g.insert().values(**values))
        await add_audit(
            conn,
            actor=granted_by,
            action="grant",
            run_id=run_id,
            request_id=request_id,
            tool_name=tool_name,
            outcome="granted",
            detail=f"grant={approval_id} seconds={int(lasts.total_seconds())}",
            now=now,
        )
    return StandingApproval(**values)  # type: ignore[arg-type]


async def live(
    db: Database,
    *,
    agent_id: str,
    tool_name: str,
    channel_id: str,
    thread_ts: str,
    now: datetime | None = None,
) -> StandingApproval | None:
    """The newest unrevoked, unexpired standing approval for this tool in this thread, if any."""
    now = now or utcnow()
    query = (
        sa.select(g)
        .where(
            g.c.channel_id == channel_id,
            g.c.thread_ts == thread_ts,
            g.c.tool_name == tool_name,
            g.c.agent_id == agent_id,
            g.c.revoked_at.is_(None),
            g.c.expires_at > now,
        )
        .order_by(g.c.granted_at.desc())
        .limit(1)
    )
    async with db.read() as conn:
        row = (await conn.execute(query)).first()
    return _record(row) if row else None


async def get(db: Database, approval_id: str) -> StandingApproval | None:
    async with db.read() as conn:
        row = (await conn.execute(sa.select(g).where(g.c.id == approval_id))).first()
    return _record(row) if row else None


async def set_message(db: Database, approval_id: str, message_ts: str) -> None:
    async with db.write() as conn:
        await conn.execute(g.update().where(g.c.id == approval_id).values(message_ts=message_ts))


async def revoke(
    db: Database, approval_id: str, actor: str, now: datetime | None = None
) -> tuple[bool, StandingApproval | None]:
    """Revoke once: (this call revoked it, the standing approval as it is now)."""
    now = now or utcnow()
    async with db.write() as conn:
        done = await conn.execute(
            g.update()
            .where(g.c.id == approval_id, g.c.revoked_at.is_(None))
            .values(revoked_at=now, revoked_by=actor)
        )
        row = (await conn.execute(sa.select(g).where(g.c.id == approval_id))).first()
        if done.rowcount == 1 and row is not None:
            await add_audit(
                conn,
                actor=actor,
                action="revoke",
                request_id=row.request_id,
                tool_name=row.tool_name,
                outcome="revoked",
                detail=f"grant={approval_id}",
                now=now,
            )
    return done.rowcount == 1, (_record(row) if row else None)

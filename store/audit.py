"""The append-only audit trail and Slack event deduplication."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.util import utcnow
from store.db import Database, insert_ignore
from store.records import AuditEvent, args_hash
from store.schema import audit_events, slack_events


async def add_audit(
    conn: AsyncConnection,
    *,
    actor: str | None,
    action: str,
    run_id: str | None,
    call_id: str | None,
    request_id: str | None,
    tool_name: str | None,
    arguments: Any,
    outcome: str,
    detail: str | None,
    now: datetime | None = None,
) -> None:
    """Append one event inside the caller's transaction (it commits with the change)."""
    await conn.execute(
        audit_events.insert().values(
            at=now or utcnow(),
            actor=actor,
            action=action,
            run_id=run_id,
            call_id=call_id,
            request_id=request_id,
            tool_name=tool_name,
            args_hash=args_hash(tool_name, arguments),
            outcome=outcome,
            detail=detail,
        )
    )


async def audit(db: Database, **fields: Any) -> None:
    async with db.write() as conn:
        await add_audit(conn, **fields)


async def audit_trail(db: Database, run_id: str) -> list[AuditEvent]:
    query = sa.select(audit_events).where(audit_events.c.run_id == run_id)
    async with db.read() as conn:
        rows = (await conn.execute(query.order_by(audit_events.c.id))).all()
    return [AuditEvent(**dict(r._mapping)) for r in rows]


async def first_delivery(db: Database, event_id: str) -> bool:
    statement = (
        insert_ignore(db, slack_events)
        .values(event_id=event_id, received_at=utcnow())
        .on_conflict_do_nothing(index_elements=["event_id"])
    )
    async with db.write() as conn:
        return (await conn.execute(statement)).rowcount == 1


async def purge_events(db: Database, older_than: timedelta) -> int:
    cutoff = utcnow() - older_than
    async with db.write() as conn:
        result = await conn.execute(
            slack_events.delete().where(slack_events.c.received_at < cutoff)
        )
    return result.rowcount

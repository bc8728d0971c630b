"""The append-only audit trail and Slack event deduplication."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NotRequired, TypedDict, Unpack

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.util import utcnow
from store.db import Database, insert_ignore
from store.records import AuditEvent, args_hash
from store.schema import audit_events, slack_events


class AuditEntry(TypedDict):
    """One event of the audit trail: who did what to which run, call and request, and how it
    ended. The arguments are kept only as a hash (`args_hash`)."""

    actor: str | None
    action: str
    outcome: str
    run_id: NotRequired[str | None]
    call_id: NotRequired[str | None]
    request_id: NotRequired[str | None]
    tool_name: NotRequired[str | None]
    arguments: NotRequired[Any]
    detail: NotRequired[str | None]


async def add_audit(
    conn: AsyncConnection, *, now: datetime | None = None, **entry: Unpack[AuditEntry]
) -> None:
    """Append one event inside the caller's transaction (it commits with the change)."""
    tool_name = entry.get("tool_name")
    await conn.execute(
        audit_events.insert().values(
            at=now or utcnow(),
            actor=entry["actor"],
            action=entry["action"],
            run_id=entry.get("run_id"),
            call_id=entry.get("call_id"),
            request_id=entry.get("request_id"),
            tool_name=tool_name,
            args_hash=args_hash(tool_name, entry.get("arguments")),
            outcome=entry["outcome"],
            detail=entry.get("detail"),
        )
    )


async def audit(db: Database, **entry: Unpack[AuditEntry]) -> None:
    """Append one event in a transaction of its own."""
    async with db.write() as conn:
        await add_audit(conn, **entry)


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

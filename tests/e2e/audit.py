"""Reading the audit trail of events that belong to no run (refusals before a run exists)."""

from __future__ import annotations

import sqlalchemy as sa

from store import Store
from store.schema import audit_events


async def audit_events_of(store: Store, actor: str) -> list[tuple[str, str, str | None]]:
    """(action, outcome, detail) of every audit event by `actor`, oldest first."""
    query = (
        sa.select(audit_events.c.action, audit_events.c.outcome, audit_events.c.detail)
        .where(audit_events.c.actor == actor)
        .order_by(audit_events.c.id)
    )
    async with store.db.read() as conn:
        return [(r.action, r.outcome, r.detail) for r in (await conn.execute(query)).all()]

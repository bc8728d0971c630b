"""Reading the outbox (queue depth, a row, what is left) and its upkeep (purge, the one
sender's lease): parts of `Outbox` (store/outbox.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from bot.agent.util import utcnow
from store.db import Database
from store.outbox_rows import PENDING, OutboxRow, aware, insert_ignore_key, outbox_row
from store.schema import slack_outbox as ob
from store.schema import slack_senders

PENDING_FACTS = (
    "key",
    "kind",
    "version",
    "sent_version",
    "attempts",
    "after_key",
    "next_attempt_at",
    "claim_expires_at",
    "last_error",
)
"""What `pending` tells of each row left (a drain that timed out names them)."""


class OutboxReads:
    """The reads and upkeep of `Outbox` (a part of it: `Outbox` inherits them)."""

    db: Database

    # -- the sender lease ---------------------------------------------------------------------

    async def hold_sender(self, owner: str, lease_seconds: float, scope: str = "*") -> bool:
        """Take or renew the lease of the one dispatcher that sends (True: `owner` holds it
        for `lease_seconds`). Slack's limits are per workspace: one sender paces them."""
        now = utcnow()
        expires = now + timedelta(seconds=lease_seconds)
        async with self.db.write() as conn:
            statement = insert_ignore_key(self.db, slack_senders, "scope")
            inserted = await conn.execute(
                statement.values(scope=scope, owner=owner, expires_at=expires)
            )
            if inserted.rowcount == 1:
                return True
            updated = await conn.execute(
                slack_senders.update()
                .where(
                    slack_senders.c.scope == scope,
                    sa.or_(slack_senders.c.owner == owner, slack_senders.c.expires_at < now),
                )
                .values(owner=owner, expires_at=expires)
            )
        return updated.rowcount == 1

    async def release_sender(self, owner: str, scope: str = "*") -> None:
        """Give the sender lease up (a stopping dispatcher): another takes it at once."""
        async with self.db.write() as conn:
            await conn.execute(
                slack_senders.delete().where(
                    slack_senders.c.scope == scope, slack_senders.c.owner == owner
                )
            )

    # -- reading ------------------------------------------------------------------------------

    async def get(self, key: str) -> OutboxRow | None:
        async with self.db.read() as conn:
            row = (await conn.execute(sa.select(ob).where(ob.c.key == key))).first()
        return outbox_row(row._mapping) if row else None

    async def with_prefix(self, prefix: str) -> list[OutboxRow]:
        """The rows whose key starts with `prefix` (a run's answer rows, after a crash)."""
        query = sa.select(ob).where(ob.c.key.startswith(prefix, autoescape=True))
        async with self.db.read() as conn:
            return [outbox_row(row._mapping) for row in (await conn.execute(query)).all()]

    async def ts_of(self, key: str) -> str | None:
        """The Slack ts of the row's message once posted (None before)."""
        async with self.db.read() as conn:
            return await conn.scalar(sa.select(ob.c.ts).where(ob.c.key == key))

    async def pending_stats(self, now: datetime | None = None) -> tuple[int, float]:
        """The queue depth and the oldest pending row's age in seconds, in one query."""
        now = now or utcnow()
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(sa.func.count(), sa.func.min(ob.c.pending_since)).where(
                        ob.c.state == PENDING
                    )
                )
            ).one()
        count, oldest = int(row[0] or 0), row[1]
        age = 0.0 if oldest is None else max(0.0, (now - aware(oldest)).total_seconds())
        return count, age

    async def pending_count(self) -> int:
        """Rows with something left to send (queue depth)."""
        async with self.db.read() as conn:
            count = await conn.scalar(
                sa.select(sa.func.count()).select_from(ob).where(ob.c.state == PENDING)
            )
        return int(count or 0)

    async def pending(self, limit: int = 10) -> list[dict[str, Any]]:
        """The oldest rows still to send, as plain facts (what a drain that timed out names)."""
        cols = [ob.c[name] for name in PENDING_FACTS]
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(*cols)
                .where(ob.c.state == PENDING)
                .order_by(ob.c.pending_since)
                .limit(limit)
            )
        return [dict(r._mapping) for r in rows]

    async def oldest_pending_age(self, now: datetime | None = None) -> float:
        """Seconds the oldest pending row has waited (0 when none is pending)."""
        now = now or utcnow()
        async with self.db.read() as conn:
            oldest = await conn.scalar(
                sa.select(sa.func.min(ob.c.pending_since)).where(ob.c.state == PENDING)
            )
        if oldest is None:
            return 0.0
        return max(0.0, (now - aware(oldest)).total_seconds())

    async def next_due_in(self, now: datetime | None = None) -> float | None:
        """Seconds until the earliest pending row is due (None when nothing is pending)."""
        now = now or utcnow()
        async with self.db.read() as conn:
            at = await conn.scalar(
                sa.select(sa.func.min(ob.c.next_attempt_at)).where(ob.c.state == PENDING)
            )
        if at is None:
            return None
        return max(0.0, (aware(at) - now).total_seconds())

    async def purge(self, older_than: timedelta) -> int:
        """Delete rows with nothing left to send, unchanged for `older_than`."""
        cutoff = utcnow() - older_than
        async with self.db.write() as conn:
            result = await conn.execute(
                ob.delete().where(ob.c.state != PENDING, ob.c.updated_at < cutoff)
            )
        return int(result.rowcount or 0)

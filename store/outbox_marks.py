"""What became of a claimed outbox row: sent, failed (retry or give up), adopted, unsure,
dropped (store/outbox.py has the protocol these marks are part of)."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.util import utcnow
from store import outbox_sql as sql
from store.db import Database
from store.outbox_rows import DROPPED, PENDING, claim_free, held
from store.schema import slack_outbox as ob


class Marked(enum.IntEnum):
    """What `mark_sent` did (false when the claim had lapsed)."""

    LAPSED = 0
    SENT = 1
    PENDING = 2
    """Sent, and a newer version was put meanwhile: the row is due again at once."""
    AWAITED = 3
    """Posted, and pending rows wait for it (in its thread, or after it): due now."""


class OutboxMarks:
    """The marks of `Outbox` (a part of it: `Outbox` inherits them)."""

    db: Database

    async def mark_sent(
        self,
        key: str,
        version: int,
        ts: str | None = None,
        *,
        claim: str | None = None,
        progress: int | None = None,
    ) -> Marked:
        """`version` reached Slack (`ts`: the message's, once posted). The row stays pending
        when a newer version was put meanwhile (`Marked.PENDING`: its sender claims it again).
        With `claim`, only that claim's holder may (`Marked.LAPSED` otherwise; a ts is still
        recorded if the row had none)."""
        now = utcnow()
        statement = sql.mark_sent(
            self.db.is_postgres, claim is not None, ts is not None, progress is not None
        )
        params = {"p_key": key, "p_claim": claim, "p_version": version, "p_now": now}
        params.update(p_ts=ts, p_progress=progress)
        async with self.db.write(single=True) as conn:
            row = (await conn.execute(statement, params)).first()
            if row is None and ts is not None:  # our claim lapsed: keep the fact
                await conn.execute(
                    ob.update().where(ob.c.key == key).values(ts=sa.func.coalesce(ob.c.ts, ts))
                )
            waited_for = ts is not None and row is not None and await self._awaited(conn, row, key)
        if row is None:
            return Marked.LAPSED
        if row.state == PENDING:
            return Marked.PENDING
        return Marked.AWAITED if waited_for else Marked.SENT

    async def _awaited(self, conn: AsyncConnection, row: Any, key: str) -> bool:
        """Do rows wait for this posted message? (PostgreSQL: said by the mark itself.)"""
        if self.db.is_postgres:
            return bool(row.awaited)
        return bool(await conn.scalar(sa.select(sql.awaited(sa.literal(key)))))

    async def mark_failed(
        self,
        key: str,
        retry_at: datetime | None,
        error: str,
        *,
        claim: str | None = None,
        maybe_sent: bool = False,
        count: bool = True,
    ) -> bool:
        """The attempt failed: retry at `retry_at` (None: give up, state `failed`).
        `maybe_sent` becomes the row's `unsure`: pass False only when neither this attempt nor
        an earlier one (the claimed row's `unsure`) may have posted. `count=False` releases
        the row without counting an attempt (paced, or Slack known to be down)."""
        statement = sql.mark_failed(claim is not None, count, retry_at is None)
        params: dict[str, Any] = {"p_key": key, "p_claim": claim, "p_now": utcnow()}
        params.update(p_error=error[:1000], p_unsure=maybe_sent, p_retry_at=retry_at)
        async with self.db.write(single=True) as conn:
            result = await conn.execute(statement, params)
        return result.rowcount == 1

    async def adopt(
        self, key: str, ts: str, *, claim: str | None = None, progress: int | None = None
    ) -> bool:
        """The row's message exists in Slack (a lookup found it, or a stream just started):
        keep its ts, so nothing is posted again (`progress`: a stream's characters sent)."""
        values: dict[str, Any] = {
            "ts": sa.func.coalesce(ob.c.ts, ts),
            "unsure": False,
            "updated_at": utcnow(),
        }
        if progress is not None:
            values["progress"] = progress
        async with self.db.write(single=True) as conn:
            result = await conn.execute(ob.update().where(held(key, claim)).values(**values))
        return result.rowcount == 1

    async def mark_unsure(self, key: str, *, claim: str | None = None) -> bool:
        """A post of the row is about to start outside the usual claim (an ephemeral said as
        a DM): after a crash it counts as maybe sent, never sent twice."""
        async with self.db.write(single=True) as conn:
            result = await conn.execute(ob.update().where(held(key, claim)).values(unsure=True))
        return result.rowcount == 1

    async def drop(self, key: str, reason: str, *, claim: str | None = None) -> bool:
        """Give the row up unsent (state `dropped`): an expired or uncertain ephemeral."""
        async with self.db.write(single=True) as conn:
            result = await conn.execute(
                ob.update()
                .where(held(key, claim))
                .values(
                    state=DROPPED,
                    claim_token=None,
                    claim_expires_at=None,
                    last_error=reason,
                    updated_at=utcnow(),
                )
            )
        return result.rowcount == 1

    async def drop_expired(self, now: datetime | None = None) -> list[str]:
        """Give up pending rows past their expiry (state `dropped`); returns their keys."""
        now = now or utcnow()
        cond = sa.and_(ob.c.state == PENDING, ob.c.expires_at <= now, claim_free(now))
        async with self.db.write() as conn:
            keys = list((await conn.scalars(sa.select(ob.c.key).where(cond))).all())
            if keys:
                await conn.execute(
                    ob.update()
                    .where(ob.c.key.in_(keys), cond)
                    .values(state=DROPPED, updated_at=now, last_error="expired")
                )
        return keys

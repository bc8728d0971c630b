"""Requests per API key per minute, counted in the database so that every replica shares one
count (issue 21, finding 10).

A sliding-window counter: the count of the current minute plus the previous minute's, weighted
by how much of it still lies within the last 60 s. One write per request: the upsert that
counts it (undone when the request is refused, so a caller retrying too early does not push
its own window further).

A busy key's requests would all write one row (a hot spot every replica queues on), so a
process takes a key's units ahead (`QuotaAhead`): about half a second of the key's rate at once,
spent locally within the same minute. Never more than the quota is let through; units held
ahead by one replica and unused are counted all the same, so a key near its limit may be refused
up to that many units early per replica (none for quotas under 240 a minute: one unit at once).
"""

from __future__ import annotations

import asyncio
import math
import time

import sqlalchemy as sa

from store.db import Database, insert_ignore
from store.schema import api_quota as q

WINDOW = 60
MOST_AHEAD = 50  # units a process takes ahead at once, at most


async def take(
    db: Database, key_name: str, per_minute: int, now: float | None = None, units: int = 1
) -> int | None:
    """None when the key may make this request (it is counted; `units`: as many), else the
    seconds until it may."""
    now = time.time() if now is None else now
    minute = int(now // WINDOW)
    into = (now % WINDOW) / WINDOW
    this = (q.c.key_name == key_name) & (q.c.minute == minute)
    counted = (
        insert_ignore(db, q)
        .values(key_name=key_name, minute=minute, count=units)
        .on_conflict_do_update(
            index_elements=[q.c.key_name, q.c.minute], set_={"count": q.c.count + units}
        )
        .returning(q.c.count)
    )
    async with db.write() as conn:
        count = int((await conn.execute(counted)).scalar_one())
        before = await conn.execute(
            sa.select(q.c.count).where(q.c.key_name == key_name, q.c.minute == minute - 1)
        )
        previous = int(before.scalar() or 0)
        if count == units:  # a new minute: the ones before the previous are of no more use
            await conn.execute(q.delete().where(q.c.key_name == key_name, q.c.minute < minute - 1))
        estimate = previous * (1 - into) + count
        if estimate <= per_minute:
            return None
        await conn.execute(q.update().where(this).values(count=q.c.count - units))
    left = WINDOW * (1 - into)  # this minute's own count only drops when it ends
    if previous and count <= per_minute:  # the previous minute's share fades meanwhile
        left = min(left, WINDOW * (estimate - per_minute) / previous)
    return max(1, math.ceil(left))


class QuotaAhead:
    """A process's units of each key's quota, taken ahead from the database (see above)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._held: dict[str, tuple[int, int]] = {}  # key -> (minute, units left)
        self._refilling: dict[str, asyncio.Lock] = {}

    async def take(self, key_name: str, per_minute: int, now: float | None = None) -> int | None:
        """As `take`, from the units held ahead when there are some for this minute."""
        now = time.time() if now is None else now
        ahead = min(MOST_AHEAD, per_minute // 120)
        if ahead <= 1:
            return await take(self.db, key_name, per_minute, now)
        if self._spend(key_name, now):
            return None
        async with self._refilling.setdefault(key_name, asyncio.Lock()):
            if self._spend(key_name, now):  # another request refilled meanwhile
                return None
            if await take(self.db, key_name, per_minute, now, units=ahead) is None:
                self._held[key_name] = (int(now // WINDOW), ahead - 1)
                return None
        return await take(self.db, key_name, per_minute, now)  # near the limit: one at a time

    def _spend(self, key_name: str, now: float) -> bool:
        minute, left = self._held.get(key_name, (-1, 0))
        if minute != int(now // WINDOW) or left <= 0:
            return False
        self._held[key_name] = (minute, left - 1)
        return True

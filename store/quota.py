"""Requests per API key per minute, counted in the database so that every replica shares one
count (issue 21, finding 10).

A sliding-window counter: the count of the current minute plus the previous minute's, weighted
by how much of it still lies within the last 60 s. One write per request: the upsert that
counts it (undone when the request is refused, so a caller retrying too early does not push
its own window further).
"""

from __future__ import annotations

import math
import time

import sqlalchemy as sa

from store.db import Database, insert_ignore
from store.schema import api_quota as q

WINDOW = 60


async def take(
    db: Database, key_name: str, per_minute: int, now: float | None = None
) -> int | None:
    """None when the key may make this request (it is counted), else the seconds until it may."""
    now = time.time() if now is None else now
    minute = int(now // WINDOW)
    into = (now % WINDOW) / WINDOW
    this = (q.c.key_name == key_name) & (q.c.minute == minute)
    counted = (
        insert_ignore(db, q)
        .values(key_name=key_name, minute=minute, count=1)
        .on_conflict_do_update(
            index_elements=[q.c.key_name, q.c.minute], set_={"count": q.c.count + 1}
        )
        .returning(q.c.count)
    )
    async with db.write() as conn:
        count = int((await conn.execute(counted)).scalar_one())
        before = await conn.execute(
            sa.select(q.c.count).where(q.c.key_name == key_name, q.c.minute == minute - 1)
        )
        previous = int(before.scalar() or 0)
        if count == 1:  # a new minute: the ones before the previous are of no more use
            await conn.execute(q.delete().where(q.c.key_name == key_name, q.c.minute < minute - 1))
        estimate = previous * (1 - into) + count
        if estimate <= per_minute:
            return None
        await conn.execute(q.update().where(this).values(count=q.c.count - 1))
    left = WINDOW * (1 - into)  # this minute's own count only drops when it ends
    if previous and count <= per_minute:  # the previous minute's share fades meanwhile
        left = min(left, WINDOW * (estimate - per_minute) / previous)
    return max(1, math.ceil(left))

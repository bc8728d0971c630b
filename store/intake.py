"""The Slack intake: what a person did is a row before it is acknowledged (issue 22).

A listener verifies the request, `record`s the payload under a key made of Slack's own ids
(a retried delivery or a double click is the same row: insert-ignore), then acks, then
processes the row and marks it `done`. The recording replica holds the row for `lease`
seconds; a row still pending after that (its process died between the ack and `done`) is
claimed by any replica (`claim`, PostgreSQL `FOR UPDATE SKIP LOCKED`) and processed again:
processing must be idempotent (the decide path already is: a click recorded twice decides
once).

Keys (the listeners choose; examples): `action:{container message ts}:{action_ts}:{user}`,
`view:{view_id}:{view hash}`, `command:{trigger_id}`, `event:{event_id}`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from bot.agent.util import utcnow
from store.db import Database, insert_ignore, insert_ignore_for, param
from store.schema import slack_intake as it

PENDING, DONE = "pending", "done"


@dataclass(frozen=True)
class IntakeRow:
    key: str
    kind: str
    payload: dict[str, Any]
    status: str
    received_at: datetime
    attempts: int
    claim_owner: str | None
    claim_expires_at: datetime | None
    done_at: datetime | None
    result: Any


def _row(row: Any) -> IntakeRow:
    m = row._mapping
    return IntakeRow(**{c.name: m[c.name] for c in it.columns})


def _free(now: datetime) -> sa.ColumnElement[bool]:
    return sa.or_(it.c.claim_owner.is_(None), it.c.claim_expires_at < now)


class Intake:
    """Recorded Slack interactions: `record` before the ack, `done` after processing."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(
        self,
        key: str,
        kind: str,
        payload: dict[str, Any],
        *,
        owner: str | None = None,
        lease: float = 30.0,
    ) -> bool:
        """Insert the interaction unless its key is known; True when it is new. With `owner`
        the new row is held by it for `lease` seconds (it processes the row inline; others
        take it over only if it has not called `done` by then)."""
        now = utcnow()
        statement = insert_ignore(self.db, it).values(
            key=key,
            kind=kind,
            payload=payload,
            status=PENDING,
            received_at=now,
            attempts=1 if owner else 0,
            claim_owner=owner,
            claim_expires_at=now + timedelta(seconds=lease) if owner else None,
        )
        async with self.db.write(urgent=True) as conn:  # an ack may wait for it
            result = await conn.execute(statement.on_conflict_do_nothing(index_elements=["key"]))
        return result.rowcount == 1

    async def claim(
        self, owner: str, lease: float = 30.0, *, limit: int = 10, now: datetime | None = None
    ) -> list[IntakeRow]:
        """Claim up to `limit` pending rows nobody holds (never claimed, or their holder's
        lease lapsed), oldest first, for `lease` seconds."""
        now = now or utcnow()
        query = (
            sa.select(it.c.key, it.c.attempts)
            .where(it.c.status == PENDING, _free(now))
            .order_by(it.c.received_at)
            .limit(limit)
        )
        if self.db.is_postgres:
            query = query.with_for_update(skip_locked=True)
        keys: list[str] = []
        async with self.db.write() as conn:
            for row in (await conn.execute(query)).all():
                written = await conn.execute(
                    it.update()
                    .where(it.c.key == row.key, it.c.attempts == row.attempts, _free(now))
                    .values(
                        claim_owner=owner,
                        claim_expires_at=now + timedelta(seconds=lease),
                        attempts=row.attempts + 1,
                    )
                )
                if written.rowcount == 1:
                    keys.append(row.key)
            if not keys:
                return []
            rows = (await conn.execute(sa.select(it).where(it.c.key.in_(keys)))).all()
        order = {k: i for i, k in enumerate(keys)}
        return sorted((_row(r) for r in rows), key=lambda r: order[r.key])

    async def claim_one(self, key: str, owner: str, lease: float = 30.0) -> IntakeRow | None:
        """Claim one pending row by key (None if done, unknown, or held by someone else)."""
        now = utcnow()
        async with self.db.write() as conn:
            written = await conn.execute(
                it.update()
                .where(it.c.key == key, it.c.status == PENDING, _free(now))
                .values(
                    claim_owner=owner,
                    claim_expires_at=now + timedelta(seconds=lease),
                    attempts=it.c.attempts + 1,
                )
            )
            if written.rowcount != 1:
                return None
            row = (await conn.execute(sa.select(it).where(it.c.key == key))).first()
        return _row(row) if row else None

    async def release(self, key: str, owner: str) -> bool:
        """Give a held row back unprocessed: any replica may claim it at once."""
        async with self.db.write() as conn:
            result = await conn.execute(
                it.update()
                .where(it.c.key == key, it.c.claim_owner == owner, it.c.status == PENDING)
                .values(claim_owner=None, claim_expires_at=None)
            )
        return result.rowcount == 1

    async def wait(self, key: str, owner: str, seconds: float) -> bool:
        """`owner` could not process the row for now (Slack is away): any replica replays it
        after `seconds`, and this try is not counted among its attempts (an outage is not a
        bug: the row is never given up for it)."""
        now = utcnow()
        async with self.db.write() as conn:
            written = await conn.execute(
                it.update()
                .where(it.c.key == key, it.c.claim_owner == owner, it.c.status == PENDING)
                .values(
                    claim_expires_at=now + timedelta(seconds=seconds),
                    attempts=sa.case((it.c.attempts > 0, it.c.attempts - 1), else_=0),
                )
            )
        return written.rowcount == 1

    async def done(self, key: str, result: Any = None) -> bool:
        """The row was processed (`result`: a small JSON summary). True the first time."""
        now = utcnow()
        async with self.db.write() as conn:
            written = await conn.execute(
                it.update()
                .where(it.c.key == key, it.c.status == PENDING)
                .values(
                    status=DONE,
                    done_at=now,
                    result=result,
                    claim_owner=None,
                    claim_expires_at=None,
                )
            )
        return written.rowcount == 1

    async def get(self, key: str) -> IntakeRow | None:
        async with self.db.read() as conn:
            row = (await conn.execute(sa.select(it).where(it.c.key == key))).first()
        return _row(row) if row else None

    async def pending_count(self) -> int:
        async with self.db.read() as conn:
            count = await conn.scalar(
                sa.select(sa.func.count()).select_from(it).where(it.c.status == PENDING)
            )
        return int(count or 0)

    async def purge(self, older_than: timedelta) -> int:
        """Delete processed rows received before now - older_than."""
        cutoff = utcnow() - older_than
        async with self.db.write() as conn:
            result = await conn.execute(
                it.delete().where(it.c.status == DONE, it.c.received_at < cutoff)
            )
        return int(result.rowcount or 0)

    async def renew(self, key: str, owner: str, lease: float = 30.0) -> bool:
        """Extend `owner`'s hold on a pending row it still holds (a long processing)."""
        now = utcnow()
        async with self.db.write() as conn:
            written = await conn.execute(
                it.update()
                .where(it.c.key == key, it.c.claim_owner == owner, it.c.status == PENDING)
                .values(claim_expires_at=now + timedelta(seconds=lease))
            )
        return written.rowcount == 1

    async def record_many(
        self,
        interactions: list[tuple[str, str, dict[str, Any]]],
        *,
        owner: str,
        lease: float = 30.0,
    ) -> set[str]:
        """`record` for several (key, kind, payload) in one transaction (one commit for a
        burst of clicks): the keys that were new."""
        return await self.write_batch(interactions, [], owner=owner, lease=lease)

    async def done_many(self, processed: list[tuple[str, Any]]) -> None:
        """`done` for several (key, result) in one transaction."""
        await self.write_batch([], processed, owner="")

    async def write_batch(
        self,
        interactions: list[tuple[str, str, dict[str, Any]]],
        processed: list[tuple[str, Any]],
        *,
        owner: str,
        lease: float = 30.0,
    ) -> set[str]:
        """Record `interactions` (held by `owner`) and close `processed` rows, in one
        statement each (one transaction on SQLite): the keys recorded that were new."""
        now = utcnow()
        new: set[str] = set()
        # acks wait for the records: urgent (SQLite: the next writer's turn), not for the
        # closings alone; each statement is sound on its own (PostgreSQL: autocommit)
        async with self.db.write(single=True, urgent=bool(interactions)) as conn:
            if interactions:
                new = await self._insert(conn, interactions, owner, now, lease)
            for result, keys in _by_result(processed).values():
                await conn.execute(_CLOSE, {"p_keys": keys, "p_now": now, "p_result": result})
        return new

    async def _insert(
        self,
        conn: Any,
        interactions: list[tuple[str, str, dict[str, Any]]],
        owner: str,
        now: datetime,
        lease: float,
    ) -> set[str]:
        expires = now + timedelta(seconds=lease)
        rows = [
            {
                "key": key,
                "kind": kind,
                "payload": payload,
                "status": PENDING,
                "received_at": now,
                "attempts": 1,
                "claim_owner": owner,
                "claim_expires_at": expires,
            }
            for key, kind, payload in interactions
        ]
        statement = _record(self.db.dialect)
        result = await conn.execute(statement, rows)  # compiled once, whatever the count
        return {row.key for row in result.all()}


@functools.cache
def _record(dialect: str) -> Any:
    """The insert of new rows (executemany), built once per dialect."""
    return (
        insert_ignore_for(dialect, it)
        .on_conflict_do_nothing(index_elements=["key"])
        .returning(it.c.key)
    )


_CLOSE = (
    it.update()
    .where(it.c.key.in_(sa.bindparam("p_keys", expanding=True)), it.c.status == PENDING)
    .values(
        status=DONE,
        done_at=param("now", it.c.done_at),
        result=param("result", it.c.result),
        claim_owner=None,
        claim_expires_at=None,
    )
)
"""Close processed rows of one result (params: p_keys, p_now, p_result)."""


def _by_result(processed: list[tuple[str, Any]]) -> dict[str, tuple[Any, list[str]]]:
    """The keys of `processed` grouped by their (JSON) result: one update per result."""
    groups: dict[str, tuple[Any, list[str]]] = {}
    for key, result in processed:
        groups.setdefault(repr(result), (result, []))[1].append(key)
    return groups

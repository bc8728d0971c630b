"""Webhook deliveries of settled API requests: one row per request, each attempt claimed with
a conditional update on its attempt count (so one replica makes it), audited with its result."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from bot.agent.util import utcnow
from store.audit import add_audit
from store.db import Database, param
from store.schema import webhook_deliveries as wd


@dataclass(frozen=True)
class Delivery:
    id: str
    request_id: str
    url: str
    status: str
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None


def _delivery(row: Any) -> Delivery:
    m = row._mapping
    return Delivery(**{c.name: m[c.name] for c in wd.columns})


# Built once (a webhook is a few statements per settled API request): each execution binds
# its values; `_INSERT` and `_FINISH` take their columns' values by the columns' names.
_INSERT = wd.insert()
_BY_ID = sa.select(wd).where(wd.c.id == param("id", wd.c.id))
_CLAIM = (
    wd.update()
    .where(
        wd.c.id == param("id", wd.c.id),
        wd.c.status == "pending",
        wd.c.attempts == param("attempts", wd.c.attempts),
        wd.c.next_attempt_at <= param("now", wd.c.next_attempt_at),
    )
    .values(
        attempts=param("attempts", wd.c.attempts) + 1,
        next_attempt_at=param("until", wd.c.next_attempt_at),
    )
)
_FINISH = wd.update().where(
    wd.c.id == param("id", wd.c.id), wd.c.attempts == param("attempts", wd.c.attempts)
)


async def add_delivery(db: Database, request_id: str, url: str) -> Delivery | None:
    """Queue the one delivery of a settled request (None when it was already queued)."""
    now = utcnow()
    delivery_id = uuid.uuid4().hex
    try:
        async with db.write() as conn:
            await conn.execute(
                _INSERT,
                dict(
                    id=delivery_id,
                    request_id=request_id,
                    url=url,
                    status="pending",
                    attempts=0,
                    next_attempt_at=now,
                    created_at=now,
                ),
            )
            row = (await conn.execute(_BY_ID, {"p_id": delivery_id})).first()
    except IntegrityError:
        return None
    return _delivery(row)


async def claim_delivery(
    db: Database, delivery_id: str, seen_attempts: int, hold: timedelta
) -> Delivery | None:
    """Take one attempt of a delivery (a conditional update on its attempt count): no two
    replicas make the same attempt. The claim pushes the next attempt `hold` away."""
    now = utcnow()
    async with db.write() as conn:
        params = {"p_id": delivery_id, "p_attempts": seen_attempts, "p_now": now}
        result = await conn.execute(_CLAIM, {**params, "p_until": now + hold})
        if result.rowcount != 1:
            return None
        row = (await conn.execute(_BY_ID, params)).first()
    return _delivery(row)


async def due_deliveries(db: Database, now: datetime | None, limit: int) -> list[Delivery]:
    now = now or utcnow()
    query = (
        sa.select(wd)
        .where(wd.c.status == "pending", wd.c.next_attempt_at <= now)
        .order_by(wd.c.next_attempt_at)
        .limit(limit)
    )
    async with db.read() as conn:
        return [_delivery(r) for r in (await conn.execute(query)).all()]


async def finish_attempt(
    db: Database,
    delivery: Delivery,
    *,
    ok: bool,
    error: str | None,
    next_attempt_at: datetime | None,
    run_id: str | None,
) -> None:
    """Record an attempt's result (and audit it): delivered, retried later, or given up."""
    now = utcnow()
    status = "delivered" if ok else ("pending" if next_attempt_at else "failed")
    values: dict[str, Any] = {"status": status, "last_error": error}
    if ok:
        values["delivered_at"] = now
    if next_attempt_at is not None:
        values["next_attempt_at"] = next_attempt_at
    async with db.write() as conn:
        # the columns set are the parameters' keys (besides p_id and p_attempts)
        params = {"p_id": delivery.id, "p_attempts": delivery.attempts, **values}
        await conn.execute(_FINISH, params)
        await add_audit(
            conn,
            actor="system",
            action="webhook",
            run_id=run_id,
            call_id=None,
            request_id=delivery.request_id,
            tool_name=None,
            arguments=None,
            outcome="delivered" if ok else ("retry" if next_attempt_at else "failed"),
            detail=f"delivery={delivery.id} attempt={delivery.attempts}"
            + (f" error={error}" if error else ""),
            now=now,
        )

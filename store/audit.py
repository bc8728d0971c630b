"""The append-only audit trail (a hash chain) and Slack event deduplication.

Each event stores the hash of the previous one (`prev_hash`) and its own (`hash`: sha256 of
the previous hash and the event's canonical JSON, plaintext values, so re-encryption keeps
it). Appends are serialized by a lock on the one row of `audit_chain` (`FOR UPDATE` on
PostgreSQL; SQLite's write transactions are serialized already), which also records the head:
ids are taken under that lock, so id order is chain order and commit order. Events written by
an older version during a rolling upgrade (no hash) are chained in by the next append.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any, NotRequired, TypedDict, Unpack

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.util import utcnow
from store.db import Database, insert_ignore, param
from store.records import AuditEvent, args_hash
from store.schema import audit_chain, audit_events, audit_webhook_cursor, runs, slack_events

log = logging.getLogger("sayso.audit")


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


AuditObserver = Callable[[AsyncConnection, Mapping[str, Any]], Awaitable[None]]
AUDIT_OBSERVERS: list[AuditObserver] = []
"""Called with each event as it is appended, inside its transaction, before the chain's head
is locked (bot/ops/metrics.py counts decisions from them). An observer's failure is logged,
never the append's; an observer that queries on PostgreSQL does it in a savepoint (a failed
statement would abort the caller's transaction)."""

GENESIS = "0" * 64
"""The previous hash of the first chained event."""

HASHED = (
    "at",
    "actor",
    "action",
    "run_id",
    "call_id",
    "request_id",
    "tool_name",
    "args_hash",
    "outcome",
    "detail",
    "agent_id",
    "tenant",
)
"""The columns an event's hash covers (with the previous hash)."""


def event_hash(prev_hash: str, event: Mapping[str, Any]) -> str:
    """sha256 of the previous hash and the event's canonical JSON (sorted keys, UTC times)."""
    values = {name: event.get(name) for name in HASHED}
    at = values["at"]
    if isinstance(at, datetime):
        values["at"] = at.astimezone(UTC).isoformat(timespec="microseconds")
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{prev_hash}\n{canonical}".encode()).hexdigest()


@functools.cache
def _head_query(dialect: str) -> sa.Select[Any]:
    """The chain's head, locked, with the newest event's id and the run's agent and workspace
    (param p_run_id), built once: an event is written with every decision."""
    run_id = param("run_id", runs.c.id)
    newest = sa.select(sa.func.max(audit_events.c.id)).scalar_subquery()
    agent = sa.select(runs.c.agent_id).where(runs.c.id == run_id).scalar_subquery()
    team = sa.select(runs.c.team_id).where(runs.c.id == run_id).scalar_subquery()
    query = sa.select(
        audit_chain.c.head_id,
        audit_chain.c.head_hash,
        newest.label("newest"),
        agent.label("agent_id"),
        team.label("tenant"),
    ).where(audit_chain.c.id == 1)
    if dialect == "postgresql":
        query = query.with_for_update(of=audit_chain)
    return query


_EVENT_COLUMNS = (
    *("at", "actor", "action", "run_id", "call_id", "request_id", "tool_name", "args_hash"),
    *("outcome", "detail", "agent_id", "tenant", "prev_hash", "hash"),
)
_INSERT_EVENT = audit_events.insert().values(
    **{c: param(c, audit_events.c[c]) for c in _EVENT_COLUMNS}
)
_MOVE_HEAD = audit_chain.update().where(audit_chain.c.id == 1)
_HEAD_HASH = param("head_hash", audit_chain.c.head_hash)
_MOVE_HEAD_TO_INSERTED = _MOVE_HEAD.values(  # PostgreSQL: the insert feeds the head's update
    head_id=sa.select(
        _INSERT_EVENT.returning(audit_events.c.id).cte("inserted").c.id
    ).scalar_subquery(),
    head_hash=_HEAD_HASH,
)
_MOVE_HEAD_TO = _MOVE_HEAD.values(
    head_id=param("head_id", audit_chain.c.head_id), head_hash=_HEAD_HASH
)


async def _lock_head(conn: AsyncConnection, run_id: str | None) -> Any:
    """The chain's head row, locked until the transaction ends, with the newest event's id and
    the run's agent and workspace (one statement)."""
    row = (await conn.execute(_head_query(conn.dialect.name), {"p_run_id": run_id})).first()
    if row is None:
        raise RuntimeError("audit_chain has no head row: run `sayso db upgrade`")
    return row


async def _adopt_unchained(conn: AsyncConnection, head_id: int, head_hash: str) -> str:
    """Chain in events written without a hash (by an older version during an upgrade)."""
    rows = (
        await conn.execute(
            sa.select(audit_events).where(audit_events.c.id > head_id).order_by(audit_events.c.id)
        )
    ).all()
    for row in rows:
        prev, head_hash = head_hash, event_hash(head_hash, dict(row._mapping))
        await conn.execute(
            audit_events.update()
            .where(audit_events.c.id == row.id)
            .values(prev_hash=prev, hash=head_hash)
        )
    return head_hash


async def add_audit(
    conn: AsyncConnection,
    *,
    now: datetime | None = None,
    request: Any = None,
    **entry: Unpack[AuditEntry],
) -> None:
    """Append one event inside the caller's transaction (it commits with the change); the
    chain's head stays locked until then. `request`: the approval request's record as this
    transaction left it, when the caller has it (observers read it instead of querying)."""
    tool_name = entry.get("tool_name")
    run_id = entry.get("run_id")
    values: dict[str, Any] = {
        "at": now or utcnow(),
        "actor": entry["actor"],
        "action": entry["action"],
        "run_id": run_id,
        "call_id": entry.get("call_id"),
        "request_id": entry.get("request_id"),
        "tool_name": tool_name,
        "args_hash": args_hash(tool_name, entry.get("arguments")),
        "outcome": entry["outcome"],
        "detail": entry.get("detail"),
    }
    seen = {**values, "request": request} if request is not None else values
    for observer in AUDIT_OBSERVERS:  # before the head is locked: the lock is held briefly
        try:
            await observer(conn, seen)
        except Exception:
            log.exception("event=audit_observer_failed action=%s", values["action"])
    head = await _lock_head(conn, run_id)
    head_hash: str = head.head_hash
    if head.newest is not None and head.newest > (head.head_id or 0):
        head_hash = await _adopt_unchained(conn, head.head_id or 0, head_hash)
    values.update(agent_id=head.agent_id, tenant=head.tenant)
    digest = event_hash(head_hash, values)
    params = {"p_" + c: v for c, v in values.items()}
    params.update(p_prev_hash=head_hash, p_hash=digest, p_head_hash=digest)
    if conn.dialect.name == "postgresql":  # one round trip: the insert feeds the head's update
        await conn.execute(_MOVE_HEAD_TO_INSERTED, params)
    else:
        result = await conn.execute(_INSERT_EVENT, params)
        assert result.inserted_primary_key is not None
        await conn.execute(_MOVE_HEAD_TO, {**params, "p_head_id": result.inserted_primary_key[0]})


async def audit(db: Database, **entry: Unpack[AuditEntry]) -> None:
    """Append one event in a transaction of its own."""
    async with db.write() as conn:
        await add_audit(conn, **entry)


_TRAIL = (
    sa.select(*(audit_events.c[f.name] for f in fields(AuditEvent)))
    .where(audit_events.c.run_id == param("run_id", audit_events.c.run_id))
    .order_by(audit_events.c.id)
)


async def audit_trail(db: Database, run_id: str) -> list[AuditEvent]:
    async with db.read() as conn:
        rows = (await conn.execute(_TRAIL, {"p_run_id": run_id})).all()
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


# -- reading the chain: verify, export (bot/ops/audit.py) -------------------------------------


@dataclass(frozen=True)
class ChainEnds:
    """Where the chain starts (`anchor_*`: the last event before it) and ends (`head_*`)."""

    anchor_id: int
    anchor_hash: str
    head_id: int | None
    head_hash: str


@dataclass(frozen=True)
class EventFilter:
    since: datetime | None = None
    until: datetime | None = None
    agent_id: str | None = None
    tenant: str | None = None


async def chain_ends(db: Database) -> ChainEnds:
    async with db.read() as conn:
        row = (await conn.execute(sa.select(audit_chain).where(audit_chain.c.id == 1))).first()
    if row is None:
        raise RuntimeError("audit_chain has no head row: run `sayso db upgrade`")
    return ChainEnds(row.anchor_id, row.anchor_hash, row.head_id, row.head_hash)


async def event_page(
    db: Database, after_id: int, limit: int, where: EventFilter | None = None
) -> list[dict[str, Any]]:
    """Up to `limit` events with ids above `after_id`, in chain order (keyset pagination: each
    page is one short indexed read, whatever the table's size)."""
    query = sa.select(audit_events).where(audit_events.c.id > after_id)
    if where is not None:
        if where.since is not None:
            query = query.where(audit_events.c.at >= where.since)
        if where.until is not None:
            query = query.where(audit_events.c.at < where.until)
        if where.agent_id is not None:
            query = query.where(audit_events.c.agent_id == where.agent_id)
        if where.tenant is not None:
            query = query.where(audit_events.c.tenant == where.tenant)
    query = query.order_by(audit_events.c.id).limit(limit)
    async with db.read() as conn:
        return [dict(r._mapping) for r in (await conn.execute(query)).all()]


async def purge_audit(db: Database, older_than: timedelta, *, keep_after: int | None = None) -> int:
    """Delete the oldest events, up to the first one newer than now - older_than (a prefix of
    the chain, never past `keep_after`: events the SIEM webhook has not had); the chain's
    anchor moves to the last one deleted, so what is kept still verifies. Returns how many."""
    cutoff = utcnow() - older_than
    async with db.write() as conn:
        await _lock_head(conn, None)
        first_kept = await conn.scalar(
            sa.select(sa.func.min(audit_events.c.id)).where(audit_events.c.at >= cutoff)
        )
        if first_kept is None:
            first_kept = (await conn.scalar(sa.select(sa.func.max(audit_events.c.id)))) or 0
            first_kept += 1
        if keep_after is not None:
            first_kept = min(first_kept, keep_after + 1)
        last = (
            await conn.execute(
                sa.select(audit_events.c.id, audit_events.c.hash)
                .where(audit_events.c.id < first_kept)
                .order_by(audit_events.c.id.desc())
                .limit(1)
            )
        ).first()
        if last is None:
            return 0
        result = await conn.execute(audit_events.delete().where(audit_events.c.id <= last.id))
        anchor: dict[str, Any] = {"anchor_id": last.id}
        if last.hash is not None:  # else: before the chain existed, the anchor hash stays
            anchor["anchor_hash"] = last.hash
        await conn.execute(audit_chain.update().where(audit_chain.c.id == 1).values(**anchor))
    return int(result.rowcount)


# -- the SIEM webhook's cursor (bot/ops/audit_webhook.py) -------------------------------------


@dataclass(frozen=True)
class WebhookCursor:
    delivered_id: int
    attempts: int
    next_attempt_at: datetime | None


async def claim_webhook_cursor(
    db: Database, owner: str, lease: timedelta, now: datetime | None = None
) -> WebhookCursor | None:
    """Take (or renew) the lease on the webhook's cursor; None when another replica holds it
    or its next attempt is not due. The first claim starts at the chain's head: the webhook
    streams what is written from then on (`sayso audit export` gives the history)."""
    now = now or utcnow()
    c = audit_webhook_cursor.c
    async with db.write() as conn:
        row = (await conn.execute(sa.select(audit_webhook_cursor).where(c.id == 1))).first()
        if row is None:
            head = (
                await conn.execute(sa.select(audit_chain.c.head_id).where(audit_chain.c.id == 1))
            ).scalar()
            await conn.execute(
                audit_webhook_cursor.insert().values(
                    id=1,
                    delivered_id=head or 0,
                    lease_owner=owner,
                    lease_expires_at=now + lease,
                    attempts=0,
                )
            )
            return WebhookCursor(head or 0, 0, None)
        free = sa.or_(
            c.lease_owner == owner, c.lease_expires_at.is_(None), c.lease_expires_at < now
        )
        due = sa.or_(c.next_attempt_at.is_(None), c.next_attempt_at <= now)
        result = await conn.execute(
            audit_webhook_cursor.update()
            .where(c.id == 1, free, due)
            .values(lease_owner=owner, lease_expires_at=now + lease)
        )
        if result.rowcount != 1:
            return None
    return WebhookCursor(row.delivered_id, row.attempts, row.next_attempt_at)


async def advance_webhook_cursor(db: Database, owner: str, delivered_id: int) -> bool:
    """The SIEM acknowledged every event up to `delivered_id` (False: the lease was lost)."""
    c = audit_webhook_cursor.c
    async with db.write() as conn:
        result = await conn.execute(
            audit_webhook_cursor.update()
            .where(c.id == 1, c.lease_owner == owner, c.delivered_id <= delivered_id)
            .values(delivered_id=delivered_id, attempts=0, next_attempt_at=None, last_error=None)
        )
    return bool(result.rowcount == 1)


async def webhook_attempt_failed(
    db: Database, owner: str, error: str, next_attempt_at: datetime
) -> None:
    c = audit_webhook_cursor.c
    async with db.write() as conn:
        await conn.execute(
            audit_webhook_cursor.update()
            .where(c.id == 1, c.lease_owner == owner)
            .values(attempts=c.attempts + 1, next_attempt_at=next_attempt_at, last_error=error)
        )


async def webhook_delivered_id(db: Database) -> int | None:
    """The last event the SIEM webhook acknowledged (None: it never ran)."""
    async with db.read() as conn:
        return (
            await conn.execute(
                sa.select(audit_webhook_cursor.c.delivered_id).where(audit_webhook_cursor.c.id == 1)
            )
        ).scalar()

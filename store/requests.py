"""Approval requests: one row per pending call of a pause, decided exactly once."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.util import utcnow
from bot.agent.vocabulary import RequestKind
from store.db import Database, insert_ignore_for, param
from store.records import (
    ApprovalRequestRecord,
    RequestPolicy,
    RequestSpec,
    RequestState,
)
from store.schema import approval_requests as req
from store.schema import request_approvals as rv
from store.schema import request_approvers as ra
from store.schema import runs

_COLUMNS = [c.name for c in req.columns]
INBOX_COUNT_LIMIT = 1000  # the inbox says "1,000+" beyond this


_APPROVERS = sa.select(ra.c.request_id, ra.c.principal).where(
    ra.c.request_id.in_(sa.bindparam("p_ids", expanding=True))
)


async def _approvers(conn: AsyncConnection, ids: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {i: [] for i in ids}
    if not ids:
        return found
    for request_id, principal in (await conn.execute(_APPROVERS, {"p_ids": list(ids)})).all():
        found[request_id].append(principal)
    return {i: sorted(p) for i, p in found.items()}  # code point order, whatever the collation


async def _approvals(conn: AsyncConnection, ids: Sequence[str]) -> dict[str, list[str]]:
    """Who approved each quorum request so far, in order."""
    found: dict[str, list[str]] = {i: [] for i in ids}
    if not ids:
        return found
    query = sa.select(rv.c.request_id, rv.c.approver).where(rv.c.request_id.in_(list(ids)))
    for request_id, approver in (await conn.execute(query.order_by(rv.c.at, rv.c.approver))).all():
        found[request_id].append(approver)
    return found


_SEPARATOR = "\x1f"  # ASCII unit separator: in no user, group or channel id
_PRINCIPALS = "listed_principals"


def principals_column(dialect: str) -> sa.ColumnElement[Any]:
    """Each request's approvers in one text column of the same query (a correlated
    aggregate: no second query per read of a few requests)."""
    if dialect == "postgresql":
        joined = sa.func.string_agg(ra.c.principal, sa.literal(_SEPARATOR))
    else:
        joined = sa.func.group_concat(ra.c.principal, sa.literal(_SEPARATOR))
    return sa.select(joined).where(ra.c.request_id == req.c.id).scalar_subquery().label(_PRINCIPALS)


async def fetch(
    conn: AsyncConnection, query: sa.Select[Any], *, inline_approvers: bool = False
) -> list[ApprovalRequestRecord]:
    """Run a select over approval_requests and attach each row's approvers (and, for a
    quorum, the approvals so far). `inline_approvers`: in the same query (for reads of one
    request or one pause; a page of many is better served by one more query)."""
    if inline_approvers:
        query = query.add_columns(principals_column(conn.dialect.name))
    return await records_of(conn, (await conn.execute(query)).all())


@functools.cache
def with_approvers(dialect: str, query: sa.Select[Any]) -> sa.Select[Any]:
    """`query` (built once, with bind parameters) with its approvers' column, per dialect."""
    return query.add_columns(principals_column(dialect))


async def _fetch_built(
    conn: AsyncConnection, query: sa.Select[Any], params: dict[str, Any]
) -> list[ApprovalRequestRecord]:
    built = with_approvers(conn.dialect.name, query)
    return await records_of(conn, (await conn.execute(built, params)).all())


def _inlined(rows: Sequence[Any]) -> dict[str, list[str]] | None:
    if not rows or _PRINCIPALS not in rows[0]._mapping:
        return None
    return {
        r.id: sorted(r._mapping[_PRINCIPALS].split(_SEPARATOR)) if r._mapping[_PRINCIPALS] else []
        for r in rows
    }


_SPEC = [f.name for f in fields(RequestSpec)]
_POLICY = [f.name for f in fields(RequestPolicy) if f.init and f.name != "approvers"]
_STATE = [f.name for f in fields(RequestState) if f.name != "approvals"]
if {"id", *_SPEC, *_POLICY, *_STATE} != set(_COLUMNS):  # a new column needs a record part
    raise RuntimeError("approval_requests and the parts of ApprovalRequestRecord differ")


def request_record(
    row: Any, listed: Sequence[str], approvals: Sequence[str] = ()
) -> ApprovalRequestRecord:
    """The record of one approval_requests row (all columns), its listed principals and the
    approvals so far, each column in its part."""
    m = row._mapping
    return ApprovalRequestRecord(
        id=m["id"],
        spec=RequestSpec(**{name: m[name] for name in _SPEC}),
        policy=RequestPolicy(approvers=listed, **{name: m[name] for name in _POLICY}),
        state=RequestState(**{name: m[name] for name in _STATE}, approvals=tuple(approvals)),
    )


async def records_of(conn: AsyncConnection, rows: Sequence[Any]) -> list[ApprovalRequestRecord]:
    """Records of approval_requests rows (all columns), with their approvers and approvals."""
    principals = _inlined(rows) or await _approvers(conn, [r.id for r in rows])
    approvals = await _approvals(conn, [r.id for r in rows if (r.min_approvals or 1) > 1])
    return [request_record(row, principals[row.id], approvals.get(row.id, ())) for row in rows]


_REQUEST_BY_ID = sa.select(req).where(req.c.id == param("id", req.c.id))


async def _one(conn: AsyncConnection, request_id: str) -> ApprovalRequestRecord | None:
    found = await _fetch_built(conn, _REQUEST_BY_ID, {"p_id": request_id})
    return found[0] if found else None


async def get_request(db: Database, request_id: str) -> ApprovalRequestRecord | None:
    async with db.read() as conn:
        return await _one(conn, request_id)


async def requests_for_run(
    db: Database, run_id: str, *, step: int | None = None, current: bool = False
) -> list[ApprovalRequestRecord]:
    query = sa.select(req).where(req.c.run_id == run_id)
    if step is not None:
        query = query.where(req.c.step == step)
    if current:
        seq = sa.select(runs.c.pause_seq).where(runs.c.id == run_id).scalar_subquery()
        query = query.where(req.c.pause_seq == seq)
    query = query.order_by(req.c.pause_seq, req.c.created_at, req.c.call_id)
    async with db.read() as conn:
        return await fetch(conn, query, inline_approvers=True)


_SET_MESSAGE = (
    req.update()
    .where(req.c.id == param("id", req.c.id))
    .values(
        channel_id=param("channel", req.c.channel_id),
        message_ts=param("ts", req.c.message_ts),
    )
)


async def set_request_message(
    db: Database, request_id: str, channel_id: str, message_ts: str
) -> None:
    async with db.write() as conn:
        params = {"p_id": request_id, "p_channel": channel_id, "p_ts": message_ts}
        await conn.execute(_SET_MESSAGE, params)


_NEW_REQUEST = (
    *("id", "run_id", "pause_seq", "call_id", "step", "tool_name", "kind", "arguments"),
    *("channel_id", "expires_at", "requester", "allow_self_approval", "min_approvals"),
    *("require_reason", "rule", "escalate_at", "escalate_to", "standing_seconds"),
    *("interrupted", "created_at"),
)


@functools.cache
def _insert_request(dialect: str) -> Any:
    """A new pending request unless its pause has it (params: p_<column>), once per dialect."""
    values = {c: param(c, req.c[c]) for c in _NEW_REQUEST}
    return (
        insert_ignore_for(dialect, req)
        .values(status="pending", **values)
        .on_conflict_do_nothing(index_elements=["run_id", "pause_seq", "call_id"])
    )


async def insert_request(
    db: Database,
    conn: AsyncConnection,
    *,
    run_id: str,
    pause_seq: int,
    call_id: str,
    step: int,
    tool_name: str,
    kind: RequestKind,
    arguments: Any,
    policy: RequestPolicy,
    interrupted: bool,
    requester: str | None,
    channel_id: str | None,
    now: datetime,
) -> bool:
    """Insert one pending request unless this pause already has it; True when inserted."""
    request_id = uuid.uuid4().hex
    values = {
        "id": request_id,
        "run_id": run_id,
        "pause_seq": pause_seq,
        "call_id": call_id,
        "step": step,
        "tool_name": tool_name,
        "kind": kind,
        "arguments": arguments,
        "channel_id": channel_id,
        "expires_at": policy.expires_at,
        "requester": requester,
        "allow_self_approval": policy.allow_self_approval,
        "min_approvals": policy.min_approvals,
        "require_reason": policy.require_reason,
        "rule": policy.rule,
        "escalate_at": policy.escalate_at,
        "escalate_to": list(policy.escalate_to) or None,
        "standing_seconds": policy.standing_seconds,
        "interrupted": interrupted,
        "created_at": now,
    }
    statement = _insert_request(db.dialect)
    if (await conn.execute(statement, {"p_" + k: v for k, v in values.items()})).rowcount != 1:
        return False
    await conn.execute(
        ra.insert(), [{"request_id": request_id, "principal": p} for p in policy.principals]
    )
    return True


_CANCEL_PENDING = (
    req.update()
    .where(req.c.run_id == param("run", req.c.run_id), req.c.status == "pending")
    .values(
        status="cancelled",
        decided_by="system",
        decided_at=param("now", req.c.decided_at),
    )
)


async def cancel_pending(conn: AsyncConnection, run_id: str, now: datetime) -> None:
    await conn.execute(_CANCEL_PENDING, {"p_run": run_id, "p_now": now})


def _pause_ready() -> sa.Select[Any]:
    run_id = param("run_id", runs.c.id)
    seq = param("seq", runs.c.pause_seq)
    pending = sa.exists().where(
        req.c.run_id == run_id, req.c.pause_seq == seq, req.c.status == "pending"
    )
    return sa.select(runs.c.id).where(
        runs.c.id == run_id,
        runs.c.status == "waiting_for_human",
        runs.c.pause_seq == seq,
        ~pending,
    )


_PAUSE_READY = _pause_ready()
"""The run waits on this pause and none of its requests is pending (p_run_id, p_seq)."""


async def pause_ready(db: Database, run_id: str, pause_seq: int) -> bool:
    """True when the run waits on this pause and none of its requests is pending."""
    params = {"p_run_id": run_id, "p_seq": pause_seq}
    async with db.read() as conn:
        return (await conn.execute(_PAUSE_READY, params)).first() is not None


async def claim_due(
    conn: AsyncConnection,
    due: Sequence[Any],
    order: Any,
    limit: int,
    still: Sequence[Any],
    values: dict[str, Any],
) -> list[str]:
    """Mark the requests matching `due` (up to `limit`, in `order`) with `values`, only where
    `still` holds at write time; return the ids this call changed. Safe in every replica at
    once: PostgreSQL locks the rows it takes and skips rows another sweep holds (no
    deadlocks); SQLite writes are serial anyway."""
    query = sa.select(req.c.id).where(*due).order_by(order).limit(limit)
    ids = list((await conn.scalars(query.with_for_update(skip_locked=True))).all())
    if not ids:
        return []
    update = req.update().where(req.c.id.in_(ids), *still).values(**values)
    return list((await conn.scalars(update.returning(req.c.id))).all())


async def due_reminders(
    db: Database, created_before: datetime, now: datetime | None, limit: int
) -> list[ApprovalRequestRecord]:
    """Claim pending, unexpired requests created before `created_before` that were never
    reminded; return only those this call claimed (safe in every replica at once)."""
    now = now or utcnow()
    unreminded = [req.c.status == "pending", req.c.reminded_at.is_(None)]
    due = [*unreminded, req.c.created_at <= created_before, req.c.expires_at > now]
    async with db.write() as conn:
        done = await claim_due(conn, due, req.c.created_at, limit, unreminded, {"reminded_at": now})
        if not done:
            return []
        return await fetch(conn, sa.select(req).where(req.c.id.in_(done)))


async def runs_missing_cards(db: Database, created_before: datetime, limit: int) -> list[str]:
    """Waiting runs with a pending request that was never shown (no Slack message) and is
    older than `created_before`: the process that paused them died before posting the card."""
    query = (
        sa.select(req.c.run_id)
        .join(runs, runs.c.id == req.c.run_id)
        .where(
            runs.c.status == "waiting_for_human",
            req.c.pause_seq == runs.c.pause_seq,
            req.c.status == "pending",
            req.c.message_ts.is_(None),
            req.c.created_at <= created_before,
        )
        .distinct()
        .limit(limit)
    )
    async with db.read() as conn:
        return list((await conn.scalars(query)).all())

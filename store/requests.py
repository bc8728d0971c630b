"""Approval requests: one row per pending call of a pause, decided exactly once."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NotRequired, TypedDict, Unpack

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.util import utcnow
from bot.agent.vocabulary import REQUEST_OUTCOMES, RequestKind, RequestOutcome
from store.audit import add_audit
from store.db import READY_CHANNEL, Database, insert_ignore
from store.records import (
    ANYONE,
    ApprovalRequestRecord,
    DecisionOutcome,
    Lease,
    RequestPolicy,
    RunRecord,
)
from store.runs import run_record
from store.schema import approval_requests as req
from store.schema import request_approvals as rv
from store.schema import request_approvers as ra
from store.schema import runs

_COLUMNS = [c.name for c in req.columns]
INBOX_COUNT_LIMIT = 1000  # the inbox says "1,000+" beyond this


async def _approvers(conn: AsyncConnection, ids: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {i: [] for i in ids}
    if not ids:
        return found
    query = sa.select(ra.c.request_id, ra.c.principal).where(ra.c.request_id.in_(list(ids)))
    for request_id, principal in (await conn.execute(query)).all():
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


def _principals_column(conn: AsyncConnection) -> sa.ColumnElement[Any]:
    """Each request's approvers in one text column of the same query (a correlated
    aggregate: no second query per read of a few requests)."""
    if conn.dialect.name == "postgresql":
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
        query = query.add_columns(_principals_column(conn))
    return await records_of(conn, (await conn.execute(query)).all())


def _inlined(rows: Sequence[Any]) -> dict[str, list[str]] | None:
    if not rows or _PRINCIPALS not in rows[0]._mapping:
        return None
    return {
        r.id: sorted(r._mapping[_PRINCIPALS].split(_SEPARATOR)) if r._mapping[_PRINCIPALS] else []
        for r in rows
    }


async def records_of(conn: AsyncConnection, rows: Sequence[Any]) -> list[ApprovalRequestRecord]:
    """Records of approval_requests rows (all columns), with their approvers and approvals."""
    principals = _inlined(rows) or await _approvers(conn, [r.id for r in rows])
    approvals = await _approvals(conn, [r.id for r in rows if (r.min_approvals or 1) > 1])
    records = []
    for row in rows:
        m = row._mapping
        listed = principals[row.id]
        records.append(
            ApprovalRequestRecord(
                **{name: m[name] for name in _COLUMNS},
                approvers=tuple(p for p in listed if p != ANYONE),
                anyone=ANYONE in listed or not listed,
                approvals=tuple(approvals.get(row.id, ())),
            )
        )
    return records


async def _one(conn: AsyncConnection, request_id: str) -> ApprovalRequestRecord | None:
    found = await fetch(conn, sa.select(req).where(req.c.id == request_id), inline_approvers=True)
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


async def run_and_current_requests(
    db: Database, run_id: str
) -> tuple[RunRecord | None, list[ApprovalRequestRecord]]:
    """The run's row and, when it waits for people, the requests of its latest pause: what a
    continuation needs, in one read transaction."""
    async with db.read() as conn:
        row = (await conn.execute(sa.select(runs).where(runs.c.id == run_id))).first()
        if row is None:
            return None, []
        run = run_record(row)
        if run.status != "waiting_for_human":
            return run, []
        query = (
            sa.select(req)
            .where(req.c.run_id == run_id, req.c.pause_seq == run.pause_seq)
            .order_by(req.c.pause_seq, req.c.created_at, req.c.call_id)
        )
        return run, await fetch(conn, query, inline_approvers=True)


async def set_request_message(
    db: Database, request_id: str, channel_id: str, message_ts: str
) -> None:
    async with db.write() as conn:
        await conn.execute(
            req.update()
            .where(req.c.id == request_id)
            .values(channel_id=channel_id, message_ts=message_ts)
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
    statement = (
        insert_ignore(db, req)
        .values(
            id=request_id,
            run_id=run_id,
            pause_seq=pause_seq,
            call_id=call_id,
            step=step,
            tool_name=tool_name,
            kind=kind,
            arguments=arguments,
            status="pending",
            channel_id=channel_id,
            expires_at=policy.expires_at,
            requester=requester,
            allow_self_approval=policy.allow_self_approval,
            min_approvals=policy.min_approvals,
            require_reason=policy.require_reason,
            rule=policy.rule,
            escalate_at=policy.escalate_at,
            escalate_to=policy.escalate_to or None,
            standing_seconds=policy.standing_seconds,
            interrupted=interrupted,
            created_at=now,
        )
        .on_conflict_do_nothing(index_elements=["run_id", "pause_seq", "call_id"])
    )
    if (await conn.execute(statement)).rowcount != 1:
        return False
    principals = sorted(set(policy.approvers)) or [ANYONE]
    await conn.execute(
        ra.insert(), [{"request_id": request_id, "principal": p} for p in principals]
    )
    return True


async def cancel_pending(conn: AsyncConnection, run_id: str, now: datetime) -> None:
    await conn.execute(
        req.update()
        .where(req.c.run_id == run_id, req.c.status == "pending")
        .values(status="cancelled", decided_by="system", decided_at=now)
    )


async def pause_ready(db: Database, run_id: str, pause_seq: int) -> bool:
    """True when the run waits on this pause and none of its requests is pending."""
    pending = sa.exists().where(
        req.c.run_id == run_id, req.c.pause_seq == pause_seq, req.c.status == "pending"
    )
    query = sa.select(runs.c.id).where(
        runs.c.id == run_id,
        runs.c.status == "waiting_for_human",
        runs.c.pause_seq == pause_seq,
        ~pending,
    )
    async with db.read() as conn:
        return (await conn.execute(query)).first() is not None


async def _audit_expiry(
    conn: AsyncConnection, r: ApprovalRequestRecord, now: datetime, detail: str
) -> None:
    """Exactly one `expire` event per expired request, by whichever path expired it."""
    await add_audit(
        conn,
        actor="system",
        action="expire",
        run_id=r.run_id,
        call_id=r.call_id,
        request_id=r.id,
        tool_name=r.tool_name,
        arguments=r.arguments,
        outcome="expired",
        detail=detail,
        now=now,
    )


def _hashed_arguments(request: ApprovalRequestRecord, status: RequestOutcome, edited: Any) -> Any:
    return edited if status == "edited" and edited is not None else request.arguments


def _attempt_outcome(request: ApprovalRequestRecord | None, won: bool) -> str:
    if request is None:
        return "not_found"
    if won:
        return "won"
    return "expired" if request.status == "expired" else "lost"


def _attempt_detail(
    request: ApprovalRequestRecord | None, won: bool, status: RequestOutcome, reason: str | None
) -> str:
    """What the audit says of one attempt: what was wanted, the reason given with a recorded
    decision, or who decided first."""
    detail = f"wanted={status}"
    if won and reason:
        detail += f" reason={json.dumps(reason, ensure_ascii=False)}"
    if request is not None and not won:
        detail += f" status={request.status} decided_by={request.decided_by}"
    return detail


class DecisionInput(TypedDict):
    """One attempt to decide a request: who, to what outcome, and what they gave with it."""

    actor: str
    status: RequestOutcome
    reason: NotRequired[str | None]
    edited_arguments: NotRequired[dict[str, Any] | None]
    output: NotRequired[Any]


async def decide(
    db: Database,
    request_id: str,
    *,
    now: datetime | None = None,
    claim: LeaseClaim | None = None,
    **attempt: Unpack[DecisionInput],
) -> DecisionOutcome:
    """Decide a pending request exactly once (audited). With `claim`, a decision that makes
    the run ready also takes its lease in the same transaction (`DecisionOutcome.lease`)."""
    actor, status, reason = attempt["actor"], attempt["status"], attempt.get("reason")
    edited_arguments, output = attempt.get("edited_arguments"), attempt.get("output")
    if status not in REQUEST_OUTCOMES:
        raise ValueError(f"Unknown decision {status!r}: use one of {sorted(REQUEST_OUTCOMES)}")
    if status == "edited" and edited_arguments is None:
        raise ValueError("An edit needs edited_arguments")
    now = now or utcnow()
    won = expired = False
    lease: Lease | None = None
    async with db.write() as conn:
        decided = (
            await conn.execute(
                req.update()
                .where(req.c.id == request_id, req.c.status == "pending", req.c.expires_at > now)
                .values(
                    status=status,
                    decided_by=actor,
                    decided_at=now,
                    reason=reason,
                    edited_arguments=edited_arguments,
                    output=output,
                )
                .returning(*req.columns)
            )
        ).all()
        won = len(decided) == 1
        request = (await records_of(conn, decided))[0] if won else await _one(conn, request_id)
        if request is not None and not won and request.status == "pending":
            # Still pending, so past its deadline: whoever gets here first expires it.
            result = await conn.execute(
                req.update()
                .where(req.c.id == request_id, req.c.status == "pending", req.c.expires_at <= now)
                .values(status="expired", decided_by="system", decided_at=now)
            )
            expired = result.rowcount == 1
            request = await _one(conn, request_id)
            if expired and request is not None:
                await _audit_expiry(conn, request, now, f"noticed by {actor}")
        await add_audit(
            conn,
            actor=actor,
            action="decide",
            run_id=request.run_id if request else None,
            call_id=request.call_id if request else None,
            request_id=request_id,
            tool_name=request.tool_name if request else None,
            arguments=_hashed_arguments(request, status, edited_arguments) if request else None,
            outcome=_attempt_outcome(request, won),
            detail=_attempt_detail(request, won, status, reason),
            now=now,
        )
        if won and request is not None and claim is not None:
            lease = await _claim_if_ready(conn, request, claim, now)
        if won and request is not None and lease is None and db.is_postgres:
            # Wake workers as the decision commits (they check whether the run is ready).
            await conn.execute(sa.select(sa.func.pg_notify(READY_CHANNEL, request.run_id)))
    run_ready = lease is not None
    if request is not None and (won or expired) and lease is None:
        # Checked after commit: of two deciders finishing a pause together, the later one
        # sees both decisions (a check inside either transaction could miss the other's).
        run_ready = await pause_ready(db, request.run_id, request.pause_seq)
    return DecisionOutcome(
        won=won,
        request=request,
        expired=request is not None and request.status == "expired" and not won,
        run_ready=run_ready,
        lease=lease,
    )


async def _claim_if_ready(
    conn: AsyncConnection, request: ApprovalRequestRecord, claim: LeaseClaim, now: datetime
) -> Lease | None:
    """In the decision's transaction: take the run's lease if this decision completed its
    pause (no request of it pending any more, as this transaction sees it) and nobody holds
    it. One statement instead of a check after commit plus a claim. When another decision of
    the same pause is in flight it still looks pending here: nothing is claimed, and the
    check after commit (`pause_ready`) sees both."""
    pending = sa.exists().where(
        req.c.run_id == request.run_id,
        req.c.pause_seq == request.pause_seq,
        req.c.status == "pending",
    )
    expires = now + timedelta(seconds=claim.lease_seconds)
    version = await conn.scalar(
        runs.update()
        .where(
            runs.c.id == request.run_id,
            runs.c.status == "waiting_for_human",
            runs.c.pause_seq == request.pause_seq,
            runs.c.agent_id.not_like("api:%"),
            sa.or_(runs.c.lease_owner.is_(None), runs.c.lease_expires_at < now),
            ~pending,
        )
        .values(lease_owner=claim.owner, lease_expires_at=expires, version=runs.c.version + 1)
        .returning(runs.c.version)
    )
    if version is None:
        return None
    return Lease(run_id=request.run_id, owner=claim.owner, version=int(version), expires_at=expires)


@dataclass(frozen=True)
class LeaseClaim:
    """Who takes a run's lease, and for how long, when a decision makes the run ready."""

    owner: str
    lease_seconds: float


async def _claim_due(
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


async def expire_due(db: Database, now: datetime | None, limit: int) -> list[ApprovalRequestRecord]:
    """Mark pending requests past their deadline `expired`; return only those this call did."""
    now = now or utcnow()
    past = [req.c.status == "pending", req.c.expires_at <= now]
    async with db.write() as conn:
        done = await _claim_due(
            conn,
            past,
            req.c.expires_at,
            limit,
            past,
            {"status": "expired", "decided_by": "system", "decided_at": now},
        )
        if not done:
            return []
        records = await fetch(conn, sa.select(req).where(req.c.id.in_(done)))
        for r in records:
            await _audit_expiry(conn, r, now, "deadline sweep")
    return sorted(records, key=lambda r: (r.expires_at, r.id))


async def pending_for(
    db: Database,
    user_id: str,
    group_ids: Sequence[str],
    *,
    include_anyone: bool,
    limit: int,
    now: datetime | None = None,
    count_limit: int = INBOX_COUNT_LIMIT,
    anyone_channels: Sequence[str] | None = None,
) -> tuple[list[ApprovalRequestRecord], int]:
    """One page of what the person may decide (newest first) and how many in all, counted up
    to `count_limit` (an exact count would cost ~3.5 µs per pending request).

    Requests open to anyone are included when `include_anyone`, and then only those of
    `anyone_channels` when it is given."""
    now = now or utcnow()
    restrict = include_anyone and anyone_channels is not None
    principals = [user_id, *group_ids, *([ANYONE] if include_anyone and not restrict else [])]
    listed = _listed(principals)
    if restrict:
        open_here = sa.and_(_listed([ANYONE]), req.c.channel_id.in_(list(anyone_channels or [])))
        listed = sa.or_(listed, open_here)
    conds = [
        req.c.status == "pending",
        req.c.expires_at > now,
        listed,
        sa.or_(
            req.c.allow_self_approval.is_(True),
            req.c.requester.is_(None),
            req.c.requester != user_id,
        ),
    ]
    # Newest first: walk the (status, created_at) index backwards, stop after `limit` rows.
    # SQLite would pick the (status, expires_at) index for the range instead and sort every
    # pending request (30 ms instead of 0.1 ms at 10,000 pending; see docs/benchmarks.md):
    # likelihood() tells it the deadline condition is nearly always true.
    fresh = conds[1]
    if db.is_sqlite:
        fresh = sa.func.likelihood(fresh, sa.literal_column("0.9"))
    page = (
        sa.select(req)
        .where(conds[0], fresh, *conds[2:])
        .order_by(req.c.created_at.desc(), req.c.id.desc())
    )
    async with db.read() as conn:
        counted = sa.select(req.c.id).where(*conds).limit(count_limit).subquery()
        total = await conn.scalar(sa.select(sa.func.count()).select_from(counted))
        records = await fetch(conn, page.limit(limit))
    return records, int(total or 0)


def _listed(principals: Sequence[str]) -> sa.ColumnElement[bool]:
    # A per-request index probe, never a semi-join: PostgreSQL would hash the approvers of
    # every request ever made (most of them long decided) to count a few pending ones; the
    # LIMIT keeps the subquery correlated (23 ms -> 2 ms at 100,000 requests).
    return (
        sa.select(sa.literal(1))
        .where(ra.c.request_id == req.c.id, ra.c.principal.in_(principals))
        .limit(1)
        .scalar_subquery()
        .is_not(None)
    )


async def open_request_channels(db: Database, now: datetime | None, limit: int) -> list[str]:
    """The channels that have pending requests open to anyone (at most `limit`)."""
    now = now or utcnow()
    query = (
        sa.select(req.c.channel_id)
        .where(
            req.c.status == "pending",
            req.c.expires_at > now,
            req.c.channel_id.is_not(None),
            _listed([ANYONE]),
        )
        .distinct()
        .limit(limit)
    )
    async with db.read() as conn:
        return [c for c in (await conn.scalars(query)).all() if c]


async def due_reminders(
    db: Database, created_before: datetime, now: datetime | None, limit: int
) -> list[ApprovalRequestRecord]:
    """Claim pending, unexpired requests created before `created_before` that were never
    reminded; return only those this call claimed (safe in every replica at once)."""
    now = now or utcnow()
    unreminded = [req.c.status == "pending", req.c.reminded_at.is_(None)]
    due = [*unreminded, req.c.created_at <= created_before, req.c.expires_at > now]
    async with db.write() as conn:
        done = await _claim_due(
            conn, due, req.c.created_at, limit, unreminded, {"reminded_at": now}
        )
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

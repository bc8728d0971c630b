"""Runs and their leases. A lease's `version` is the fencing token: every claim and every
save advances it, and a write is accepted only from the holder of the current version."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict, Unpack

import sqlalchemy as sa

from bot.agent.schema_tool import API_AGENT_PREFIX
from bot.agent.state import RunResult
from bot.agent.util import utcnow
from store.crypto import EncryptionKeyError, Unreadable
from store.db import Database, param
from store.records import Lease, RunRecord
from store.schema import approval_requests as req
from store.schema import request_approvers as ra
from store.schema import runs
from store.schema import webhook_deliveries as wd
from store.starts import StartLimit, check_start

_RUN_COLUMNS = [c.name for c in runs.columns]


def run_record(row: Any, prefix: str = "") -> RunRecord:
    """The record of a runs row (its columns named `prefix` + the column's name)."""
    m = row._mapping
    return RunRecord(**{name: m[prefix + name] for name in _RUN_COLUMNS})


class NewRun(TypedDict):
    """A run as it is first stored: who asked what, and where in Slack its thread is."""

    run_id: str
    agent_id: str
    requester: str | None
    team_id: str | None
    channel_id: str | None
    thread_ts: str | None
    request_text: str


_RUN_ID = param("run_id", runs.c.id)
"""The run a statement built once is about (p_run_id)."""
_NEW_RUN = ("agent_id", "requester", "team_id", "channel_id", "thread_ts", "request_text")
_CREATE_RUN = runs.insert().values(
    id=_RUN_ID,
    status="running",
    pause_seq=0,
    **{c: param(c, runs.c[c]) for c in _NEW_RUN},
    created_at=param("now", runs.c.created_at),
    updated_at=param("now", runs.c.updated_at),
    version=1,
    lease_owner=param("owner", runs.c.lease_owner),
    lease_expires_at=param("expires", runs.c.lease_expires_at),
)
"""A new run, leased to its creator (params: p_<NewRun key>, p_now, p_owner, p_expires)."""


async def create_run(
    db: Database,
    *,
    owner: str,
    lease_seconds: float,
    limit: StartLimit | None = None,
    **run: Unpack[NewRun],
) -> Lease:
    """Insert the run; with `limit`, only if its requester is under it (else StartLimitReached)."""
    now = utcnow()
    expires = now + timedelta(seconds=lease_seconds)
    run_id = run["run_id"]
    async with db.write() as conn:
        if limit is not None and run["requester"]:
            await check_start(db, conn, run["requester"], limit)
        params = {"p_" + k: v for k, v in run.items()}
        params.update(p_now=now, p_owner=owner, p_expires=expires)
        await conn.execute(_CREATE_RUN, params)
    return Lease(run_id=run_id, owner=owner, version=1, expires_at=expires)


_CHANNEL = param("channel", runs.c.channel_id)
_SET_THREAD = (
    runs.update()
    .where(runs.c.id == _RUN_ID)
    .values(channel_id=_CHANNEL, thread_ts=param("ts", runs.c.thread_ts))
)
_CARDS_IN_CHANNEL = (
    req.update()
    .where(req.c.run_id == _RUN_ID, req.c.message_ts.is_(None))
    .values(channel_id=_CHANNEL)
)


async def set_thread(db: Database, run_id: str, channel_id: str, thread_ts: str) -> None:
    params = {"p_run_id": run_id, "p_channel": channel_id, "p_ts": thread_ts}
    async with db.write() as conn:
        await conn.execute(_SET_THREAD, params)
        # Cards of the run not yet posted belong in the same channel.
        await conn.execute(_CARDS_IN_CHANNEL, params)


RUN_BY_ID = sa.select(runs).where(runs.c.id == _RUN_ID)
"""A run's row (param p_run_id): built once, as every statement read or written per decision."""


async def get_run(db: Database, run_id: str) -> RunRecord | None:
    async with db.read() as conn:
        row = (await conn.execute(RUN_BY_ID, {"p_run_id": run_id})).first()
    return run_record(row) if row else None


async def get_runs(db: Database, run_ids: list[str]) -> dict[str, RunRecord]:
    """Several runs in one query, by id (missing ids are left out)."""
    if not run_ids:
        return {}
    async with db.read() as conn:
        rows = (await conn.execute(sa.select(runs).where(runs.c.id.in_(run_ids)))).all()
    return {row.id: run_record(row) for row in rows}


async def load_result(db: Database, run_id: str) -> RunResult | None:
    async with db.read() as conn:
        state = await conn.scalar(sa.select(runs.c.state).where(runs.c.id == run_id))
    if isinstance(state, Unreadable):
        raise EncryptionKeyError(state.why)
    return RunResult.model_validate_json(state) if state else None


async def run_for_thread(db: Database, channel_id: str, thread_ts: str) -> RunRecord | None:
    query = (
        sa.select(runs)
        .where(runs.c.channel_id == channel_id, runs.c.thread_ts == thread_ts)
        .order_by(runs.c.created_at.desc())
        .limit(1)
    )
    async with db.read() as conn:
        row = (await conn.execute(query)).first()
    return run_record(row) if row else None


async def list_runs(
    db: Database, *, status: str | None, requester: str | None, limit: int
) -> list[RunRecord]:
    query = sa.select(runs).order_by(runs.c.created_at.desc(), runs.c.id.desc()).limit(limit)
    if status is not None:
        query = query.where(runs.c.status == status)
    if requester is not None:
        query = query.where(runs.c.requester == requester)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [run_record(r) for r in rows]


def _lease_free(now: Any) -> sa.ColumnElement[bool]:
    return sa.or_(runs.c.lease_owner.is_(None), runs.c.lease_expires_at < now)


async def claim_run(db: Database, run_id: str, *, owner: str, lease_seconds: float) -> Lease | None:
    """Take the run's lease if nobody holds it (or the holder's lease lapsed)."""
    now = utcnow()
    expires = now + timedelta(seconds=lease_seconds)
    async with db.write() as conn:
        query = sa.select(runs.c.version, runs.c.lease_owner).where(
            runs.c.id == run_id, runs.c.status != "cancelled", _lease_free(now)
        )
        if db.is_postgres:  # two workers claiming at once: one takes it, the other moves on
            query = query.with_for_update(skip_locked=True)
        seen = (await conn.execute(query)).first()
        if seen is None:
            return None
        result = await conn.execute(
            runs.update()
            .where(runs.c.id == run_id, runs.c.version == seen.version, _lease_free(now))
            .values(lease_owner=owner, lease_expires_at=expires, version=runs.c.version + 1)
        )
        if result.rowcount != 1:
            return None
    return Lease(
        run_id=run_id,
        owner=owner,
        version=seen.version + 1,
        expires_at=expires,
        taken_over=seen.lease_owner is not None,
    )


def _ours(lease: Lease) -> sa.ColumnElement[bool]:
    return sa.and_(
        runs.c.id == lease.run_id,
        runs.c.lease_owner == lease.owner,
        runs.c.version == lease.version,
    )


async def renew(db: Database, lease: Lease, *, lease_seconds: float) -> bool:
    expires = utcnow() + timedelta(seconds=lease_seconds)
    async with db.write(single=True) as conn:
        result = await conn.execute(
            runs.update().where(_ours(lease)).values(lease_expires_at=expires)
        )
    if result.rowcount != 1:
        return False
    lease.expires_at = expires
    return True


async def release(db: Database, lease: Lease) -> None:
    async with db.write(single=True) as conn:
        await conn.execute(
            runs.update().where(_ours(lease)).values(lease_owner=None, lease_expires_at=None)
        )


def _pause_has_requests(pending_only: bool) -> sa.Exists:
    conds = [req.c.run_id == runs.c.id, req.c.pause_seq == runs.c.pause_seq]
    if pending_only:
        conds.append(req.c.status == "pending")
    return sa.exists().where(*conds)


def ready_condition(now: Any) -> sa.ColumnElement[bool]:
    """Runs to continue that nobody holds: `running` runs without a lease (handed off by a
    front, or lapsed), and waiting runs whose current pause has requests, none pending."""
    waiting_ready = sa.and_(
        runs.c.status == "waiting_for_human",
        runs.c.agent_id.not_like(
            API_AGENT_PREFIX + "%"
        ),  # an API request's run is its caller's to continue
        _pause_has_requests(False),
        ~_pause_has_requests(True),
    )
    return sa.and_(_lease_free(now), sa.or_(runs.c.status == "running", waiting_ready))


async def ready_runs(db: Database, now: datetime | None, limit: int) -> list[str]:
    """The ids of ready runs (`ready_condition`), oldest first."""
    now = now or utcnow()
    query = (
        sa.select(runs.c.id).where(ready_condition(now)).order_by(runs.c.updated_at).limit(limit)
    )
    async with db.read() as conn:
        return list((await conn.scalars(query)).all())


_COUNT_READY = (
    sa.select(sa.func.count())
    .select_from(runs)
    .where(ready_condition(param("now", runs.c.lease_expires_at)))
)


async def count_ready(db: Database, now: datetime | None = None) -> int:
    """How many runs wait for a worker (the backlog a new run queues behind)."""
    now = now or utcnow()
    async with db.read() as conn:
        return int(await conn.scalar(_COUNT_READY, {"p_now": now}) or 0)


async def lapsed_runs(db: Database, now: datetime | None, limit: int) -> list[str]:
    now = now or utcnow()
    query = (
        sa.select(runs.c.id)
        .where(runs.c.status == "running", _lease_free(now))
        .order_by(runs.c.updated_at)
        .limit(limit)
    )
    async with db.read() as conn:
        return list((await conn.scalars(query)).all())


SHOWN_STATUSES = ("completed", "failed", "cancelled")  # ends the thread shows


_VERSION = param("version", runs.c.version)
_MARK_SHOWN = (
    runs.update()
    .where(runs.c.id == _RUN_ID, runs.c.version == _VERSION)
    .values(shown_version=_VERSION)
)


async def mark_shown(db: Database, run_id: str, version: int) -> None:
    """The run's end, as saved at `version`, was put to Slack (a later save is shown anew)."""
    async with db.write(single=True) as conn:
        await conn.execute(_MARK_SHOWN, {"p_run_id": run_id, "p_version": version})


async def unshown_runs(
    db: Database, ended_before: datetime, ended_after: datetime, limit: int
) -> list[str]:
    """Runs that ended (completed, failed, cancelled) between the two times and whose end was
    never put to Slack: the process that ended them died before it showed them. An API
    request's run is not among them: its end is its card (and the caller's webhook)."""
    query = (
        sa.select(runs.c.id)
        .where(
            runs.c.status.in_(SHOWN_STATUSES),
            runs.c.updated_at <= ended_before,
            runs.c.updated_at >= ended_after,
            runs.c.channel_id.is_not(None),
            runs.c.agent_id.not_like(API_AGENT_PREFIX + "%"),
            sa.or_(runs.c.shown_version.is_(None), runs.c.shown_version < runs.c.version),
        )
        .order_by(runs.c.updated_at)
        .limit(limit)
    )
    async with db.read() as conn:
        return list((await conn.scalars(query)).all())


async def purge(db: Database, older_than: timedelta) -> int:
    """Delete ended runs last updated before now - older_than, with their requests and the
    requests' approvers and webhook deliveries."""
    cutoff = utcnow() - older_than
    old = sa.select(runs.c.id).where(
        runs.c.status.in_(("completed", "failed", "cancelled")), runs.c.updated_at < cutoff
    )
    async with db.write() as conn:
        ids = list((await conn.scalars(old)).all())
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            request_ids = sa.select(req.c.id).where(req.c.run_id.in_(chunk))
            await conn.execute(ra.delete().where(ra.c.request_id.in_(request_ids)))
            await conn.execute(wd.delete().where(wd.c.request_id.in_(request_ids)))
            await conn.execute(req.delete().where(req.c.run_id.in_(chunk)))
            await conn.execute(runs.delete().where(runs.c.id.in_(chunk)))
    return len(ids)

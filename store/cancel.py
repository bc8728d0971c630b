"""Cancelling a run (the kill switch): one transaction ends the run, closes its pending
requests and writes the audit event.

The run's version advances, so whichever process drives it (this replica or another) is
fenced: its next save, made before any tool body starts, raises `LeaseLostError`."""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa

from bot.agent.state import RunResult
from bot.agent.util import utcnow
from bot.agent.vocabulary import ENDED_RUN_STATUSES
from store.audit import add_audit
from store.db import Database
from store.records import ApprovalRequestRecord, RunRecord
from store.requests import fetch
from store.runs import run_record
from store.schema import approval_requests as req
from store.schema import runs


@dataclass(frozen=True)
class CancelResult:
    """`cancelled`: this call ended the run. Else `run` shows how it already ended (None: no
    such run). `requests`: the pending requests this call closed."""

    cancelled: bool
    run: RunRecord | None
    requests: list[ApprovalRequestRecord] = field(default_factory=list)


def _cancelled_state(state: str | None) -> str | None:
    """The saved run state marked cancelled (so nothing reading it continues the run)."""
    if not state:
        return state
    result = RunResult.model_validate_json(state)
    result.run.status = "cancelled"
    result.run.pause = None
    return result.model_dump_json()


async def cancel_run(db: Database, run_id: str, *, actor: str, detail: str) -> CancelResult:
    now = utcnow()
    async with db.write() as conn:
        row = (await conn.execute(sa.select(runs).where(runs.c.id == run_id))).first()
        if row is None:
            return CancelResult(False, None)
        run = run_record(row)
        if run.status in ENDED_RUN_STATUSES:
            return CancelResult(False, run)
        written = await conn.execute(
            runs.update()
            .where(runs.c.id == run_id, runs.c.version == run.version)
            .values(
                status="cancelled",
                pause_kind=None,
                pause_step=None,
                state=_cancelled_state(run.state),
                lease_owner=None,
                lease_expires_at=None,
                updated_at=now,
                version=runs.c.version + 1,
            )
        )
        if written.rowcount != 1:  # a save got in first (never on SQLite: writes are serial)
            return CancelResult(False, run)
        pending = [req.c.run_id == run_id, req.c.status == "pending"]
        ids = list((await conn.scalars(sa.select(req.c.id).where(*pending))).all())
        if ids:
            await conn.execute(
                req.update()
                .where(req.c.id.in_(ids), req.c.status == "pending")
                .values(status="cancelled", decided_by=actor, decided_at=now)
            )
        closed = await fetch(conn, sa.select(req).where(req.c.id.in_(ids))) if ids else []
        updated = (await conn.execute(sa.select(runs).where(runs.c.id == run_id))).first()
        await add_audit(  # last: the chain's head stays locked until the commit
            conn, now=now, actor=actor, action="cancel", run_id=run_id, outcome="ok", detail=detail
        )
    return CancelResult(True, run_record(updated) if updated else run, closed)

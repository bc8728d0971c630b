"""What a click and a continuation read first, each in as few statements as it can: a request
with its run, and a waiting run with its latest pause's requests and what their decisions
audited."""

from __future__ import annotations

import sqlalchemy as sa

from store.db import Database, param
from store.records import ApprovalRequestRecord, RunRecord
from store.requests import records_of, with_approvers
from store.runs import RUN_BY_ID, run_record
from store.schema import approval_requests as req
from store.schema import audit_events as audit
from store.schema import runs

_RUN_PREFIX = "run__"
_REQUEST_AND_RUN = (
    sa.select(req, *[c.label(_RUN_PREFIX + c.name) for c in runs.c])
    .outerjoin(runs, runs.c.id == req.c.run_id)
    .where(req.c.id == param("id", req.c.id))
)


async def request_and_run(
    db: Database, request_id: str
) -> tuple[ApprovalRequestRecord | None, RunRecord | None]:
    """The request and its run, in one statement (what a click on a card reads first)."""
    async with db.read() as conn:
        built = with_approvers(conn.dialect.name, _REQUEST_AND_RUN)
        rows = (await conn.execute(built, {"p_id": request_id})).all()
        if not rows:
            return None, None
        request = (await records_of(conn, rows))[0]
        found = rows[0]._mapping[_RUN_PREFIX + "id"] is not None
        return request, run_record(rows[0], _RUN_PREFIX) if found else None


_APPROVED = "approved_args_hash"
_WON = sa.and_(audit.c.request_id == req.c.id, audit.c.action == "decide", audit.c.outcome == "won")
_PAUSE_REQUESTS_AND_APPROVED = (
    sa.select(
        req,
        sa.select(audit.c.args_hash)
        .where(_WON)
        .order_by(audit.c.id.desc())
        .limit(1)
        .scalar_subquery()
        .label(_APPROVED),
    )
    .where(
        req.c.run_id == param("run_id", req.c.run_id),
        req.c.pause_seq == param("seq", req.c.pause_seq),
    )
    .order_by(req.c.pause_seq, req.c.created_at, req.c.call_id)
)
"""A pause's requests, each with the args hash its winning decision audited (see there)."""


async def run_and_current_requests(
    db: Database, run_id: str
) -> tuple[RunRecord | None, list[ApprovalRequestRecord], dict[str, str]]:
    """The run's row and, when it waits for people, its latest pause's requests and the
    arguments' hash each winning decision audited (by request id): what a continuation needs."""
    async with db.read() as conn:
        row = (await conn.execute(RUN_BY_ID, {"p_run_id": run_id})).first()
        if row is None:
            return None, [], {}
        run = run_record(row)
        if run.status != "waiting_for_human":
            return run, [], {}
        params = {"p_run_id": run_id, "p_seq": run.pause_seq}
        built = with_approvers(conn.dialect.name, _PAUSE_REQUESTS_AND_APPROVED)
        rows = (await conn.execute(built, params)).all()
        approved = {r.id: r._mapping[_APPROVED] for r in rows if r._mapping[_APPROVED]}
        return run, await records_of(conn, rows), approved

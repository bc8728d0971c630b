"""Bulk data for the memory and inbox benchmarks, written straight through SQLAlchemy Core.

`clone_paused_runs` copies a real paused run (run row with its serialized state, its pending
approval request and approvers) under new ids; `seed_requests` fills a fresh database with
many approval requests for the inbox query.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from store import Store
from store.records import ANYONE
from store.schema import approval_requests as req
from store.schema import request_approvers as ra
from store.schema import runs

CHUNK = 2000


async def _insert(conn: Any, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    for i in range(0, len(rows), CHUNK):
        await conn.execute(table.insert(), rows[i : i + CHUNK])


async def clone_paused_runs(db_url: str, template_run_id: str, count: int) -> int:
    """Insert `count` copies of a paused run (state, pending request, approvers)."""
    engine = create_async_engine(db_url, connect_args=_connect_args(db_url))
    try:
        async with engine.begin() as conn:
            run = (await conn.execute(sa.select(runs).where(runs.c.id == template_run_id))).one()
            reqs = (await conn.execute(sa.select(req).where(req.c.run_id == template_run_id))).all()
            ids = [r.id for r in reqs]
            approvers = (await conn.execute(sa.select(ra).where(ra.c.request_id.in_(ids)))).all()
            run_rows, req_rows, ra_rows = [], [], []
            for n in range(count):
                run_id = uuid.uuid4().hex
                row = dict(run._mapping)
                row["id"] = run_id
                row["thread_ts"] = f"{1800000000 + n}.000000"
                row["state"] = (row["state"] or "").replace(template_run_id, run_id)
                run_rows.append(row)
                for r in reqs:
                    new_id = uuid.uuid4().hex
                    rr = dict(r._mapping)
                    rr.update(id=new_id, run_id=run_id, message_ts=f"{1800000000 + n}.000001")
                    req_rows.append(rr)
                    ra_rows += [
                        {"request_id": new_id, "principal": a.principal}
                        for a in approvers
                        if a.request_id == r.id
                    ]
            await _insert(conn, runs, run_rows)
            await _insert(conn, req, req_rows)
            await _insert(conn, ra, ra_rows)
    finally:
        await engine.dispose()
    return count


def _connect_args(db_url: str) -> dict[str, Any]:
    return {"timeout": 60} if db_url.startswith("sqlite") else {}


async def seed_requests(db_url: str, count: int, pending_share: float, seed: int = 7) -> None:
    """A fresh database with `count` runs, one approval request each.

    A `pending_share` of them are pending (not expired); the rest are decided. Approvers:
    a third "anyone", a third the group S_APPROVERS, a third one of 20 named people;
    requesters are 50 people, one of them the approver whose inbox is queried.
    """
    store = Store(db_url)
    await store.upgrade()
    await store.close()
    rnd = random.Random(seed)
    now = datetime.now(UTC)
    engine = create_async_engine(db_url, connect_args=_connect_args(db_url))
    sqlite = db_url.startswith("sqlite")
    try:
        for start in range(0, count, 10_000):
            run_rows, req_rows, ra_rows = [], [], []
            for n in range(start, min(count, start + 10_000)):
                run_id = uuid.uuid4().hex
                created = now - timedelta(seconds=count - n)
                pending = rnd.random() < pending_share
                requester = f"U_PERSON{rnd.randrange(50):02d}"
                run_rows.append(
                    {
                        "id": run_id,
                        "agent_id": "ops",
                        "status": "waiting_for_human" if pending else "completed",
                        "pause_seq": 1,
                        "requester": requester,
                        "team_id": "T_SANDBOX",
                        "channel_id": "C_GENERAL",
                        "thread_ts": f"{1700000000 + n}.000000",
                        "request_text": "deploy v2 to staging",
                        "created_at": created,
                        "updated_at": created,
                        "version": 3,
                        "state": None,
                    }
                )
                request_id = uuid.uuid4().hex
                req_rows.append(
                    {
                        "id": request_id,
                        "run_id": run_id,
                        "pause_seq": 1,
                        "call_id": "call_1",
                        "step": 1,
                        "tool_name": "deploy",
                        "kind": "approval",
                        "arguments": {"environment": "staging", "version": f"v{n}"},
                        "status": "pending" if pending else rnd.choice(["approved", "rejected"]),
                        "decided_by": None if pending else "U_PERSON01",
                        "decided_at": None if pending else created + timedelta(minutes=5),
                        "channel_id": "C_GENERAL",
                        "message_ts": f"{1700000000 + n}.000001",
                        "expires_at": created + timedelta(days=7),
                        "requester": requester,
                        "allow_self_approval": rnd.random() < 0.5,
                        "interrupted": False,
                        "created_at": created,
                    }
                )
                kind = rnd.randrange(3)
                principal = [ANYONE, "S_APPROVERS", f"U_PERSON{rnd.randrange(20):02d}"][kind]
                ra_rows.append({"request_id": request_id, "principal": principal})
            async with engine.begin() as conn:
                await _insert(conn, runs, run_rows)
                await _insert(conn, req, req_rows)
                await _insert(conn, ra, ra_rows)
        if not sqlite:
            async with engine.connect() as conn:
                await conn.execute(sa.text("ANALYZE"))
                await conn.commit()
    finally:
        await engine.dispose()

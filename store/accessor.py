"""`StoreStateAccessor`: the runtime's state accessor, fenced by a lease.

Each save is one transaction: the run's state (only if this lease is still current), the
approval requests of a new pause, and the release of the lease once the run stops running.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.state import Pause, PendingToolCall, RunResult
from bot.agent.util import maybe_await, utcnow
from bot.agent.vocabulary import ENDED_RUN_STATUSES, PauseKind, RunStatus
from store import requests
from store import runs as run_ops
from store.db import Database, param
from store.records import Lease, LeaseLostError, RequestPolicy, RunRecord
from store.schema import runs

PolicyFn = Callable[[RunResult, PendingToolCall | None], RequestPolicy | Awaitable[RequestPolicy]]
REVIEW_TOOL = "human_review"


def _needs_old_row(pause: Pause | None) -> bool:
    """Only a pause without its own number (`Pause.seq`) is numbered from the stored row."""
    return pause is not None and "seq" not in type(pause).model_fields


def _pause_seq(pause: Pause, old: Any) -> int:
    """The pause's number: the runtime's `Pause.seq` when it has one; else the stored number,
    advanced unless this save repeats the pause already stored."""
    if "seq" in type(pause).model_fields:
        return int(pause.seq)
    if old is None:
        raise LeaseLostError("The run is not in the store: create_run it first")
    same = (
        old.status == "waiting_for_human"
        and old.pause_kind == pause.kind
        and old.pause_step == pause.step
    )
    return int(old.pause_seq) if same else int(old.pause_seq) + 1


@functools.cache
def _save_statement(with_seq: bool, running: bool) -> sa.Update:
    """A save's fenced write, built once per shape (params: p_id, p_owner, p_version: the
    lease; p_state, p_schema, p_status, p_pause_kind, p_pause_step, p_pause_seq, p_now,
    p_expires: the lease's new end while running)."""
    values: dict[str, Any] = {
        "state": param("state", runs.c.state),
        "state_schema_version": param("schema", runs.c.state_schema_version),
        "status": param("status", runs.c.status),
        "pause_kind": param("pause_kind", runs.c.pause_kind),
        "pause_step": param("pause_step", runs.c.pause_step),
        "updated_at": param("now", runs.c.updated_at),
        "version": runs.c.version + 1,
        "lease_expires_at": param("expires", runs.c.lease_expires_at),
    }
    if with_seq:
        values["pause_seq"] = param("pause_seq", runs.c.pause_seq)
    if not running:  # the run stopped running: the lease ends with this save
        values["lease_owner"] = None
    return (
        runs.update()
        .where(
            runs.c.id == param("id", runs.c.id),
            runs.c.lease_owner == param("owner", runs.c.lease_owner),
            runs.c.version == param("version", runs.c.version),
        )
        .values(**values)
        .returning(runs.c.requester, runs.c.channel_id)
    )


@dataclass(frozen=True)
class SavedRun:
    """The run's columns as the accessor's last save wrote them (a `RunRecord` of the run
    is this plus the columns a save never changes): who drives the run needs no read back."""

    status: RunStatus
    pause_kind: PauseKind | None
    pause_step: int | None
    pause_seq: int | None
    """None: this save left the pause number as it was."""
    updated_at: datetime
    version: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    state: str
    state_schema_version: int

    def applied_to(self, record: RunRecord) -> RunRecord:
        """`record` (read before this save) as the row is now."""
        changed = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.pause_seq is None:
            changed["pause_seq"] = record.pause_seq
        return replace(record, **changed)


class StoreStateAccessor:
    """Loads any run; saves only the leased run, and only while the lease is current."""

    def __init__(self, db: Database, lease: Lease, policy: PolicyFn, lease_seconds: float) -> None:
        self.db = db
        self.lease = lease
        self.policy = policy
        self.lease_seconds = lease_seconds
        self.saved: SavedRun | None = None
        """What the last save through this accessor wrote (None before the first)."""

    async def load(self, run_id: str) -> RunResult | None:
        return await run_ops.load_result(self.db, run_id)

    async def save(self, result: RunResult) -> None:
        # Longer than 60 lines because a save is one transaction: state, requests, fence.
        run = result.run
        lease = self.lease
        if run.id != lease.run_id:
            raise ValueError(f"This accessor holds run {lease.run_id}, not {run.id}")
        pause = run.pause if run.status == "waiting_for_human" else None
        policies: list[tuple[PendingToolCall | None, RequestPolicy]] = []
        if pause is not None and pause.kind == "human_review":
            policies.append((None, await maybe_await(self.policy(result, None))))
        elif pause is not None:
            for p in pause.pending_tool_calls:
                policies.append((p, await maybe_await(self.policy(result, p))))
        now = utcnow()
        state = result.model_dump_json()
        # a save between pauses is one statement (the fenced write): no transaction around it
        single = pause is None and run.status not in ENDED_RUN_STATUSES
        async with self.db.write(single=single) as conn:
            old = await self._old_row(conn, run.id) if _needs_old_row(pause) else None
            seq = _pause_seq(pause, old) if pause is not None else None
            running = run.status == "running"  # a save is also a heartbeat
            expires = now + timedelta(seconds=self.lease_seconds) if running else None
            params = {
                "p_id": run.id,
                "p_owner": lease.owner,
                "p_version": lease.version,
                "p_state": state,
                "p_schema": result.schema_version,
                "p_status": run.status,
                "p_pause_kind": pause.kind if pause else None,
                "p_pause_step": pause.step if pause else None,
                "p_pause_seq": seq,
                "p_now": now,
                "p_expires": expires,
            }
            # One statement: the fenced write, returning what a new pause's requests need
            # (no read of the row first; the write's row count is the fence).
            statement = _save_statement(seq is not None, running)
            written = (await conn.execute(statement, params)).first()
            if written is None:
                if await self._old_row(conn, run.id) is None:
                    raise LeaseLostError(f"Run {run.id} is not in the store: create_run it first")
                raise LeaseLostError(
                    f"Run {run.id}: the lease of {lease.owner} (version {lease.version}) is no "
                    "longer current; another replica took the run over. This write was refused."
                )
            if pause is not None and seq is not None:
                await self._add_requests(conn, result, pause, seq, policies, written)
            if run.status in ENDED_RUN_STATUSES:
                await requests.cancel_pending(conn, run.id, now)
        lease.version += 1
        if expires is not None:
            lease.expires_at = expires
        self.saved = SavedRun(
            status=run.status,
            pause_kind=pause.kind if pause else None,
            pause_step=pause.step if pause else None,
            pause_seq=seq,
            updated_at=now,
            version=lease.version,
            lease_owner=None if run.status != "running" else lease.owner,
            lease_expires_at=expires,
            state=state,
            state_schema_version=result.schema_version,
        )

    @staticmethod
    async def _old_row(conn: AsyncConnection, run_id: str) -> Any:
        query = sa.select(
            runs.c.status, runs.c.pause_kind, runs.c.pause_step, runs.c.pause_seq
        ).where(runs.c.id == run_id)
        return (await conn.execute(query)).first()

    async def _add_requests(
        self,
        conn: AsyncConnection,
        result: RunResult,
        pause: Pause,
        seq: int,
        policies: list[tuple[PendingToolCall | None, RequestPolicy]],
        old: Any,
    ) -> None:
        now = utcnow()
        common: dict[str, Any] = {
            "run_id": result.run.id,
            "pause_seq": seq,
            "step": pause.step,
            "requester": old.requester,
            "channel_id": old.channel_id,
            "now": now,
        }
        for pending, policy in policies:
            if pending is None:
                review = pause.review
                arguments = review.model_dump(mode="json") if review else {}
                await requests.insert_request(
                    self.db,
                    conn,
                    call_id=f"review:{pause.step}",
                    tool_name=REVIEW_TOOL,
                    kind="review",
                    arguments={
                        "reason": arguments.get("reason"),
                        "payload": arguments.get("payload"),
                    },
                    policy=policy,
                    interrupted=False,
                    **common,
                )
            else:
                await requests.insert_request(
                    self.db,
                    conn,
                    call_id=pending.call.id,
                    tool_name=pending.call.name,
                    kind=pending.kind,
                    arguments=pending.call.model_dump(mode="json")["arguments"],
                    policy=policy,
                    interrupted=pending.interrupted,
                    **common,
                )

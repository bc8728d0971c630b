"""`StoreStateAccessor`: the runtime's state accessor, fenced by a lease.

Each save is one transaction: the run's state (only if this lease is still current), the
approval requests of a new pause, and the release of the lease once the run stops running.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.state import Pause, PendingToolCall, RunResult
from bot.agent.util import maybe_await, utcnow
from bot.agent.vocabulary import ENDED_RUN_STATUSES
from store import requests
from store import runs as run_ops
from store.db import Database
from store.records import Lease, LeaseLostError, RequestPolicy
from store.schema import runs

PolicyFn = Callable[[RunResult, PendingToolCall | None], RequestPolicy | Awaitable[RequestPolicy]]
REVIEW_TOOL = "human_review"


def _pause_seq(pause: Pause, old: Any) -> int:
    """The pause's number: the runtime's `Pause.seq` when it has one; else the stored number,
    advanced unless this save repeats the pause already stored."""
    if "seq" in type(pause).model_fields:
        return int(pause.seq)
    same = (
        old.status == "waiting_for_human"
        and old.pause_kind == pause.kind
        and old.pause_step == pause.step
    )
    return int(old.pause_seq) if same else int(old.pause_seq) + 1


class StoreStateAccessor:
    """Loads any run; saves only the leased run, and only while the lease is current."""

    def __init__(self, db: Database, lease: Lease, policy: PolicyFn, lease_seconds: float) -> None:
        self.db = db
        self.lease = lease
        self.policy = policy
        self.lease_seconds = lease_seconds

    async def load(self, run_id: str) -> RunResult | None:
        return await run_ops.load_result(self.db, run_id)

    async def save(self, result: RunResult) -> None:
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
        async with self.db.write() as conn:
            old = (
                await conn.execute(
                    sa.select(
                        runs.c.status,
                        runs.c.pause_kind,
                        runs.c.pause_step,
                        runs.c.pause_seq,
                        runs.c.requester,
                        runs.c.channel_id,
                    ).where(runs.c.id == run.id)
                )
            ).first()
            if old is None:
                raise LeaseLostError(f"Run {run.id} is not in the store: create_run it first")
            values: dict[str, Any] = {
                "state": result.model_dump_json(),
                "state_schema_version": result.schema_version,
                "status": run.status,
                "pause_kind": pause.kind if pause else None,
                "pause_step": pause.step if pause else None,
                "updated_at": now,
                "version": runs.c.version + 1,
            }
            seq = _pause_seq(pause, old) if pause is not None else None
            if seq is not None:
                values["pause_seq"] = seq
            if run.status == "running":  # a save is also a heartbeat
                values["lease_expires_at"] = now + timedelta(seconds=self.lease_seconds)
            else:
                values["lease_owner"] = None
                values["lease_expires_at"] = None
            written = await conn.execute(
                runs.update()
                .where(
                    runs.c.id == run.id,
                    runs.c.lease_owner == lease.owner,
                    runs.c.version == lease.version,
                )
                .values(**values)
            )
            if written.rowcount != 1:
                raise LeaseLostError(
                    f"Run {run.id}: the lease of {lease.owner} (version {lease.version}) is no "
                    "longer current; another replica took the run over. This write was refused."
                )
            if pause is not None and seq is not None:
                await self._add_requests(conn, result, pause, seq, policies, old)
            if run.status in ENDED_RUN_STATUSES:
                await requests.cancel_pending(conn, run.id, now)
        lease.version += 1
        if run.status == "running":
            lease.expires_at = values["lease_expires_at"]

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

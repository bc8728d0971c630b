"""`store.runs`: runs, their leases, and handing ready runs to workers."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Unpack

from bot.agent.state import RunResult
from store import runs as run_ops
from store import wakeups
from store.accessor import PolicyFn, StoreStateAccessor
from store.cancel import CancelResult, cancel_run
from store.db import Database
from store.records import Lease, RunRecord
from store.runs import NewRun
from store.starts import StartLimit, starts_since


class RunRepository:
    """Runs: create, read, cancel; leases (who drives a run now); ready runs and wake-ups."""

    def __init__(self, db: Database, replica_id: str, lease_seconds: float) -> None:
        self._db = db
        self.replica_id = replica_id
        self.lease_seconds = lease_seconds

    # -- the run ---------------------------------------------------------------------------

    async def create(self, limit: StartLimit | None = None, **run: Unpack[NewRun]) -> Lease:
        """Store a new run, leased to this replica (the runtime's first save fills it in).

        With `limit`, the run is stored only if its requester is under it: otherwise
        `StartLimitReached` is raised and nothing is stored."""
        return await run_ops.create_run(
            self._db, owner=self.replica_id, lease_seconds=self.lease_seconds, limit=limit, **run
        )

    async def starts_since(self, person: str, since: datetime) -> builtins.list[datetime]:
        """When `person` started or retried runs since `since`, oldest first."""
        return await starts_since(self._db, person, since)

    async def cancel(self, run_id: str, *, actor: str, detail: str = "") -> CancelResult:
        """End the run as cancelled, close its pending requests, audit it (one transaction).
        Whoever drives the run is fenced: its next save is refused."""
        return await cancel_run(self._db, run_id, actor=actor, detail=detail)

    async def set_thread(self, run_id: str, channel_id: str, thread_ts: str) -> None:
        await run_ops.set_thread(self._db, run_id, channel_id, thread_ts)

    async def get(self, run_id: str) -> RunRecord | None:
        return await run_ops.get_run(self._db, run_id)

    async def get_many(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """Several runs in one query, keyed by id; ids that do not exist are left out."""
        return await run_ops.get_runs(self._db, builtins.list(dict.fromkeys(run_ids)))

    async def load_result(self, run_id: str) -> RunResult | None:
        return await run_ops.load_result(self._db, run_id)

    async def for_thread(self, channel_id: str, thread_ts: str) -> RunRecord | None:
        return await run_ops.run_for_thread(self._db, channel_id, thread_ts)

    async def list(
        self, *, status: str | None = None, requester: str | None = None, limit: int = 50
    ) -> builtins.list[RunRecord]:
        """The newest runs first, optionally of one status or one requester."""
        return await run_ops.list_runs(self._db, status=status, requester=requester, limit=limit)

    async def mark_shown(self, run_id: str, version: int) -> None:
        """The run's end as saved at `version` is in Slack's outbox (answer, failure, status)."""
        await run_ops.mark_shown(self._db, run_id, version)

    async def unshown(
        self, ended_before: datetime, ended_after: datetime, limit: int = 100
    ) -> builtins.list[str]:
        """Completed or failed runs whose end was never shown (their process died first)."""
        return await run_ops.unshown_runs(self._db, ended_before, ended_after, limit)

    # -- leases ----------------------------------------------------------------------------

    async def claim(self, run_id: str) -> Lease | None:
        """Take the run's lease for this replica if nobody holds it (or it lapsed)."""
        return await run_ops.claim_run(
            self._db, run_id, owner=self.replica_id, lease_seconds=self.lease_seconds
        )

    async def renew(self, lease: Lease) -> bool:
        return await run_ops.renew(self._db, lease, lease_seconds=self.lease_seconds)

    async def release(self, lease: Lease) -> None:
        await run_ops.release(self._db, lease)

    def accessor(self, lease: Lease, policy: PolicyFn) -> StoreStateAccessor:
        """The runtime's state accessor for a run this replica holds."""
        return StoreStateAccessor(self._db, lease, policy, self.lease_seconds)

    # -- ready runs, handed to workers (store/wakeups.py) ----------------------------------

    async def ready(self, now: datetime | None = None, limit: int = 100) -> builtins.list[str]:
        return await run_ops.ready_runs(self._db, now, limit)

    async def count_ready(self) -> int:
        """Runs waiting for a worker now."""
        return await run_ops.count_ready(self._db)

    async def lapsed(self, now: datetime | None = None, limit: int = 100) -> builtins.list[str]:
        return await run_ops.lapsed_runs(self._db, now, limit)

    async def hand_off(self, lease: Lease) -> None:
        """Release the lease so a worker takes the run; wake workers (PostgreSQL NOTIFY)."""
        await wakeups.hand_off(self._db, lease)

    async def notify_ready(self, run_id: str) -> None:
        """Wake workers listening on PostgreSQL: the run may be ready (no-op on SQLite)."""
        await wakeups.notify_ready(self._db, run_id)

    async def claim_ready(self, limit: int) -> builtins.list[Lease]:
        """Claim up to `limit` ready runs for this replica, oldest first."""
        return await wakeups.claim_ready(
            self._db, owner=self.replica_id, lease_seconds=self.lease_seconds, limit=limit
        )

    def ready_listener(self, on_ready: Callable[[str | None], None]) -> wakeups.ReadyListener:
        """A listener for ready runs (PostgreSQL only: `start()` is a no-op on SQLite)."""
        return wakeups.ReadyListener(self._db, on_ready)

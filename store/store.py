"""`Store`: the one object the service uses for runs, leases, approval requests and audit."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Unpack

from bot.agent.state import RunResult
from store import audit as audit_ops
from store import crypto, escalation, grants, migrate, quorum, wakeups
from store import decisions as decision_ops
from store import inbox as inbox_ops
from store import requests as request_ops
from store import runs as run_ops
from store.accessor import PolicyFn, StoreStateAccessor
from store.audit import AuditEntry
from store.cancel import CancelResult, cancel_run
from store.db import DEFAULT_URL, Database
from store.decisions import DecisionInput, LeaseClaim
from store.quorum import ApprovalCount
from store.records import (
    ApprovalRequestRecord,
    AuditEvent,
    DecisionResult,
    GrantRecord,
    Lease,
    RequestPolicy,
    RunRecord,
)
from store.rekey import reencrypt
from store.runs import NewRun
from store.starts import StartLimit, starts_since


def default_replica_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Store:
    """Durable state on SQLite (one file) or PostgreSQL (several replicas)."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        replica_id: str | None = None,
        lease_seconds: float = 30.0,
        encryption_keys: Sequence[str] = (),
    ) -> None:
        """`encryption_keys`: Fernet keys; when given, run state, request arguments, edited
        arguments, outputs and reasons are encrypted with the first and read with any."""
        self.db = Database(url, encryption_keys)
        self.replica_id = replica_id or default_replica_id()
        self.lease_seconds = lease_seconds

    def __repr__(self) -> str:  # never shows the URL: it may carry a password
        return f"Store(dialect={self.db.dialect!r}, replica_id={self.replica_id!r})"

    # -- lifecycle -----------------------------------------------------------------------

    async def upgrade(self) -> None:
        await migrate.upgrade(self.db)

    async def close(self) -> None:
        await self.db.close()

    async def reencrypt(self, batch: int = 200) -> int:
        """Rewrite every encrypted column with the first key (plaintext rows get encrypted);
        returns how many values changed."""
        return await reencrypt(self.db, batch)

    async def ping(self) -> bool:
        return await self.db.ping()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- runs ----------------------------------------------------------------------------

    async def create_run(self, limit: StartLimit | None = None, **run: Unpack[NewRun]) -> Lease:
        """Store a new run, leased to this replica (the runtime's first save fills it in).

        With `limit`, the run is stored only if its requester is under it: otherwise
        `StartLimitReached` is raised and nothing is stored."""
        return await run_ops.create_run(
            self.db, owner=self.replica_id, lease_seconds=self.lease_seconds, limit=limit, **run
        )

    async def starts_since(self, person: str, since: datetime) -> list[datetime]:
        """When `person` started or retried runs since `since`, oldest first."""
        return await starts_since(self.db, person, since)

    async def cancel_run(self, run_id: str, *, actor: str, detail: str = "") -> CancelResult:
        """End the run as cancelled, close its pending requests, audit it (one transaction).
        Whoever drives the run is fenced: its next save is refused."""
        return await cancel_run(self.db, run_id, actor=actor, detail=detail)

    async def set_thread(self, run_id: str, channel_id: str, thread_ts: str) -> None:
        await run_ops.set_thread(self.db, run_id, channel_id, thread_ts)

    async def get_run(self, run_id: str) -> RunRecord | None:
        return await run_ops.get_run(self.db, run_id)

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """Several runs in one query, keyed by id; ids that do not exist are left out."""
        return await run_ops.get_runs(self.db, list(dict.fromkeys(run_ids)))

    async def load_result(self, run_id: str) -> RunResult | None:
        return await run_ops.load_result(self.db, run_id)

    async def run_for_thread(self, channel_id: str, thread_ts: str) -> RunRecord | None:
        return await run_ops.run_for_thread(self.db, channel_id, thread_ts)

    async def list_runs(
        self, *, status: str | None = None, requester: str | None = None, limit: int = 50
    ) -> list[RunRecord]:
        return await run_ops.list_runs(self.db, status=status, requester=requester, limit=limit)

    # -- leases --------------------------------------------------------------------------

    async def claim_run(self, run_id: str) -> Lease | None:
        return await run_ops.claim_run(
            self.db, run_id, owner=self.replica_id, lease_seconds=self.lease_seconds
        )

    async def renew(self, lease: Lease) -> bool:
        return await run_ops.renew(self.db, lease, lease_seconds=self.lease_seconds)

    async def release(self, lease: Lease) -> None:
        await run_ops.release(self.db, lease)

    def accessor(self, lease: Lease, policy: PolicyFn) -> StoreStateAccessor:
        return StoreStateAccessor(self.db, lease, policy, self.lease_seconds)

    async def ready_runs(self, now: datetime | None = None, limit: int = 100) -> list[str]:
        return await run_ops.ready_runs(self.db, now, limit)

    async def count_ready(self) -> int:
        """Runs waiting for a worker now."""
        return await run_ops.count_ready(self.db)

    # -- handing runs to workers (store/wakeups.py) ----------------------------------------

    async def hand_off(self, lease: Lease) -> None:
        """Release the lease so a worker takes the run; wake workers (PostgreSQL NOTIFY)."""
        await wakeups.hand_off(self.db, lease)

    async def notify_ready(self, run_id: str) -> None:
        """Wake workers listening on PostgreSQL: the run may be ready (no-op on SQLite)."""
        await wakeups.notify_ready(self.db, run_id)

    async def claim_ready(self, limit: int) -> list[Lease]:
        """Claim up to `limit` ready runs for this replica, oldest first."""
        return await wakeups.claim_ready(
            self.db, owner=self.replica_id, lease_seconds=self.lease_seconds, limit=limit
        )

    def ready_listener(self, on_ready: Callable[[str | None], None]) -> wakeups.ReadyListener:
        """A listener for ready runs (PostgreSQL only: `start()` is a no-op on SQLite)."""
        return wakeups.ReadyListener(self.db, on_ready)

    async def lapsed_runs(self, now: datetime | None = None, limit: int = 100) -> list[str]:
        return await run_ops.lapsed_runs(self.db, now, limit)

    # -- approval requests ---------------------------------------------------------------

    async def get_request(self, request_id: str) -> ApprovalRequestRecord | None:
        """The request; EncryptionKeyError when one of its values no key reads."""
        return crypto.check_readable(await request_ops.get_request(self.db, request_id))

    async def requests_for_run(
        self, run_id: str, *, step: int | None = None
    ) -> list[ApprovalRequestRecord]:
        """Every request of the run (all pauses), oldest pause first."""
        return await request_ops.requests_for_run(self.db, run_id, step=step)

    async def current_requests(self, run_id: str) -> list[ApprovalRequestRecord]:
        """The requests of the run's latest pause (the ones a continuation needs)."""
        return await request_ops.requests_for_run(self.db, run_id, current=True)

    async def run_and_current_requests(
        self, run_id: str
    ) -> tuple[RunRecord | None, list[ApprovalRequestRecord]]:
        """The run and, when it waits for people, its latest pause's requests (one read)."""
        return await request_ops.run_and_current_requests(self.db, run_id)

    async def set_request_message(self, request_id: str, channel_id: str, message_ts: str) -> None:
        await request_ops.set_request_message(self.db, request_id, channel_id, message_ts)

    async def decide(
        self,
        request_id: str,
        *,
        now: datetime | None = None,
        claim: bool = False,
        **attempt: Unpack[DecisionInput],
    ) -> DecisionResult:
        """Decide a pending request exactly once: the first attempt before its deadline wins;
        every attempt is audited. With `claim`, a decision that makes the run ready also
        takes the run's lease for this replica in the same transaction (`.lease`)."""
        lease_claim = LeaseClaim(self.replica_id, self.lease_seconds) if claim else None
        return await decision_ops.decide(self.db, request_id, now=now, claim=lease_claim, **attempt)

    async def count_approval(
        self,
        request_id: str,
        *,
        actor: str,
        edited_arguments: dict[str, Any] | None = None,
        reason: str | None = None,
        now: datetime | None = None,
    ) -> ApprovalCount:
        """Count one person's approval of a quorum request (an edit resets the count first);
        the approval that meets the quorum decides the request exactly once."""
        return await quorum.count_approval(
            self.db,
            request_id,
            actor=actor,
            edited_arguments=edited_arguments,
            reason=reason,
            now=now,
        )

    async def reapply_policy(
        self, request_id: str, policy: RequestPolicy
    ) -> ApprovalRequestRecord | None:
        """Put a pending request under a stricter policy (an edit moved it under a rule)."""
        return await quorum.reapply_policy(self.db, request_id, policy)

    async def escalate_due(
        self, now: datetime | None = None, limit: int = 100
    ) -> list[ApprovalRequestRecord]:
        """Escalate pending requests past their escalation time, each exactly once."""
        return await escalation.escalate_due(self.db, now, limit)

    # -- standing approvals ------------------------------------------------------------------

    async def add_grant(
        self,
        *,
        agent_id: str,
        tool_name: str,
        channel_id: str,
        thread_ts: str,
        granted_by: str,
        lasts: timedelta,
        request_id: str | None = None,
        run_id: str | None = None,
    ) -> GrantRecord:
        """Let calls of one tool in one thread run without a card for `lasts` (audited)."""
        return await grants.add_grant(
            self.db,
            agent_id=agent_id,
            tool_name=tool_name,
            channel_id=channel_id,
            thread_ts=thread_ts,
            granted_by=granted_by,
            lasts=lasts,
            request_id=request_id,
            run_id=run_id,
        )

    async def live_grant(
        self, *, agent_id: str, tool_name: str, channel_id: str, thread_ts: str
    ) -> GrantRecord | None:
        return await grants.live_grant(
            self.db,
            agent_id=agent_id,
            tool_name=tool_name,
            channel_id=channel_id,
            thread_ts=thread_ts,
        )

    async def get_grant(self, grant_id: str) -> GrantRecord | None:
        return await grants.get_grant(self.db, grant_id)

    async def set_grant_message(self, grant_id: str, message_ts: str) -> None:
        await grants.set_grant_message(self.db, grant_id, message_ts)

    async def revoke_grant(self, grant_id: str, actor: str) -> tuple[bool, GrantRecord | None]:
        """Revoke a grant once (audited): (this call revoked it, the grant now)."""
        return await grants.revoke_grant(self.db, grant_id, actor)

    async def expire_due(
        self, now: datetime | None = None, limit: int = 100
    ) -> list[ApprovalRequestRecord]:
        return await decision_ops.expire_due(self.db, now, limit)

    async def pending_for(
        self,
        user_id: str,
        group_ids: Sequence[str] = (),
        *,
        include_anyone: bool = True,
        limit: int = 50,
        now: datetime | None = None,
        count_limit: int = request_ops.INBOX_COUNT_LIMIT,
        anyone_channels: Sequence[str] | None = None,
    ) -> tuple[list[ApprovalRequestRecord], int]:
        """A page of what `user_id` may decide, newest first, and the total counted up to
        `count_limit` (a total equal to it means "at least that many"). Requests open to
        anyone come only from `anyone_channels` when it is given."""
        return await inbox_ops.pending_for(
            self.db,
            user_id,
            group_ids,
            include_anyone=include_anyone,
            limit=limit,
            now=now,
            count_limit=count_limit,
            anyone_channels=anyone_channels,
        )

    async def open_request_channels(
        self, now: datetime | None = None, limit: int = 500
    ) -> list[str]:
        """Channels with pending requests that any full member (of the channel) may decide."""
        return await inbox_ops.open_request_channels(self.db, now, limit)

    # -- audit, dedup, retention ---------------------------------------------------------

    async def audit(self, **entry: Unpack[AuditEntry]) -> None:
        """Append one event to the audit trail (`actor`, `action` and `outcome` are required)."""
        await audit_ops.audit(self.db, **entry)

    async def audit_trail(self, run_id: str) -> list[AuditEvent]:
        return await audit_ops.audit_trail(self.db, run_id)

    async def first_delivery(self, event_id: str) -> bool:
        return await audit_ops.first_delivery(self.db, event_id)

    async def runs_missing_cards(self, created_before: datetime, limit: int = 100) -> list[str]:
        """Waiting runs whose pending requests were never posted (their poster died)."""
        return await request_ops.runs_missing_cards(self.db, created_before, limit)

    async def due_reminders(
        self, created_before: datetime, now: datetime | None = None, limit: int = 100
    ) -> list[ApprovalRequestRecord]:
        """Pending requests older than `created_before`, never reminded: claimed once each."""
        return await request_ops.due_reminders(self.db, created_before, now, limit)

    async def purge(self, older_than: timedelta) -> int:
        """Delete ended runs not updated for `older_than`, with their requests and approvers,
        and Slack event ids older than that. Audit events are kept. Returns the runs deleted."""
        await audit_ops.purge_events(self.db, older_than)
        return await run_ops.purge(self.db, older_than)

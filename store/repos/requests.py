"""`store.requests`: approval requests, and deciding them exactly once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Unpack

from store import crypto, escalation, quorum, request_reads
from store import decisions as decision_ops
from store import inbox as inbox_ops
from store import requests as request_ops
from store.db import Database
from store.decisions import DecisionInput, LeaseClaim
from store.quorum import ApprovalCount
from store.records import ApprovalRequestRecord, DecisionResult, RequestPolicy, RunRecord


class RequestRepository:
    """Approval requests: read them, decide them (exactly once), count a quorum, and find
    the ones due for expiry, escalation, a reminder or a card."""

    def __init__(self, db: Database, replica_id: str, lease_seconds: float) -> None:
        self._db = db
        self._claim = LeaseClaim(replica_id, lease_seconds)

    # -- reading ---------------------------------------------------------------------------

    async def get(self, request_id: str) -> ApprovalRequestRecord | None:
        """The request; EncryptionKeyError when one of its values no key reads."""
        return crypto.check_readable(await request_ops.get_request(self._db, request_id))

    async def with_run(
        self, request_id: str
    ) -> tuple[ApprovalRequestRecord | None, RunRecord | None]:
        """The request and its run, in one read (EncryptionKeyError as `get`)."""
        request, run = await request_reads.request_and_run(self._db, request_id)
        return crypto.check_readable(request), run

    async def for_run(self, run_id: str, *, step: int | None = None) -> list[ApprovalRequestRecord]:
        """Every request of the run (all pauses), oldest pause first."""
        return await request_ops.requests_for_run(self._db, run_id, step=step)

    async def current(self, run_id: str) -> list[ApprovalRequestRecord]:
        """The requests of the run's latest pause (the ones a continuation needs)."""
        return await request_ops.requests_for_run(self._db, run_id, current=True)

    async def run_and_current(
        self, run_id: str
    ) -> tuple[RunRecord | None, list[ApprovalRequestRecord], dict[str, str]]:
        """The run and, when it waits for people, its latest pause's requests, with the
        arguments' hash the audit trail recorded for each winning decision (one read)."""
        return await request_reads.run_and_current_requests(self._db, run_id)

    async def set_message(self, request_id: str, channel_id: str, message_ts: str) -> None:
        """Where the request's card was posted."""
        await request_ops.set_request_message(self._db, request_id, channel_id, message_ts)

    # -- deciding --------------------------------------------------------------------------

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
        lease_claim = self._claim if claim else None
        return await decision_ops.decide(
            self._db, request_id, now=now, claim=lease_claim, **attempt
        )

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
            self._db,
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
        return await quorum.reapply_policy(self._db, request_id, policy)

    # -- due: expiry, escalation, reminders, cards never posted -----------------------------

    async def expire_due(
        self, now: datetime | None = None, limit: int = 100
    ) -> list[ApprovalRequestRecord]:
        """Expire pending requests past their deadline, each exactly once."""
        return await decision_ops.expire_due(self._db, now, limit)

    async def escalate_due(
        self, now: datetime | None = None, limit: int = 100
    ) -> list[ApprovalRequestRecord]:
        """Escalate pending requests past their escalation time, each exactly once."""
        return await escalation.escalate_due(self._db, now, limit)

    async def due_reminders(
        self, created_before: datetime, now: datetime | None = None, limit: int = 100
    ) -> list[ApprovalRequestRecord]:
        """Pending requests older than `created_before`, never reminded: claimed once each."""
        return await request_ops.due_reminders(self._db, created_before, now, limit)

    async def runs_missing_cards(self, created_before: datetime, limit: int = 100) -> list[str]:
        """Waiting runs whose pending requests were never posted (their poster died)."""
        return await request_ops.runs_missing_cards(self._db, created_before, limit)

    # -- who may decide what ---------------------------------------------------------------

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
        `count_limit` (a total equal to it means "at least that many"). RequestRepository open to
        anyone come only from `anyone_channels` when it is given."""
        return await inbox_ops.pending_for(
            self._db,
            user_id,
            group_ids,
            include_anyone=include_anyone,
            limit=limit,
            now=now,
            count_limit=count_limit,
            anyone_channels=anyone_channels,
        )

    async def open_channels(self, now: datetime | None = None, limit: int = 500) -> list[str]:
        """Channels with pending requests that any full member (of the channel) may decide."""
        return await inbox_ops.open_request_channels(self._db, now, limit)

    async def pending_counts(self) -> list[tuple[str, str, int]]:
        """(agent, tool, how many requests wait for a person), over every replica."""
        return await inbox_ops.pending_counts(self._db)

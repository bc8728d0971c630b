"""`store.api`: the approval API's keys, quotas, requests and webhook deliveries."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from store import api as api_ops
from store import notify as notify_ops
from store import quota
from store import webhooks as delivery_ops
from store.api import ApiKey, ApiRequestLink, NewApiRequest
from store.db import Database
from store.records import ApprovalRequestRecord, RunRecord
from store.webhooks import Delivery


class ApiRepository:
    """What the approval API stores: keys (hashed) with their policy and quota, the link
    from a request to the key that made it, and the webhook deliveries of settled requests."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._quota = quota.QuotaAhead(db)

    # -- keys ------------------------------------------------------------------------------

    async def create_key(
        self,
        name: str,
        token: str,
        webhook_secret: str,
        channels: list[str],
        *,
        approvers: list[str] | None = None,
        min_approvals: int | None = None,
        allow_self_approval: bool | None = None,
        expires_in: int | None = None,
    ) -> bool:
        """Store a key (hashed) with its own policy; False when the name is taken."""
        return await api_ops.create_key(
            self._db,
            name,
            token,
            webhook_secret,
            channels,
            approvers=approvers,
            min_approvals=min_approvals,
            allow_self_approval=allow_self_approval,
            expires_in=expires_in,
        )

    async def list_keys(self) -> list[ApiKey]:
        return await api_ops.list_keys(self._db)

    async def revoke_key(self, name: str) -> bool:
        return await api_ops.revoke_key(self._db, name)

    async def key_for_token(self, token: str) -> ApiKey | None:
        """The live key whose hash this token has, if any."""
        return await api_ops.key_for_token(self._db, token)

    async def get_key(self, name: str) -> ApiKey | None:
        return await api_ops.get_key(self._db, name)

    async def set_key_quota(self, name: str, per_minute: int | None) -> bool:
        """Set a key's requests per minute (None: the default); False when there is no such key."""
        return await api_ops.set_key_quota(self._db, name, per_minute)

    async def take_quota(self, key_name: str, per_minute: int) -> int | None:
        """Count a request of the key (None), or the seconds until it may make one: counted in
        the database, so every replica shares the key's one quota."""
        return await self._quota.take(key_name, per_minute)

    # -- requests --------------------------------------------------------------------------

    async def create_request(self, new: NewApiRequest) -> api_ops.StoredApiRequest:
        """The request and its run, stored and audited in one transaction (`created`); an
        idempotency key used before gives the earlier request (`IdempotencyConflict` when its
        body differs)."""
        return await api_ops.create_request(self._db, new)

    async def key_owns_thread(self, key_name: str, channel_id: str, thread_ts: str) -> bool:
        return await api_ops.key_owns_thread(self._db, key_name, channel_id, thread_ts)

    async def by_idempotency_key(self, key_name: str, idempotency_key: str) -> str | None:
        return await api_ops.by_idempotency_key(self._db, key_name, idempotency_key)

    async def link_of(self, request_id: str) -> ApiRequestLink | None:
        """Which key made the request, and where its webhook goes."""
        return await api_ops.link_of(self._db, request_id)

    async def request_and_run(
        self, request_id: str
    ) -> tuple[ApprovalRequestRecord, RunRecord] | None:
        return await api_ops.request_and_run(self._db, request_id)

    async def cancel(self, request_id: str, actor: str, detail: str) -> bool:
        """Cancel a pending request (audited); False when it was no longer pending."""
        return await api_ops.cancel(self._db, request_id, actor, detail)

    async def end_run(self, request: ApprovalRequestRecord) -> None:
        """End the run of a settled API request (it has nothing to continue)."""
        await api_ops.end_run(self._db, request)

    # -- settled requests, heard on every replica (PostgreSQL LISTEN/NOTIFY) ---------------

    async def notify_settled(self, request_id: str) -> None:
        """Tell every replica the request is settled (no-op on SQLite)."""
        await notify_ops.notify(self._db, request_id)

    def settled_listener(
        self, on_settled: Callable[[str], None], on_connected: Callable[[], None]
    ) -> notify_ops.ChannelListener:
        """A listener for settled requests (PostgreSQL only: nothing happens on SQLite)."""
        return notify_ops.ChannelListener(
            self._db, notify_ops.CHANNEL, on_settled, on_connected, what="settled_requests"
        )

    # -- webhook deliveries ----------------------------------------------------------------

    async def add_delivery(self, request_id: str, url: str) -> Delivery | None:
        """Queue the settled request's webhook (None: it was queued already)."""
        return await delivery_ops.add_delivery(self._db, request_id, url)

    async def claim_delivery(
        self, delivery_id: str, seen_attempts: int, hold: timedelta
    ) -> Delivery | None:
        """Take one attempt of a delivery: no two replicas make the same attempt."""
        return await delivery_ops.claim_delivery(self._db, delivery_id, seen_attempts, hold)

    async def due_deliveries(self, now: datetime | None, limit: int) -> list[Delivery]:
        return await delivery_ops.due_deliveries(self._db, now, limit)

    async def finish_attempt(
        self,
        delivery: Delivery,
        *,
        ok: bool,
        error: str | None,
        next_attempt_at: datetime | None,
        run_id: str | None,
    ) -> None:
        """Record an attempt's result (and audit it): delivered, retried later, or given up."""
        await delivery_ops.finish_attempt(
            self._db, delivery, ok=ok, error=error, next_attempt_at=next_attempt_at, run_id=run_id
        )

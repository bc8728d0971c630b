"""`store.audit`: the audit trail (hash-chained), its export and its SIEM webhook cursor."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Unpack

from store import audit as audit_ops
from store.audit import AuditEntry, ChainEnds, EventFilter, WebhookCursor
from store.db import Database
from store.records import AuditEvent


class AuditRepository:
    """The audit trail: append, read a run's trail, page through the chain, purge a prefix;
    and the cursor of the SIEM webhook (bot/ops/audit_webhook.py)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, **entry: Unpack[AuditEntry]) -> None:
        """Append one event to the audit trail (`actor`, `action` and `outcome` are required)."""
        await audit_ops.audit(self._db, **entry)

    async def trail(self, run_id: str) -> list[AuditEvent]:
        """The run's events, oldest first."""
        return await audit_ops.audit_trail(self._db, run_id)

    async def chain_ends(self) -> ChainEnds:
        return await audit_ops.chain_ends(self._db)

    async def page(
        self, after_id: int, limit: int, where: EventFilter | None = None
    ) -> list[dict[str, Any]]:
        """Up to `limit` events with ids above `after_id`, in chain order."""
        return await audit_ops.event_page(self._db, after_id, limit, where)

    async def purge(self, older_than: timedelta, *, keep_after: int | None = None) -> int:
        """Delete the oldest events (a prefix of the chain, never past `keep_after`)."""
        return await audit_ops.purge_audit(self._db, older_than, keep_after=keep_after)

    # -- the SIEM webhook's cursor ---------------------------------------------------------

    async def claim_webhook_cursor(self, owner: str, lease: timedelta) -> WebhookCursor | None:
        """Take (or renew) the lease on the webhook's cursor (None: not ours, or not due)."""
        return await audit_ops.claim_webhook_cursor(self._db, owner, lease)

    async def advance_webhook_cursor(self, owner: str, delivered_id: int) -> bool:
        """The SIEM acknowledged every event up to `delivered_id` (False: the lease was lost)."""
        return await audit_ops.advance_webhook_cursor(self._db, owner, delivered_id)

    async def webhook_attempt_failed(
        self, owner: str, error: str, next_attempt_at: datetime
    ) -> None:
        await audit_ops.webhook_attempt_failed(self._db, owner, error, next_attempt_at)

    async def webhook_delivered_id(self) -> int | None:
        """The last event the SIEM webhook acknowledged (None: it never ran)."""
        return await audit_ops.webhook_delivered_id(self._db)

"""The audit trail streamed to a SIEM (`SAYSO_AUDIT_WEBHOOK`), and audit retention.

One replica at a time holds the lease on the webhook's cursor (a row in the database) and
POSTs the events after it, one per request, in chain order, signed like the approval API's
webhooks (`X-Sayso-Signature: v1=hmac_sha256(secret, "{timestamp}.{body}")`, with
`X-Sayso-Timestamp` and `X-Sayso-Delivery: audit-{id}` to deduplicate). The cursor advances
only after a 2xx: delivery is at least once, and a failure is retried (with backoff) from the
database by whichever replica holds the lease next, after a restart too.

`SAYSO_AUDIT_RETENTION` (default: keep forever) purges the oldest events, never those the
webhook has not delivered yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import httpx

from bot.agent.util import utcnow
from bot.ops.audit import _plain
from store import Store
from store.repos import AuditRepository

if TYPE_CHECKING:
    from bot.config import Settings

log = logging.getLogger("sayso.audit")

BACKOFF: tuple[float, ...] = (1, 5, 30, 120, 600)
LEASE = timedelta(seconds=60)
PURGE_EVERY = 3600.0
BATCH = 100


def audit_body(event: dict[str, Any]) -> bytes:
    return json.dumps(_plain(event), separators=(",", ":"), ensure_ascii=False).encode()


class AuditWebhook:
    """Sends the audit events after the cursor while this replica holds the lease."""

    def __init__(
        self,
        trail: AuditRepository,
        url: str,
        secret: str,
        owner: str,
        *,
        interval: float = 1.0,
        backoff: Sequence[float] = BACKOFF,
        timeout: float = 10.0,
    ) -> None:
        self.trail = trail
        self.url = url
        self.secret = secret
        self.owner = owner
        self.interval = interval
        self.backoff = tuple(backoff)
        self.timeout = timeout

    async def run_once(self, client: httpx.AsyncClient) -> int:
        """Deliver what is due; returns how many events the SIEM acknowledged."""
        cursor = await self.trail.claim_webhook_cursor(self.owner, LEASE)
        if cursor is None:
            return 0
        sent = 0
        batch = await self.trail.page(cursor.delivered_id, BATCH)
        for event in batch:
            error = await self._post(client, event)
            if error is not None:
                delay = self.backoff[min(cursor.attempts, len(self.backoff) - 1)]
                next_at = utcnow() + timedelta(seconds=delay)
                await self.trail.webhook_attempt_failed(self.owner, error, next_at)
                log.warning(
                    "event=audit_webhook_failed audit_id=%s attempt=%d error=%s retry_in=%s",
                    event["id"],
                    cursor.attempts + 1,
                    error,
                    delay,
                )
                _count("failed")
                return sent
            if not await self.trail.advance_webhook_cursor(self.owner, event["id"]):
                return sent  # another replica took the lease
            _count("delivered")
            sent += 1
        return sent

    async def _post(self, client: httpx.AsyncClient, event: dict[str, Any]) -> str | None:
        from bot.api.webhooks import sign  # the approval API's signature, exactly

        body = audit_body(event)
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "X-Sayso-Timestamp": timestamp,
            "X-Sayso-Signature": sign(self.secret, timestamp, body),
            "X-Sayso-Delivery": f"audit-{event['id']}",
        }
        try:
            response = await client.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"[:500]
        if 200 <= response.status_code < 300:
            return None
        return f"HTTP {response.status_code}"

    async def run_forever(self) -> None:
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            while True:
                try:
                    sent = await self.run_once(client)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("event=audit_webhook_loop_failed")
                    sent = 0
                if sent < BATCH:
                    await asyncio.sleep(self.interval)


def _count(outcome: str) -> None:
    from bot.ops import metrics

    metrics.webhook_delivery(outcome)


async def purge_forever(trail: AuditRepository, retention: timedelta, webhook: bool) -> None:
    while True:
        try:
            keep_after = await trail.webhook_delivered_id() if webhook else None
            purged = await trail.purge(retention, keep_after=keep_after)
            if purged:
                log.info("event=audit_purged events=%d older_than=%s", purged, retention)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("event=audit_purge_failed")
        await asyncio.sleep(PURGE_EVERY)


class AuditTasks:
    """What `sayso run` and `sayso worker` run for the audit trail, on their own engine."""

    def __init__(self, settings: Settings, owner: str) -> None:
        self.settings = settings
        self.owner = owner
        self._store: Store | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def needed(self) -> bool:
        s = self.settings
        return bool(s.sayso_audit_webhook) or s.sayso_audit_retention is not None

    async def start(self) -> None:
        if not self.needed:
            return
        s = self.settings
        self._store = Store(s.database_url, encryption_keys=s.encryption_keys())
        if s.sayso_audit_webhook:
            sender = AuditWebhook(
                self._store.audit,
                s.sayso_audit_webhook,
                s.secret("sayso_audit_webhook_secret") or "",
                self.owner,
            )
            self._tasks.append(asyncio.create_task(sender.run_forever(), name="audit-webhook"))
        if s.sayso_audit_retention is not None:
            purge = purge_forever(
                self._store.audit, s.sayso_audit_retention, bool(s.sayso_audit_webhook)
            )
            self._tasks.append(asyncio.create_task(purge, name="audit-retention"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self._store is not None:
            await self._store.close()

"""Signed webhook deliveries of settled requests: at least once, retried from the database.

A delivery row is queued when a request with a `callback_url` is settled, and tried at once.
Every replica's retry loop takes due attempts with a conditional update on the attempt count,
so one attempt is made by one replica; a retry keeps the delivery id.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections import Counter, deque
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import httpx

from bot.agent.util import utcnow
from bot.api.callbacks import CallbackRefused, callback_host_allowed, pinned_url
from bot.api.present import configured_signer, state_json
from bot.service.api_requests import ApiRequests
from store import ApprovalRequestRecord
from store.webhooks import Delivery

if TYPE_CHECKING:
    from bot.receipts import ReceiptSigner

log = logging.getLogger("sayso.api")

BACKOFF: tuple[float, ...] = (5, 30, 120, 600, 3600)
"""Seconds before the next attempt: after the 1st failure, the 2nd, ... then the last, hourly."""
GIVE_UP_AFTER = timedelta(hours=24)
TIMEOUT = 10.0


POOL_SIZE = 16
"""Webhook attempts one sayso process makes at once."""
PER_ENDPOINT = 4
"""Of those, attempts to one endpoint (scheme, host and port) at once: endpoints that hang hold
a few slots each, never all of them."""
WAITING_PER_ENDPOINT = 1000
"""First attempts waiting here for their endpoint's turn (more wait for the retry sweep)."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def body_of(request: ApprovalRequestRecord, signer: ReceiptSigner | None = None) -> bytes:
    state = state_json(request, signer)
    return json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode()


class WebhookSender:
    def __init__(
        self,
        api: ApiRequests,
        *,
        interval: float = 1.0,
        backoff: Sequence[float] = BACKOFF,
        timeout: float = TIMEOUT,
        signer: ReceiptSigner | Literal["settings"] | None = "settings",
    ) -> None:
        self.api = api
        self.signer = configured_signer() if signer == "settings" else signer
        self.stored = api.store.api  # keys, links and deliveries
        self.interval = interval
        self.backoff = tuple(backoff)
        self.timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pool = asyncio.Semaphore(POOL_SIZE)
        """Attempts in flight at once (first attempts and retries): a slow callback holds one
        slot for at most `timeout`, never the others' turn."""
        self._per_endpoint = max(1, min(PER_ENDPOINT, POOL_SIZE // 2))
        self._busy: Counter[str] = Counter()
        """Attempts in flight per endpoint."""
        self._stopping = False
        self._waiting: dict[str, deque[Delivery]] = {}
        """First attempts settled here while their endpoint was busy: each goes as soon as one
        of its endpoint's attempts ends (one endpoint takes far more than the sweep's pace)."""
        api.subscribe_settled(self.on_settled)

    async def start(self, *, retries: bool = True) -> None:
        """Deliver from now on; `retries`: also make the due retries of every replica's
        deliveries (fronts do; a worker only makes the first attempt of what it settled)."""
        self._client = httpx.AsyncClient(timeout=self.timeout)
        if retries:
            self._loop = asyncio.create_task(self._retry_forever(), name="webhooks")

    async def stop(self) -> None:
        self._stopping = True
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        if self._client is not None:
            await self._client.aclose()

    async def on_settled(self, request: ApprovalRequestRecord) -> None:
        link = await self.stored.link_of(request.id)
        if link is None or not link.callback_url:
            return
        delivery = await self.stored.add_delivery(request.id, link.callback_url)
        if delivery is None:
            return
        if self._has_room(delivery):
            self._spawn(delivery)  # the first attempt right away
            return
        waiting = self._waiting.setdefault(_endpoint(delivery.url), deque())
        if len(waiting) < WAITING_PER_ENDPOINT:  # else the retry sweep takes it
            waiting.append(delivery)

    def _has_room(self, delivery: Delivery) -> bool:
        return not self._pool.locked() and self._busy[_endpoint(delivery.url)] < (
            self._per_endpoint
        )

    def _spawn(self, delivery: Delivery) -> None:
        endpoint = _endpoint(delivery.url)
        self._busy[endpoint] += 1

        async def pooled() -> None:
            try:
                async with self._pool:
                    await self.attempt(delivery)
            finally:
                self._busy[endpoint] -= 1
                if self._busy[endpoint] <= 0:
                    del self._busy[endpoint]
                self._next_waiting(endpoint)

        task = asyncio.create_task(pooled(), name=f"webhook:{delivery.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _next_waiting(self, endpoint: str) -> None:
        """An attempt to `endpoint` ended: the next first attempt waiting for it goes (one
        the sweep took meanwhile is not made twice: each attempt claims its delivery)."""
        waiting = self._waiting.get(endpoint)
        while waiting and not self._stopping:
            delivery = waiting[0]
            if not self._has_room(delivery):
                return
            waiting.popleft()
            self._spawn(delivery)
        self._waiting.pop(endpoint, None)

    async def _retry_forever(self) -> None:
        while True:
            try:
                for delivery in await self.stored.due_deliveries(None, 200):
                    if self._pool.locked():
                        break
                    if self._has_room(delivery):  # else its endpoint is busy: later
                        self._spawn(delivery)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event=webhook_sweep_failed")
            await asyncio.sleep(self.interval)

    def _next_delay(self, attempts: int) -> float:
        return self.backoff[min(attempts - 1, len(self.backoff) - 1)]

    async def attempt(self, delivery: Delivery) -> bool:
        """Make the delivery's next attempt if no replica took it first; True when delivered."""
        hold = timedelta(seconds=self.timeout + 5)
        claimed = await self.stored.claim_delivery(delivery.id, delivery.attempts, hold)
        if claimed is None:
            return False
        found = await self.api.store.requests.get(claimed.request_id)
        link = await self.stored.link_of(claimed.request_id)
        key = await self.stored.get_key(link.key_name) if link else None
        if found is None or key is None:
            await self._finish(claimed, None, False, "request or key gone", retry=False)
            return False
        if not callback_host_allowed(claimed.url, self.api.callback_hosts):
            refusal = "the callback host is not allowed (SAYSO_CALLBACK_HOSTS)"
            await self._finish(claimed, found.spec.run_id, False, refusal, retry=False)
            log.warning("event=webhook_refused request_id=%s delivery=%s", found.id, claimed.id)
            return False
        body = body_of(found, self.signer)
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "X-Sayso-Timestamp": timestamp,
            "X-Sayso-Signature": sign(key.webhook_secret, timestamp, body),
            "X-Sayso-Delivery": claimed.id,
        }
        error: str | None = None
        try:
            url, headers["Host"], server_name = await pinned_url(
                claimed.url, self.api.callback_hosts
            )
        except CallbackRefused as exc:
            await self._finish(claimed, found.spec.run_id, False, str(exc)[:500], retry=False)
            log.warning("event=webhook_refused request_id=%s delivery=%s", found.id, claimed.id)
            return False
        try:
            assert self._client is not None
            response = await self._client.post(
                url, content=body, headers=headers, extensions={"sni_hostname": server_name}
            )
            ok = 200 <= response.status_code < 300
            if not ok:
                error = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            ok, error = False, f"{type(exc).__name__}: {exc}"[:500]
        await self._finish(claimed, found.spec.run_id, ok, error, retry=True)
        log.info(
            "event=webhook_attempt request_id=%s delivery=%s attempt=%d ok=%s",
            claimed.request_id,
            claimed.id,
            claimed.attempts,
            ok,
        )
        return ok

    async def _finish(
        self, d: Delivery, run_id: str | None, ok: bool, error: str | None, *, retry: bool
    ) -> None:
        next_at = None
        if not ok and retry:
            candidate = utcnow() + timedelta(seconds=self._next_delay(d.attempts))
            if candidate - d.created_at <= GIVE_UP_AFTER:
                next_at = candidate
        await self.stored.finish_attempt(
            d, ok=ok, error=error, next_attempt_at=next_at, run_id=run_id
        )


def _endpoint(url: str) -> str:
    """Where a delivery goes: scheme, host and port (what a slow endpoint is)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2].lower()}"

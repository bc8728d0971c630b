"""`OutboxDispatcher`: sends the outbox's rows to Slack, from any replica (store/outbox.py).

    dispatcher = OutboxDispatcher(store_outbox, client, owner=replica_id)
    await dispatcher.start()      # wakes on every put (in-process and PostgreSQL NOTIFY)
    ...
    await dispatcher.stop()

Each claimed row is sent at its latest version: `chat.postMessage` the first time (tagged with
`metadata` {event_type: "sayso_outbox", event_payload: {"key", "version"}}), `chat.update`
after; `views.publish` for App Home; `chat.postEphemeral` or its `response_url` for
ephemerals; `chat.startStream` / `appendStream` / `stopStream` for streams. Calls are paced
within Slack's tiers (bot/slack/pacing.py); a 429 holds its method for `Retry-After`; an
outage (503, refused connections) closes a gate that reopens with backoff; a row whose earlier
attempt may have posted is looked up in its thread or channel before it is posted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.util import wait_set
from bot.slack.outbox_calls import Calls
from bot.slack.outbox_send import OutboxStats, RowSender, bare_client
from bot.slack.pacing import Pacer
from store.outbox import Outbox, OutboxRow

log = logging.getLogger("sayso.outbox")


PACED_PER_SLOT = 8
"""Claimed rows at most, per slot, counting those waiting for their pace."""
COALESCE = 0.025
"""Seconds a dispatcher woken by a put waits for the puts of the same moment (one claim): a
decision's card update, its answer and its run's final status come within tens of ms of each
other (5 ms: 3.3 claims per decision one at a time; 25 ms: 2.5)."""
SENDER_LEASE = 4.0
"""Seconds the sending dispatcher's lease lasts (renewed every half): a replica that dies holds
Slack writes back for at most this long (plus a standby's next bid)."""


class OutboxDispatcher(RowSender):
    """Claims due outbox rows and sends them, `concurrency` at a time."""

    def __init__(
        self,
        outbox: Outbox,
        client: AsyncWebClient,
        *,
        owner: str = "dispatcher",
        lease_seconds: float = 30.0,
        call_timeout: float = 10.0,
        lease_margin: float = 5.0,
        sweep_interval: float = 2.0,
        concurrency: int = 8,
        max_pace_wait: float = 5.0,
        share: float = 0.95,
        max_outage_backoff: float = 5.0,
        on_posted: Callable[[OutboxRow, str], Awaitable[None]] | None = None,
        exclusive: bool = True,
        sender_lease: float = SENDER_LEASE,
    ) -> None:
        """`on_posted(row, ts)` runs once a row's message has its ts (posted, or found after
        an uncertain attempt): the service records it (a run's thread, a card's message_ts).
        It may run again after a crash: make it idempotent.

        `exclusive`: one dispatcher sends at a time (the sender lease, `sender_lease` seconds,
        taken over by another replica when it lapses), so the pacing is exact for the
        workspace; without it every dispatcher sends, each at `share` of Slack's rates."""
        if lease_seconds <= call_timeout + lease_margin:
            raise ValueError("lease_seconds must exceed call_timeout + lease_margin")
        self.outbox = outbox
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.call_timeout = call_timeout
        self.lease_margin = lease_margin
        self.sweep_interval = sweep_interval
        self.concurrency = concurrency
        self.max_pace_wait = max_pace_wait
        self.max_outage_backoff = max_outage_backoff
        self.pacer = Pacer(share)
        self.stats = OutboxStats()
        self.calls = Calls(bare_client(client, call_timeout), call_timeout, self.stats)
        self._down_until = 0.0
        self._down_backoff = 0.0
        self._woken = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()
        self._loop_task: asyncio.Task[None] | None = None
        self._unsubscribe: Any = None
        self._listener: Any = None
        self._last_sweep = 0.0
        self._calling: set[str] = set()  # rows whose send made a Web API call (until done)
        self._pacing: set[asyncio.Task[Any]] = set()  # sends waiting for their pace (no slot)
        self._claim_wanted = True  # something may be due: a put, a post, a freed slot
        self._backlog = False  # the last claim filled every free slot: more may be due
        self._due_at = 0.0  # (monotonic) when the next row nobody holds becomes due
        self._stopping = False
        self.on_posted = on_posted
        self.exclusive = exclusive
        self.sender_lease = sender_lease
        self.leading = False
        self._leading_until = 0.0
        self._next_bid = 0.0

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def client(self) -> AsyncWebClient:
        """The client the rows are sent with (no retry handlers of slack-sdk's: see
        `bare_client`); metrics and traces watch it as they watch the process's own."""
        return self.calls.client

    async def start(self) -> None:
        if self._loop_task is not None:
            return
        self._stopping = False  # a dispatcher stopped before may start again
        self._unsubscribe = self.outbox.subscribe(self.wake)
        self.outbox.sender_here = self.sending  # this process's puts wake us in process
        self._listener = self.outbox.listener(self.wake)
        self._listener.start()
        self._loop_task = asyncio.create_task(self._run(), name=f"outbox:{self.owner}")

    async def stop(self, grace: float = 5.0) -> None:
        """Stop claiming; let sends in flight finish for `grace` seconds, then cancel them
        (a cancelled post stays `unsure`: whoever sends the row next looks it up first; a
        row still waiting for its pace is handed back at once)."""
        self._stopping = True
        if self.outbox.sender_here == self.sending:
            self.outbox.sender_here = lambda: False
        if self._loop_task is not None:
            # the loop ends at its next turn: a claim or a sweep in progress finishes its
            # transaction (one cancelled inside it could leave SQLite's write lock held by a
            # connection nobody uses any more); cancelled only if it does not end in time
            self._woken.set()
            done, _ = await asyncio.wait({self._loop_task}, timeout=grace)
            if not done:
                self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
            self._loop_task = None
        for waiting in self._pacing:  # nothing sent yet: handed back at once ("stopped")
            waiting.cancel()
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=grace)
        await self.abort()
        if self.leading:
            with contextlib.suppress(Exception):
                await self.outbox.release_sender(self.owner)
            self.leading = False

    async def abort(self) -> None:
        """Stop at once, as a crash would: nothing is released or marked."""
        for task in [self._loop_task, *self._inflight]:
            if task is not None:
                task.cancel()
        await asyncio.gather(
            *(t for t in [self._loop_task, *self._inflight] if t is not None),
            return_exceptions=True,
        )
        self._loop_task = None
        self._inflight.clear()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        await self.calls.close()

    def wake(self, _key: str | None = None, in_seconds: float = 0.0) -> None:
        """A row was put (here or, through NOTIFY, on another replica): claim soon, or once it
        is due (`in_seconds`: a debounced put, due later; a claim now would find nothing)."""
        if in_seconds > 0:
            self.due_in(in_seconds)
            return
        self._claim_wanted = True
        self._woken.set()

    def due_in(self, seconds: float) -> None:
        """A row this dispatcher handed back becomes due again in `seconds`."""
        self._due_at = min(self._due_at, time.monotonic() + seconds)
        self._woken.set()

    def slot_freed(self, unblocked: bool = False) -> None:
        """A send ended or started waiting for its pace; `unblocked`: it posted a message that
        other rows may wait for (their thread, or the row they come after)."""
        if unblocked or self._backlog:
            self._claim_wanted = True
        self._woken.set()

    # -- the loop -----------------------------------------------------------------------------

    async def _run(self) -> None:
        """Claims only when something may be due: a put, a post that unblocks rows, a freed
        slot while rows were left unclaimed, or the time the store said the next row is due
        (returned with each claim). An idle dispatcher makes no query but its sweep."""
        while not self._stopping:
            self._woken.clear()
            try:
                if self.exclusive and not await self._lead():  # standing by
                    if time.monotonic() - self._last_sweep >= self.sweep_interval:
                        await self.refresh_stats()
                    await wait_set(self._woken, self.sweep_interval)
                    continue
                if self._claim_wanted or time.monotonic() >= self._due_at:
                    await self._claim()
                if time.monotonic() - self._last_sweep >= self.sweep_interval:
                    await self.sweep()
                wait = self._idle_wait()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database is away: try again after a sweep interval
                log.warning("event=outbox_loop_failed error=%r", exc)
                self._claim_wanted = True
                wait = self.sweep_interval
            if wait > 0:
                await wait_set(self._woken, wait)
            else:  # never a round without giving the event loop a turn
                await asyncio.sleep(0)

    async def _claim(self) -> None:
        self._claim_wanted = False
        free = self._free_slots()
        if free <= 0:  # a freed slot wakes the loop (backlog); until then nothing is due here
            self._backlog = True
            self._due_at = time.monotonic() + self.sweep_interval
            return
        if not self._backlog:  # woken by a put: let the puts of the same moment join in
            await asyncio.sleep(COALESCE)
        claimed, due_in = await self.run_once()
        self._backlog = claimed >= free
        now = time.monotonic()
        self._due_at = now + (self.sweep_interval if due_in is None else due_in)
        if self._backlog:
            self._claim_wanted = True

    def _idle_wait(self) -> float:
        if self._claim_wanted and self._free_slots() > 0:
            return 0.0
        next_sweep = self._last_sweep + self.sweep_interval
        return max(0.0, min(self._due_at, next_sweep) - time.monotonic())

    def sending(self) -> bool:
        """Is this dispatcher the one sending now (it holds the sender lease, or every one
        sends)?"""
        return not self._stopping and (self.leading or not self.exclusive)

    async def _lead(self) -> bool:
        """Hold (or take) the sender lease; bids of a standby are spaced, not per wake-up."""
        now = time.monotonic()
        if self.leading and now < self._leading_until - self.sender_lease / 2:
            return True
        if not self.leading and now < self._next_bid:
            return False
        held = await self.outbox.hold_sender(self.owner, self.sender_lease)
        if held != self.leading:
            log.info("event=outbox_sender owner=%s leading=%s", self.owner, held)
        self.leading = held
        self._leading_until = now + self.sender_lease if held else 0.0
        self._next_bid = now + min(self.sweep_interval, self.sender_lease / 4)
        return held

    def _free_slots(self) -> int:
        """Rows waiting for their pace (a burst in one channel) do not hold the slots other
        channels' rows are sent in; claimed rows stay bounded all the same."""
        sending = len(self._inflight) - len(self._pacing)
        return min(
            self.concurrency - sending, PACED_PER_SLOT * self.concurrency - len(self._inflight)
        )

    async def run_once(self) -> tuple[int, float | None]:
        """Claim what is due (up to the free slots) and start sending it; returns how many
        due rows it found (claimed, or left for their pace: `admit`), and the seconds until
        the next row becomes due (None: unknown or none)."""
        free = self._free_slots()
        if free <= 0:
            return 0, None
        claimed_at = time.monotonic()  # before the claim: the lease is measured from here
        self._admitted = Counter()  # rows this claim takes per bucket (`admit`)
        self._paced_in = None  # the soonest a row this claim leaves comes back
        paced_before = self.stats.paced
        rows, due_in = await self.outbox.claim(
            self.owner, free, lease_seconds=self.lease_seconds, admit=self.admit
        )
        for row in rows:
            task = asyncio.create_task(self._send(row, claimed_at), name=f"out:{row.key}")
            self._inflight.add(task)
            task.add_done_callback(self._sent)
        if self._paced_in is not None:
            due_in = self._paced_in if due_in is None else min(due_in, self._paced_in)
        return len(rows) + self.stats.paced - paced_before, due_in

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self.slot_freed()

    async def sweep(self) -> None:
        """Drop expired rows and refresh the queue counters."""
        self._last_sweep = time.monotonic()
        dropped = await self.outbox.drop_expired()
        if dropped:
            self.stats.expired += len(dropped)
            log.info("event=outbox_expired rows=%d", len(dropped))
        await self.refresh_stats()

    async def refresh_stats(self) -> None:
        """Queue depth and the oldest row's age, from the store (the same on every replica)."""
        self._last_sweep = time.monotonic()
        self.stats.pending, self.stats.oldest_seconds = await self.outbox.pending_stats()

    async def drain(self, timeout: float = 30.0) -> None:  # noqa: ASYNC109 - a test helper
        """Until nothing is pending (tests, `sayso demo` shutdown); AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        while await self.outbox.pending_count():
            if time.monotonic() > deadline:
                left = await self.outbox.pending()
                described = "; ".join(str(row) for row in left)
                raise AssertionError(
                    f"the outbox did not drain in time (now {datetime.now(UTC)}): {described}"
                )
            self.wake()
            await asyncio.sleep(0.05)


__all__ = ["OutboxDispatcher", "OutboxStats"]

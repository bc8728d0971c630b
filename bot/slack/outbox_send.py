"""Sending one outbox row: the calls of its kind, paced, within its claim's lease; what a
failure means for the row (retry, back off, hold the method, close the outage gate, give up).

`RowSender` is the half of `OutboxDispatcher` (bot/slack/outbox.py) that talks to Slack.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.util import utcnow
from bot.slack.outbox_calls import EVENT_TYPE, UNSEEN_EPHEMERAL, CallFailure, Calls, classify
from bot.slack.pacing import Pacer
from store.outbox import Outbox, OutboxRow
from store.outbox_marks import Marked

log = logging.getLogger("sayso.outbox")


@dataclass
class OutboxStats:
    """What the operations issue exports: `pending` (sayso_slack_outbox_pending),
    `oldest_seconds` (sayso_slack_outbox_oldest_seconds), `ratelimited` by method
    (sayso_slack_ratelimited_total), and more for tests and logs."""

    pending: int = 0
    oldest_seconds: float = 0.0
    ratelimited: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    sent: int = 0
    adopted: int = 0  # posts found in Slack after an attempt that may have reached it
    expired: int = 0  # ephemerals and response_url answers dropped past their expiry
    failed: int = 0  # rows given up (Slack refused them for good)
    outage_errors: int = 0
    paced: int = 0  # due rows a claim left for their pace (due again at their slot)
    released: int = 0  # claimed rows handed back unsent (paced after all, Slack down, ...)

    @property
    def ratelimited_total(self) -> int:
        return sum(self.ratelimited.values())


class Released(Exception):
    """The row goes back unsent (paced, Slack down, claim too short): no attempt counted."""

    def __init__(self, retry_in: float) -> None:
        super().__init__(retry_in)
        self.retry_in = retry_in


def likely_method(row: OutboxRow) -> str | None:
    """The paced call a claimed row would make first, where that is plain: a message's
    update, or the post of one that never may have reached Slack (None: anything else)."""
    if row.kind != "message" or row.payload.get("delete"):
        return None
    if row.ts is not None:
        return "chat.update"
    return None if row.unsure else "chat.postMessage"


def bare_client(client: AsyncWebClient, timeout: float) -> AsyncWebClient:
    """The same workspace and token without slack-sdk's retry handlers: a retried post could
    post twice, and a retried 429 would defeat the pacing. The dispatcher retries itself."""
    return AsyncWebClient(
        token=client.token,
        base_url=client.base_url,
        timeout=timeout,  # type: ignore[arg-type]  # aiohttp takes float seconds
        ssl=client.ssl,
        proxy=client.proxy,
        headers=dict(client.headers or {}),
        team_id=getattr(client, "team_id", None),
        retry_handlers=[],
    )


class RowSender:
    """Sends claimed rows (the dispatcher's state is set up by OutboxDispatcher)."""

    outbox: Outbox
    pacer: Pacer
    stats: OutboxStats
    calls: Calls
    lease_seconds: float
    call_timeout: float
    lease_margin: float
    max_pace_wait: float
    max_outage_backoff: float
    on_posted: Callable[[OutboxRow, str], Awaitable[None]] | None
    _down_until: float
    _down_backoff: float
    _calling: set[str]
    _pacing: set[asyncio.Task[Any]]
    _woken: asyncio.Event
    _stopping: bool
    _admitted: Counter[tuple[str, str]]  # set anew by each claim (run_once)
    _paced_in: float | None = None

    def admit(self, row: OutboxRow) -> float | None:
        """A claim's filter (`Outbox.claim`): None takes the row; else the seconds after which
        it should come back, when the call it would make could not have its slot within
        `max_pace_wait` (counting the rows this claim took before it). Claiming it only to
        hand it back cost two writes and a claim more, about one per decision when
        chat.update's budget is spent."""
        method = likely_method(row)
        team = row.team_id or ""
        bucket = self.pacer.bucket_of(team, method, row.channel) if method else None
        if method is None or bucket is None:
            return None
        if self.pacer.delay_after(team, method, row.channel, self._admitted[bucket]) <= (
            self.max_pace_wait
        ):
            self._admitted[bucket] += 1
            return None
        self.stats.paced += 1
        retry_in = self.pacer.defer(team, method, row.channel, self.max_pace_wait)
        self._paced_in = retry_in if self._paced_in is None else min(self._paced_in, retry_in)
        return retry_in

    def slot_freed(self, unblocked: bool = False) -> None:
        """(OutboxDispatcher) a send ended or waits for its pace; `unblocked`: it posted."""

    def due_in(self, seconds: float) -> None:
        """(OutboxDispatcher) a row handed back becomes due again in `seconds`."""

    async def _send(self, row: OutboxRow, claimed_at: float) -> None:
        try:
            await self._send_row(row, claimed_at)
        finally:
            self._calling.discard(row.key)

    async def _send_row(self, row: OutboxRow, claimed_at: float) -> None:
        claim = row.claim_token
        try:
            ts, progress = await self._deliver(row, claimed_at)
        except Released as released:
            self.stats.released += 1
            await self.outbox.mark_failed(
                row.key,
                _after(released.retry_in),
                "released",
                claim=claim,
                count=False,
                maybe_sent=row.unsure,
            )
            self.due_in(released.retry_in)
            return
        except CallFailure as outcome:
            await self._failed(row, outcome)
            return
        except asyncio.CancelledError:
            if self._stopping and row.key not in self._calling:  # nothing sent: hand it back
                release = self.outbox.mark_failed(
                    row.key, utcnow(), "stopped", claim=claim, count=False, maybe_sent=row.unsure
                )
                await asyncio.shield(release)
            raise
        except Exception as exc:  # a bug or an unexpected answer: retry later, maybe posted
            log.exception("event=outbox_send_failed key=%s", row.key)
            await self._failed(row, CallFailure("unexpected", repr(exc), maybe_sent=True))
            return
        if ts == "dropped":
            self.stats.expired += 1
            await self.outbox.drop(row.key, "expired" if not row.unsure else "unsure", claim=claim)
            self.slot_freed(unblocked=True)  # rows after it no longer wait for it
            return
        self._down_backoff = 0.0
        self.stats.sent += 1
        marked = await self.outbox.mark_sent(
            row.key, row.version, ts, claim=claim, progress=progress
        )
        posted = ts is not None and ts != row.ts
        if marked in (Marked.PENDING, Marked.AWAITED) or (posted and marked == Marked.LAPSED):
            # a newer version was put while this one was sent (it waits for nobody else's
            # wake-up), or rows of its thread, or after it, may go now (a row put after the
            # mark finds the ts there: its own put's wake-up claims it)
            self.slot_freed(unblocked=True)
        if ts is not None and ts != row.ts and self.on_posted is not None:
            try:
                await self.on_posted(row, ts)
            except Exception:
                log.exception("event=outbox_on_posted_failed key=%s", row.key)

    async def _failed(self, row: OutboxRow, outcome: CallFailure) -> None:
        retry_in: float | None
        if outcome.kind == "ratelimited":
            retry_in = outcome.retry_after
        elif outcome.kind == "down":
            self.stats.outage_errors += 1
            self._down_backoff = min(self.max_outage_backoff, max(0.5, self._down_backoff * 2))
            self._down_until = time.monotonic() + self._down_backoff
            retry_in = self._down_backoff
        elif outcome.kind == "permanent":
            retry_in = None
        else:  # transient, unsure, unexpected: back off by the row's own failures
            retry_in = min(60.0, 2.0 ** min(row.attempts, 6)) * random.uniform(0.8, 1.2)
        if retry_in is None:
            self.stats.failed += 1
            log.warning("event=outbox_gave_up key=%s error=%s", row.key, outcome.error)
        else:
            log.info(
                "event=outbox_retry key=%s error=%s in=%.1fs", row.key, outcome.error, retry_in
            )
        await self.outbox.mark_failed(
            row.key,
            None if retry_in is None else _after(retry_in),
            outcome.error,
            claim=row.claim_token,
            maybe_sent=row.unsure or outcome.maybe_sent,
            count=outcome.kind not in ("ratelimited", "down"),
        )
        if retry_in is not None:
            self.due_in(retry_in)
        else:
            self.slot_freed(unblocked=True)  # rows after it no longer wait for it

    async def _deliver(self, row: OutboxRow, claimed_at: float) -> tuple[str | None, int | None]:
        """Send the row's latest version; (ts, stream progress) when done."""
        if row.expires_at is not None and row.expires_at <= utcnow():
            return "dropped", None
        if row.kind == "home":
            await self._call(row, claimed_at, "views.publish")
            return None, None
        if row.kind == "ephemeral":
            if row.unsure:  # at most once: an ephemeral cannot be looked up
                return "dropped", None
            method = "response_url" if row.payload.get("response_url") else "chat.postEphemeral"
            try:
                await self._call(row, claimed_at, method)
            except CallFailure as refused:
                if method != "chat.postEphemeral" or refused.error not in UNSEEN_EPHEMERAL:
                    raise
                await self.outbox.mark_unsure(row.key, claim=row.claim_token)  # at most once
                await self._call(row, claimed_at, "dm")  # certainly unseen: say it in a DM
            return None, None
        if row.thread_key and not row.thread_ts:  # its thread's root was given up
            raise CallFailure("permanent", f"thread {row.thread_key} was never posted")
        if row.kind == "stream":
            return await self._stream(row, claimed_at)
        return await self._message(row, claimed_at), None

    async def _message(self, row: OutboxRow, claimed_at: float) -> str | None:
        ts = row.ts
        if ts is None and row.unsure:
            found = await self._find(row, claimed_at)
            if found is not None:
                ts, version = found
                self.stats.adopted += 1
                log.info("event=outbox_adopted key=%s ts=%s", row.key, ts)
                await self.outbox.adopt(row.key, ts, claim=row.claim_token)
                if version == row.version:
                    return ts
        if row.payload.get("delete"):
            if ts is not None:
                await self._call(row, claimed_at, "chat.delete", ts=ts)
            return ts
        if ts is None:
            answer = await self._call(row, claimed_at, "chat.postMessage")
            return str(answer["ts"])
        await self._call(row, claimed_at, "chat.update", ts=ts)
        return ts

    async def _stream(self, row: OutboxRow, claimed_at: float) -> tuple[str | None, int | None]:
        """A streamed answer: start, append what is new, stop, then the final blocks replace
        the text (chat.update). `progress`: characters appended, -1 once stopped, -2 when the
        answer goes as one message once final (Slack refused the stream, or a start may have
        happened without an answer: a stream start cannot be looked up)."""
        text = str(row.payload.get("markdown_text") or "")
        final = bool(row.payload.get("final"))
        if row.progress == -1 or (row.ts is None and (row.unsure or row.progress < 0 or final)):
            if row.progress != -1 and not final:
                return None, -2
            return await self._message(row, claimed_at), -1
        ts, progress = row.ts, max(row.progress, 0)
        if ts is None:
            try:
                answer = await self._call(row, claimed_at, "chat.startStream", text=text)
            except CallFailure as refused:
                if refused.kind != "permanent":
                    raise
                log.info("event=outbox_stream_refused key=%s error=%s", row.key, refused.error)
                if not final:
                    return None, -2
                return await self._message(row, claimed_at), -1
            ts, progress = str(answer["ts"]), len(text)
            await self.outbox.adopt(row.key, ts, claim=row.claim_token, progress=progress)
        if len(text) > progress:
            await self._call(row, claimed_at, "chat.appendStream", ts=ts, text=text[progress:])
            progress = len(text)
        if final:
            await self._stop(row, claimed_at, ts)
            progress = -1
            if row.payload.get("blocks") and not row.payload.get("as_streamed"):
                # stopStream's blocks would go below the streamed text (shown twice): the
                # formatted message replaces the text instead
                await self.outbox.adopt(row.key, ts, claim=row.claim_token, progress=progress)
                await self._call(row, claimed_at, "chat.update", ts=ts)
        return ts, progress

    async def _stop(self, row: OutboxRow, claimed_at: float, ts: str) -> None:
        """Stop the stream; one an earlier attempt stopped (its answer lost) is stopped."""
        try:
            await self._call(row, claimed_at, "chat.stopStream", ts=ts)
        except CallFailure as outcome:
            if outcome.error != "message_not_in_streaming_state":
                raise
            log.info("event=outbox_stream_already_stopped key=%s", row.key)

    async def _find(self, row: OutboxRow, claimed_at: float) -> tuple[str, int | None] | None:
        """The row's message if an earlier attempt posted it: (ts, version it carries)."""
        method = "conversations.replies" if row.thread_ts else "conversations.history"
        since = (row.created_at - timedelta(seconds=60)).timestamp()
        cursor: str | None = None
        for _page in range(5):
            answer = await self._call(row, claimed_at, method, oldest=since, cursor=cursor)
            for message in answer.get("messages") or []:
                meta = message.get("metadata") or {}
                body = meta.get("event_payload") or {}
                if meta.get("event_type") == EVENT_TYPE and body.get("key") == row.key:
                    version = body.get("version")
                    return str(message["ts"]), int(version) if version is not None else None
            cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                return None
        return None

    async def _call(
        self, row: OutboxRow, claimed_at: float, method: str, **extra: Any
    ) -> dict[str, Any]:
        """One paced call within the claim's lease; raises Released or CallFailure."""
        await self._pace(row, claimed_at, method)
        self._calling.add(row.key)
        try:
            return await self.calls.call(row, method, **extra)
        except (SlackApiError, aiohttp.ClientError, TimeoutError, OSError) as exc:
            outcome = classify(exc, method)
            if outcome.kind == "ratelimited":
                self.stats.ratelimited[method] += 1
                from bot.ops import metrics  # sayso_slack_ratelimited_total

                metrics.slack_ratelimited(method)
                self.pacer.retry_after(row.team_id or "", method, row.channel, outcome.retry_after)
            raise outcome from exc

    async def _pace(self, row: OutboxRow, claimed_at: float, method: str) -> None:
        now = time.monotonic()
        if now < self._down_until:
            raise Released(self._down_until - now + random.uniform(0, 0.2))
        # a call may start only while the claim outlives it: no two dispatchers ever have
        # a call of the same row in flight (the next claimer may post after a lookup)
        budget = claimed_at + self.lease_seconds - self.lease_margin - self.call_timeout - now
        if budget <= 0:
            raise Released(0.0)
        team = row.team_id or ""
        wait = self.pacer.reserve(team, method, row.channel, min(budget, self.max_pace_wait))
        if wait is None:
            raise Released(self.pacer.defer(team, method, row.channel, self.max_pace_wait))
        if wait > 0:  # waiting for its pace holds no slot: others are claimed meanwhile
            waiting = asyncio.current_task()
            assert waiting is not None
            self._pacing.add(waiting)
            self.slot_freed()
            try:
                await asyncio.sleep(wait)
            finally:
                self._pacing.discard(waiting)
            if self._stopping:  # stop() came while it waited: sent by whoever runs next
                raise Released(0.0)


def _after(seconds: float) -> datetime:
    return utcnow() + timedelta(seconds=max(0.0, seconds))

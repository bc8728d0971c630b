"""Bolt middleware every listener relies on: the replay guard and the service in the context."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.service import Service
from bot.slack.home_refresh import HomeRefresher
from bot.slack.listeners.common import HOMES_KEY, SERVICE_KEY

log = logging.getLogger("sayso.slack")

SLACK_WINDOW = 300.0
"""Slack's (and Bolt's) acceptance window: timestamps within ±5 minutes of now."""
FUTURE_SKEW = 60.0
"""How far ahead of our clock a request's timestamp may be (clock drift), at most."""


class ReplayGuard:
    """Signatures seen while their timestamps are still accepted, in memory: answering Slack
    must not wait for the database. A signature is remembered until its timestamp has left the
    acceptance window (so a request stamped in the future is remembered longer), and
    timestamps further ahead than `future_skew` are refused outright. Replays that reach
    another replica are harmless: the durable intake (bot/slack/intake.py) records each
    state-changing interaction once, by Slack's trigger id or event id, before the ack, and
    drops a copy; decisions are conditional writes anyway.
    """

    def __init__(
        self,
        window: float = SLACK_WINDOW,
        limit: int = 100_000,
        *,
        future_skew: float = FUTURE_SKEW,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.window = window
        self.limit = limit
        self.future_skew = future_skew
        self.clock = clock
        self._seen: dict[str, float] = {}

    def too_far_ahead(self, timestamp: float) -> bool:
        """Is this timestamp further in the future than clock drift explains?"""
        return timestamp - self.clock() > self.future_skew

    def first(self, signature: str, timestamp: float | None = None) -> bool:
        """True the first time `signature` (of a request stamped `timestamp`) is seen."""
        now = self.clock()
        stamped = now if timestamp is None else timestamp
        if len(self._seen) >= self.limit:
            self._seen = {s: t for s, t in self._seen.items() if t > now}
            while len(self._seen) >= self.limit:  # still full: forget the oldest
                self._seen.pop(next(iter(self._seen)))
        forget_at = self._seen.get(signature)
        if forget_at is not None and now < forget_at:
            return False
        self._seen[signature] = max(stamped, now) + self.window
        return True


def _timestamp(req: AsyncBoltRequest) -> float | None:
    raw = (req.headers.get("x-slack-request-timestamp") or [""])[0]
    try:
        return float(raw)
    except ValueError:
        return None


def drop_replays(guard: ReplayGuard) -> Callable[..., Awaitable[BoltResponse | None]]:
    """Bolt middleware (after the signature check): a request stamped too far in the future is
    refused, and a signature seen before is a replay of a request already handled, so it is
    refused too (a Slack retry of it is simply acked)."""

    async def middleware(
        req: AsyncBoltRequest, next: Callable[[], Awaitable[BoltResponse | None]]
    ) -> BoltResponse | None:
        signature = (req.headers.get("x-slack-signature") or [""])[0]
        if req.mode == "socket_mode" or not signature:
            return await next()
        timestamp = _timestamp(req)
        if timestamp is not None and guard.too_far_ahead(timestamp):
            guard.first(signature, timestamp)  # its replays stay refused once it is in range
            log.warning("event=future_timestamp ahead_s=%d", timestamp - guard.clock())
            return BoltResponse(status=401, body="Request timestamp is in the future.")
        if guard.first(signature, timestamp):
            return await next()
        retry = bool(req.headers.get("x-slack-retry-num"))
        log.warning("event=replayed_request retry=%s", retry)
        return BoltResponse(status=200 if retry else 409, body="" if retry else "Replayed request.")

    return middleware


class ProvideService(AsyncMiddleware):
    """Bolt middleware: puts the Service (and the App Home refresher, when there is one) in every
    request's context, where listeners find them with `service_of(context)` and
    `homes_of(context)` (as Netflix Dispatch hands its listeners a database session)."""

    def __init__(self, service: Service, homes: HomeRefresher | None = None) -> None:
        self.service = service
        self.homes = homes

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        req.context[SERVICE_KEY] = self.service
        req.context[HOMES_KEY] = self.homes
        return await next()

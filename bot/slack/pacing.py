"""Pacing Slack Web API calls within Slack's published limits (token buckets, Retry-After).

Per workspace: Tier 2 about 20/min (chat.startStream, chat.stopStream), Tier 3 about 50/min
(chat.update, conversations.replies/history), Tier 4 about 100/min (views.*,
chat.appendStream, chat.postEphemeral); chat.postMessage about 1/s per channel, with a small
burst. A 429 pushes its bucket past `Retry-After`. The buckets live in this process: with
several dispatchers give each a `share` (e.g. 1/replicas); 429s that slip through are honoured.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

TIER_PER_MINUTE = {2: 20.0, 3: 50.0, 4: 100.0}
TIER_BURST = {2: 3, 3: 4, 4: 8}
POST_PER_SECOND = 1.0
POST_BURST = 2

METHOD_TIER: dict[str, int] = {
    "chat.startStream": 2,
    "chat.stopStream": 2,
    "chat.update": 3,
    "chat.delete": 3,
    "conversations.replies": 3,
    "conversations.history": 3,
    "chat.appendStream": 4,
    "chat.postEphemeral": 4,
    "views.publish": 4,
    "views.update": 4,
}


@dataclass
class Bucket:
    """GCRA token bucket: `rate` calls per second, `burst` at once."""

    rate: float
    burst: int
    tat: float = 0.0  # when the bucket would be empty of debt (theoretical arrival time)
    deferred: float = 0.0  # the last slot promised to a call sent back to wait (see defer)

    def delay(self, now: float) -> float:
        """Seconds until a call may go (0: now)."""
        tat = max(self.tat, now)
        return max(0.0, tat - (self.burst - 1) / self.rate - now)

    def delay_after(self, now: float, ahead: int) -> float:
        """Seconds until a call may go once `ahead` more calls took their slots first."""
        tat = max(self.tat, now) + ahead / self.rate
        return max(0.0, tat - (self.burst - 1) / self.rate - now)

    def reserve(self, now: float) -> float:
        """Take the next slot; returns the seconds to wait for it."""
        wait = self.delay(now)
        self.tat = max(self.tat, now) + 1.0 / self.rate
        return wait

    def defer(self, now: float, max_wait: float) -> float:
        """Seconds after which a call that could not reserve within `max_wait` should come
        back: each deferred call is promised the next slot after those promised before it, so
        a queue of them returns one slot apart (not all at once, to be sent back again)."""
        self.deferred = max(self.deferred, self.tat) + 1.0 / self.rate
        return max(0.0, self.deferred - (self.burst - 1) / self.rate - max_wait - now)

    def hold(self, until: float) -> None:
        """Nothing goes before `until` (Retry-After)."""
        self.tat = max(self.tat, until + (self.burst - 1) / self.rate)


class Pacer:
    """The buckets of one dispatcher: per (workspace, method), and per (workspace, channel)
    for chat.postMessage. `share` scales every rate (several dispatchers split a limit)."""

    def __init__(self, share: float = 0.95) -> None:
        if not 0 < share <= 1:
            raise ValueError("share is in (0, 1]")
        self.share = share
        self._buckets: dict[tuple[str, str], Bucket] = {}

    def _bucket(self, team: str, method: str, channel: str | None) -> Bucket | None:
        key = self.bucket_of(team, method, channel)
        if key is None:
            return None
        bucket = self._buckets.get(key)
        if bucket is None:
            if method == "chat.postMessage":
                rate, burst = POST_PER_SECOND, POST_BURST
            else:
                tier = METHOD_TIER[method]
                rate, burst = TIER_PER_MINUTE[tier] / 60.0, TIER_BURST[tier]
            bucket = self._buckets[key] = Bucket(rate * self.share, burst)
        return bucket

    def reserve(self, team: str, method: str, channel: str | None, max_wait: float) -> float | None:
        """The seconds to wait before the call (its slot is taken), or None when that would
        be longer than `max_wait` (nothing is taken: try again later)."""
        bucket = self._bucket(team, method, channel)
        if bucket is None:
            return 0.0
        now = time.monotonic()
        if bucket.delay(now) > max_wait:
            return None
        return bucket.reserve(now)

    def delay_after(self, team: str, method: str, channel: str | None, ahead: int) -> float:
        """The seconds a call would wait for its slot if `ahead` calls of its bucket were
        reserved first (nothing is taken)."""
        bucket = self._bucket(team, method, channel)
        return 0.0 if bucket is None else bucket.delay_after(time.monotonic(), ahead)

    def bucket_of(self, team: str, method: str, channel: str | None) -> tuple[str, str] | None:
        """Which bucket a call is counted in (None: it is not paced)."""
        if method == "chat.postMessage":
            return (team, f"{method}:{channel}")
        return (team, method) if method in METHOD_TIER else None

    def delay(self, team: str, method: str, channel: str | None) -> float:
        bucket = self._bucket(team, method, channel)
        return 0.0 if bucket is None else bucket.delay(time.monotonic())

    def defer(self, team: str, method: str, channel: str | None, max_wait: float) -> float:
        """A call `reserve` refused: the seconds after which to try it again (its turn among
        the calls deferred before it)."""
        bucket = self._bucket(team, method, channel)
        return 0.0 if bucket is None else bucket.defer(time.monotonic(), max_wait)

    def retry_after(self, team: str, method: str, channel: str | None, seconds: float) -> None:
        """Slack answered 429: hold the method (the channel, for chat.postMessage)."""
        bucket = self._bucket(team, method, channel)
        if bucket is not None:
            bucket.hold(time.monotonic() + seconds)

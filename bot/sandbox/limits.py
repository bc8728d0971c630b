"""Slack's published rate limits and outages, for the sandbox (`SlackSandbox(rate_limits=True)`).

Per method per workspace: Tier 2 about 20/min, Tier 3 about 50/min, Tier 4 about 100/min;
`chat.postMessage` about one per second per channel. Each allows a small burst. A call over its
limit answers HTTP 429 with `Retry-After` (whole seconds, as Slack), and nothing happens.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field

TIER_PER_MINUTE = {1: 1.0, 2: 20.0, 3: 50.0, 4: 100.0}
TIER_BURST = {1: 1, 2: 5, 3: 5, 4: 10}
POST_PER_SECOND = 1.0
POST_BURST = 3

TIERS: dict[str, int] = {
    "chat.startStream": 2,
    "chat.stopStream": 2,
    "chat.update": 3,
    "chat.delete": 3,
    "conversations.replies": 3,
    "conversations.history": 3,
    "conversations.info": 3,
    "conversations.open": 3,
    "conversations.members": 4,
    "chat.appendStream": 4,
    "chat.postEphemeral": 4,
    "chat.getPermalink": 4,
    "views.open": 4,
    "views.push": 4,
    "views.update": 4,
    "views.publish": 4,
    "users.info": 4,
    "users.list": 2,
    "usergroups.list": 2,
    "usergroups.users.list": 2,
    "reactions.add": 3,
    "reactions.remove": 2,
    "team.info": 3,
    "auth.test": 4,
}
"""Slack's tier of each method the sandbox serves (api.slack.com/methods); others are free."""


@dataclass
class Bucket:
    """A token bucket in GCRA form: `rate` per second, `burst` calls at once."""

    rate: float
    burst: int
    tat: float = 0.0  # theoretical arrival time of the next call

    def take(self, now: float) -> float:
        """0 when a call may go now (and count it); else the seconds until one may."""
        interval = 1.0 / self.rate
        tat = max(self.tat, now)
        wait = tat - (self.burst - 1) * interval - now
        if wait > 1e-9:
            return wait
        self.tat = tat + interval
        return 0.0


@dataclass
class SlackLimits:
    """The sandbox's limiter and its counters (calls and 429s per method)."""

    enabled: bool = False
    buckets: dict[str, Bucket] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    ratelimited: Counter[str] = field(default_factory=Counter)
    unavailable: Counter[str] = field(default_factory=Counter)

    def retry_after(self, method: str, channel: object, now: float | None = None) -> int | None:
        """None when the call is within the limits (it is counted), else the Retry-After."""
        if not self.enabled:
            return None
        now = time.monotonic() if now is None else now
        if method == "chat.postMessage":
            key = f"{method}:{channel}"
            bucket = self.buckets.setdefault(key, Bucket(POST_PER_SECOND, POST_BURST))
        elif method in TIERS:
            tier = TIERS[method]
            bucket = self.buckets.setdefault(
                method, Bucket(TIER_PER_MINUTE[tier] / 60.0, TIER_BURST[tier])
            )
        else:
            return None
        wait = bucket.take(now)
        if wait <= 0:
            return None
        self.ratelimited[method] += 1
        return max(1, math.ceil(wait))

    @property
    def ratelimited_total(self) -> int:
        return sum(self.ratelimited.values())


@dataclass
class Outage:
    """Slack down until `until` (monotonic): every Web API call answers 503, or (`refuse`)
    the connection is refused."""

    until: float = 0.0
    mode: str = "503"

    def active(self, now: float | None = None) -> bool:
        return (time.monotonic() if now is None else now) < self.until

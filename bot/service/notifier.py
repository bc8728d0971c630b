"""Wakes callers long-polling a request as soon as it is settled (decided, expired, cancelled).

In this process by an asyncio event per waiter; across replicas through the store's
LISTEN/NOTIFY, whose listener calls `wake` here too.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from store import ApprovalRequestRecord


class Waiter:
    """One caller waiting for one request: woken, with the settled request when this process
    settled it (no need to read it back), or without it (another replica did: read it)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.settled: ApprovalRequestRecord | None = None

    def take(self) -> ApprovalRequestRecord | None:
        """The settled request handed over by the wake-up, if any; clears the wake-up."""
        settled, self.settled = self.settled, None
        self.event.clear()
        return settled


class RequestNotifier:
    def __init__(self) -> None:
        self._waiters: dict[str, set[Waiter]] = defaultdict(set)

    def waiter(self, request_id: str) -> Waiter:
        """Register before reading the request's status, so no wake-up falls in between."""
        waiter = Waiter()
        self._waiters[request_id].add(waiter)
        return waiter

    def forget(self, request_id: str, waiter: Waiter) -> None:
        waiters = self._waiters.get(request_id)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[request_id]

    def wake(self, request_id: str, settled: ApprovalRequestRecord | None = None) -> None:
        for waiter in self._waiters.get(request_id, ()):
            waiter.settled = settled
            waiter.event.set()

    def wake_all(self) -> None:
        """Every waiter re-reads its request (after a gap in which a wake-up may be lost)."""
        for request_id in list(self._waiters):
            self.wake(request_id)

    @property
    def waiting(self) -> int:
        return sum(len(w) for w in self._waiters.values())

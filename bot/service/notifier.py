"""Wakes callers long-polling a request as soon as it is settled (decided, expired, cancelled).

In this process by an asyncio event per waiter; across replicas through the store's
LISTEN/NOTIFY, whose listener calls `wake` here too.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict


class RequestNotifier:
    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)

    def waiter(self, request_id: str) -> asyncio.Event:
        """Register before reading the request's status, so no wake-up falls in between."""
        event = asyncio.Event()
        self._waiters[request_id].add(event)
        return event

    def forget(self, request_id: str, event: asyncio.Event) -> None:
        waiters = self._waiters.get(request_id)
        if waiters is not None:
            waiters.discard(event)
            if not waiters:
                del self._waiters[request_id]

    def wake(self, request_id: str) -> None:
        for event in self._waiters.get(request_id, ()):
            event.set()

    @property
    def waiting(self) -> int:
        return sum(len(w) for w in self._waiters.values())

"""SQLite's one writer, in turns: a write an ack waits for goes before the others.

SQLite lets one transaction write at a time, so the writers of a process queue (before, an
`asyncio.Lock`: first come, first served). The durable intake records an interaction before
its ack (issue 22), and behind a burst that record queued after every run's save, outbox put
and claim already waiting: on SQLite the approve ack's p99 was 7-20 times the bare Bolt
floor at 50 at once (docs/benchmarks.md, third stop of issue 22). An urgent writer
(`turn(urgent=True)`) now takes the next turn, ahead of the queue; so the others are never
starved by a stream of urgent ones, one waiting other goes after each urgent turn. An ack
then waits for at most the write in progress and one more.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class WriteTurns:
    """The turns of one process's writers (one event loop)."""

    def __init__(self) -> None:
        self._busy = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()
        self._last_urgent = False

    @asynccontextmanager
    async def turn(self, *, urgent: bool = False) -> AsyncIterator[None]:
        if self._busy or self._urgent or self._others:
            waiter = asyncio.get_running_loop().create_future()
            (self._urgent if urgent else self._others).append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():  # handed the turn, then cancelled
                    self._next()
                raise
        else:
            self._busy = True
        self._last_urgent = urgent
        try:
            yield
        finally:
            self._next()

    def _next(self) -> None:
        """Hand the turn over (the writer stays busy), or free it."""
        order = (self._others, self._urgent) if self._last_urgent else (self._urgent, self._others)
        for queue in order:
            while queue:
                waiter = queue.popleft()
                if not waiter.done():  # a cancelled waiter is skipped
                    waiter.set_result(None)
                    return
        self._busy = False

    @property
    def waiting(self) -> int:
        """Writers waiting for a turn (not counting the one writing)."""
        return sum(1 for q in (self._urgent, self._others) for w in q if not w.done())

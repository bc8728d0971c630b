"""Fair turns for the work after an ack (starting a run, recording a decision).

A fixed number of slots. When one frees, it goes to the waiting person who has had the fewest
turns since their own backlog began, then, among equals, to the channel that has had the
fewest, then to the person with the least waiting, then to whoever came first. A turn count
is forgotten once its person (or channel) has nothing waiting, so someone arriving behind a
burst of 1,000 commands has had no turn and is next: delayed by the turns under way, never by
the burst, nor by a round of the burst's channels, nor by the first turns of the burst's
people (issue 22, fair intake: behind 300 commands of 40 people, a newcomer waited for each
of them to have a first turn, 1.3-2.3 s on SQLite). Within one person's own turns, first
come, first served.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import Counter, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar

Line = tuple[str, str]
"""(channel, person): one line of waiting turns, first come first served."""


class FairGate:
    """`async with gate.turn(channel, person):` runs the block when a slot is free and no one
    with fewer turns is waiting. A task holding a turn that asks for another (a click's
    listener took one after its ack; the decision it records asks again) goes on in it."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a FairGate needs at least one slot")
        self._free = slots
        self._lines: dict[Line, deque[asyncio.Future[None]]] = {}
        # one entry per line with someone waiting: (person's turns, channel's turns, person's
        # backlog, order); turns only grow while waiting, so an entry's key is mostly at most
        # its line's current one (a backlog that shrank leaves its other lines a little late)
        self._next: list[tuple[int, int, int, int, Line]] = []
        self._order = itertools.count()
        self._turns: Counter[str] = Counter()  # by "p:" person and "c:" channel, while waiting
        self._waiting: Counter[str] = Counter()
        self._holder: ContextVar[asyncio.Task[object] | None] = ContextVar(
            f"fair_gate_{id(self)}", default=None
        )

    @property
    def waiting(self) -> int:
        return sum(len(line) for line in self._lines.values())

    @asynccontextmanager
    async def turn(self, channel: str | None, person: str | None) -> AsyncIterator[None]:
        task: asyncio.Task[object] | None = asyncio.current_task()
        if task is not None and self._holder.get() is task:  # in its turn already
            yield
            return
        await self._acquire((channel or "", person or ""))
        held = self._holder.set(task)
        try:
            yield
        finally:
            self._holder.reset(held)
            self._release()

    def _key(self, line: Line) -> tuple[int, int, int]:
        person = "p:" + line[1]
        return self._turns[person], self._turns["c:" + line[0]], self._waiting[person]

    async def _acquire(self, line: Line) -> None:
        if self._free > 0 and not self._lines:
            self._free -= 1
            return
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._lines.get(line)
        if queue is None:
            queue = self._lines[line] = deque()
            heapq.heappush(self._next, (*self._key(line), next(self._order), line))
        queue.append(handed)
        for name in ("p:" + line[1], "c:" + line[0]):
            self._waiting[name] += 1
        try:
            await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled():  # handed a slot, then cancelled
                self._release()
            else:
                handed.cancel()  # skipped (and uncounted) when its turn comes
            raise

    def _release(self) -> None:
        """Hand the slot to the line with the fewest turns (lazily re-keyed: the turns of a
        line's person or channel may have grown since it was queued)."""
        while self._next:
            persons, channels, backlog, order, line = self._next[0]
            queue = self._lines[line]
            now = self._key(line)
            if now > (persons, channels, backlog):
                heapq.heapreplace(self._next, (*now, order, line))
                continue
            handed = queue.popleft()
            self._took(line, counted=not handed.done())
            if queue:  # its next turn waits behind the others of equal turns
                heapq.heapreplace(self._next, (*self._key(line), next(self._order), line))
            else:
                heapq.heappop(self._next)
                del self._lines[line]
            if not handed.done():
                handed.set_result(None)
                return
        self._free += 1

    def _took(self, line: Line, *, counted: bool) -> None:
        for name in ("p:" + line[1], "c:" + line[0]):
            if counted:
                self._turns[name] += 1
            self._waiting[name] -= 1
            if self._waiting[name] <= 0:  # nothing left waiting: its turns are forgotten
                del self._waiting[name]
                self._turns.pop(name, None)

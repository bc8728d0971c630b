"""Fair turns for the work after an ack (starting a run, recording a decision).

A fixed number of slots, handed out round-robin: first across channels, then across the
people of a channel, first come first served within one person's own turns. A burst of 1,000
commands from one person (or from one channel) then delays someone else's command by one turn,
not by the burst (issue 22, fair intake).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class FairGate:
    """`async with gate.turn(channel, person):` runs the block when a slot is free and it is
    this channel's and this person's turn."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a FairGate needs at least one slot")
        self._free = slots
        self._waiting: OrderedDict[str, OrderedDict[str, deque[asyncio.Future[None]]]] = (
            OrderedDict()
        )

    @property
    def waiting(self) -> int:
        return sum(len(q) for people in self._waiting.values() for q in people.values())

    @asynccontextmanager
    async def turn(self, channel: str | None, person: str | None) -> AsyncIterator[None]:
        await self._acquire(channel or "", person or "")
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, channel: str, person: str) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        people = self._waiting.setdefault(channel, OrderedDict())
        people.setdefault(person, deque()).append(handed)
        try:
            await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled():  # handed a slot, then cancelled
                self._release()
            else:
                handed.cancel()  # skipped when its turn comes
            raise

    def _release(self) -> None:
        """Hand the slot to the next turn: the channel first in line, its person first in
        line; both then go to the back of their lines."""
        while self._waiting:
            channel, people = next(iter(self._waiting.items()))
            person, queue = next(iter(people.items()))
            handed = queue.popleft()
            if queue:
                people.move_to_end(person)
            else:
                del people[person]
            if people:
                self._waiting.move_to_end(channel)
            else:
                del self._waiting[channel]
            if not handed.done():
                handed.set_result(None)
                return
        self._free += 1

"""Acks first: the work after an ack waits while Slack waits on other acks (issue 22).

The front answers Slack and does the work after each ack (a decision, a run's start) on one
event loop. Under a burst of clicks the acks of the later ones queued behind that work: at 50
at once, the ack's p99 was many times the bare Bolt floor (docs/benchmarks.md). The front
counts the requests Slack is waiting on (`acking`); the work after an ack (`FairGate.turn`)
starts only once none is in flight, or after `MAX_HOLD` seconds, whichever comes first, so a
stream of acks delays it a little and never stops it. The work of a request not yet acked
itself (a modal's answer computed before its ack) never waits.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from bot.agent.util import wait_set

MAX_HOLD: Final = 0.2
"""Seconds the work after an ack waits, at most, for the other acks in flight to end."""


class _Ack:
    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False


_THIS_REQUEST: contextvars.ContextVar[_Ack | None] = contextvars.ContextVar(
    "sayso_ack", default=None
)


class Acks:
    """The Slack requests of this process waiting for their ack."""

    def __init__(self, max_hold: float = MAX_HOLD) -> None:
        self.max_hold = max_hold
        self.in_flight = 0
        self._none = asyncio.Event()
        self._none.set()

    @contextmanager
    def acking(self) -> Iterator[None]:
        """Around a request Slack waits on, until its answer (the ack) is ready."""
        ack = _Ack()
        token = _THIS_REQUEST.set(ack)
        self.in_flight += 1
        self._none.clear()
        try:
            yield
        finally:
            ack.sent = True  # its listener's work goes on (in tasks that share `ack`)
            _THIS_REQUEST.reset(token)
            self.in_flight -= 1
            if self.in_flight == 0:
                self._none.set()

    async def let_through(self) -> None:
        """Wait until no ack is in flight (at most `max_hold` seconds); at once for the work
        of a request still waiting for its own ack."""
        if self.in_flight == 0:
            return
        own = _THIS_REQUEST.get()
        if own is not None and not own.sent:
            return
        await wait_set(self._none, self.max_hold)

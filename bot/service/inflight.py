"""A run being driven by this process: its lease, its task, and whether a tool body is running.

A worker stopping gracefully hands back the runs that are not inside a tool body: their last
save has no call `started` without a result, so the worker that takes over continues them
without marking anything interrupted. Whether a call is started is read from what is saved,
which is exactly what a recovering worker will see.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from bot.agent.state import RunResult
from store import Lease, RunRecord, StoreStateAccessor
from store.accessor import SavedRun

Phase = Literal["driving", "presenting"]


def has_started_call(result: RunResult) -> bool:
    """Is a tool call of the run's current turn started and not finished (its body running)?"""
    turn = result.run.turn
    return turn is not None and any(c.state == "started" for c in turn.calls)


class WatchedAccessor:
    """The store's accessor, noting whether the saved state has a tool body in progress.

    The flag is raised BEFORE a save that starts a call (a cancelled save may have committed)
    and lowered only AFTER a save with no started call has committed."""

    def __init__(self, inner: StoreStateAccessor) -> None:
        self.inner = inner
        self.in_tool_body = False

    async def load(self, run_id: str) -> RunResult | None:
        return await self.inner.load(run_id)

    async def save(self, result: RunResult) -> None:
        started = has_started_call(result)
        if started:
            self.in_tool_body = True
        await self.inner.save(result)
        self.in_tool_body = started

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class InFlight:
    """One run driven here now."""

    def __init__(
        self, lease: Lease, accessor: StoreStateAccessor, record: RunRecord | None = None
    ) -> None:
        self.lease = lease
        self.accessor = WatchedAccessor(accessor)
        self.task: asyncio.Task[Any] | None = None
        self.phase: Phase = "driving"
        self.record = record
        """The run's row as read before this drive; with the accessor's saves, the row now."""
        self._current: tuple[SavedRun | None, RunRecord] | None = None

    def current(self) -> RunRecord | None:
        """The run's row as this process last wrote it (None when it was never read): while
        the lease is held, nobody else writes it, so there is nothing to read back. (A cancel
        fences the next save; its own presenting does not come from here.)"""
        if self.record is None:
            return None
        saved = self.accessor.inner.saved
        if self._current is None or self._current[0] is not saved:
            record = saved.applied_to(self.record) if saved is not None else self.record
            self._current = (saved, record)
        return self._current[1]

    @property
    def in_tool_body(self) -> bool:
        return self.accessor.in_tool_body

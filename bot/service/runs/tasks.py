"""The background tasks of one service: runs being driven, continuations queued for a slot."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("sayso.service")


class Tasks:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "sayso") -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("event=task_failed task=%s error=%r", task.get_name(), task.exception())

    def __len__(self) -> int:
        return len(self._tasks)

    def snapshot(self) -> set[asyncio.Task[Any]]:
        return set(self._tasks)

    @property
    def busy(self) -> bool:
        """Is background work (a run, a continuation) going on?"""
        return bool(self._tasks)

    async def idle(self, limit: float = 30.0) -> None:
        """Wait until no background work is left (tests, shutdown)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while self._tasks and loop.time() < deadline:
            await asyncio.wait(set(self._tasks), timeout=0.5)

    async def settle(self, deadline: float) -> None:
        """Let the tasks finish until the loop's clock reaches `deadline`."""
        loop = asyncio.get_running_loop()
        while self._tasks and loop.time() < deadline:
            await asyncio.wait(
                set(self._tasks), timeout=min(0.2, max(0.01, deadline - loop.time()))
            )

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)

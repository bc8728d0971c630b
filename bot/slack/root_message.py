"""A run's root message: what it shows, and a running run's states held for the debounce.

A run's root message shows its status and live checklist (`root_with_checklist`). While
the run runs, its status changes several times a second (the decision, each tool call, each
model response); the outbox folds them into one `chat.update` (a debounced row), but each put
was still a write (three per decision). Here the states of a *running* run wait in memory for
the debounce and only the newest is put, and only if the run is still running then (a state
put meanwhile by another process, a cancel, stays). Nothing acknowledged is held: a running
run whose process dies is driven again by another process, which shows its status anew, and
every other state (waiting for people, ended) is put at once, replacing what was held, before
the run is marked shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from bot.slack.blocks import messages
from bot.slack.blocks.status import checklist
from bot.slack.render import run_info, run_steps
from store import RunRecord

log = logging.getLogger("sayso.slack")

Put = Callable[[str, str, dict[str, Any], str], Awaitable[Any]]
"""Put (key, channel, message) in the outbox while the run (its id) is running."""


def root_with_checklist(run: RunRecord) -> dict[str, Any]:
    """The root message; while the run is live its status shows the whole checklist."""
    info = run_info(run)
    steps = run_steps(run.result)
    if info.activity is not None and len(steps) > 1:
        info = replace(info, activity=checklist(steps))
    return messages.root_message(info)


class HeldRoots:
    """Root messages of running runs, held `hold` seconds; the newest state wins."""

    def __init__(self, put: Put, hold: float) -> None:
        self.put = put
        self.hold = hold
        self._held: dict[str, tuple[str, dict[str, Any], str]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._putting: set[str] = set()

    def later(self, key: str, channel: str, message: dict[str, Any], run_id: str) -> None:
        """Put `message` once the hold ends (a newer state given meanwhile replaces it), if
        the run is still running then (a state put from elsewhere meanwhile stays)."""
        self._held[key] = (channel, message, run_id)
        if key not in self._tasks:
            task = asyncio.create_task(self._put_later(key), name=f"held:{key}")
            self._tasks[key] = task

    async def drop(self, key: str) -> None:
        """A newer state is put now: what was held for `key` is out of date (a put of it
        already under way is let finish first, so the newer state is the last written)."""
        self._held.pop(key, None)
        task = self._tasks.pop(key, None)
        if task is None or task is asyncio.current_task():
            return
        if key in self._putting:
            await asyncio.gather(task, return_exceptions=True)
        else:
            task.cancel()

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    async def _put_later(self, key: str) -> None:
        try:
            while key in self._held:  # a state given while the last was put: held again
                await asyncio.sleep(self.hold)
                held = self._held.pop(key, None)
                if held is None:
                    break
                self._putting.add(key)
                try:
                    await self.put(key, *held)
                finally:
                    self._putting.discard(key)
        except asyncio.CancelledError:
            raise
        except Exception:  # the database is away: the run's next state is put
            log.exception("event=root_put_failed key=%s", key)
        finally:
            if self._tasks.get(key) is asyncio.current_task():
                del self._tasks[key]

    async def close(self) -> None:
        """Put what is held now (a stopping process), then stop."""
        tasks = list(self._tasks.items())
        self._tasks.clear()
        for key, task in tasks:
            if key not in self._putting:
                task.cancel()
        await asyncio.gather(*(task for _, task in tasks), return_exceptions=True)
        held, self._held = self._held, {}
        for key, (channel, message, run_id) in held.items():
            with contextlib.suppress(Exception):
                await self.put(key, channel, message, run_id)

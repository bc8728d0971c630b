"""Replaying the intake: a recorded interaction whose process died before processing it.

Every process that serves Slack runs one `IntakeReplayer`. Every `interval` seconds it claims
the rows whose holder's lease lapsed (store/intake.py: oldest first, SKIP LOCKED on
PostgreSQL; on SQLite the restarted process finds its own rows) and dispatches each stored
payload through the same Bolt app, so every listener's logic is reused unchanged. A replay is
a Socket Mode request carrying the row's key in its context: Bolt skips the signature check
for it (the payload was verified when recorded, and HTTP input can never be one), the replay
guard lets it through, and `RecordIntake` does not record it again. Listeners stay
idempotent on a replay: decisions are conditional writes, a command or reply starts the run
whose id derives from the key (found, not started twice), and a refusal that only says the
first attempt already did it is not told again (`is_replay`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.slack.intake import REPLAY
from store.intake import Intake, IntakeRow

log = logging.getLogger("sayso.slack")

MAX_ATTEMPTS: Final = 4
"""A row processed this many times without being done is given up (logged)."""
KEEP_DONE: Final = timedelta(days=1)
"""Processed rows are kept this long (deduplication of late retries and replays), at most."""
PURGE_EVERY: Final = 3600.0


class IntakeReplayer:
    """Claims lapsed intake rows and dispatches them through the Bolt app again."""

    def __init__(
        self,
        intake: Intake,
        app: AsyncApp,
        *,
        owner: str,
        lease: float,
        interval: float,
        ready: Callable[[], bool] = lambda: True,
        keep_done: timedelta = KEEP_DONE,
    ) -> None:
        self.intake = intake
        self.app = app
        self.owner = owner
        self.lease = lease
        self.interval = interval
        self.ready = ready
        self.keep_done = keep_done
        self.replayed = 0
        self._task: asyncio.Task[None] | None = None
        self._purged_at = 0.0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="sayso-intake-replayer")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while True:
            try:
                if self.ready():  # the workspace is known: listeners would refuse otherwise
                    await self.replay_due()
                await self._purge()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database is away: try again next time
                log.warning("event=intake_replay_failed error=%s", type(exc).__name__)
            await asyncio.sleep(self.interval)

    async def replay_due(self) -> int:
        """Replay every row whose holder's lease lapsed; how many were dispatched."""
        count = 0
        while rows := await self.intake.claim(self.owner, self.lease):
            for row in rows:
                if row.attempts > MAX_ATTEMPTS:
                    log.error("event=intake_given_up key=%s attempts=%d", row.key, row.attempts)
                    await self.intake.done(row.key, {"given_up": True})
                    continue
                await self.replay(row)
                count += 1
        return count

    async def replay(self, row: IntakeRow) -> None:
        """Dispatch the stored payload (the listener, once done, closes the row)."""
        log.warning(
            "event=intake_replayed key=%s kind=%s attempt=%d", row.key, row.kind, row.attempts
        )
        self.replayed += 1
        request = AsyncBoltRequest(body=row.payload, mode="socket_mode", context={REPLAY: row.key})
        response = await self.app.async_dispatch(request)
        if response.status >= 400:  # no listener took it: close it, or it comes back
            log.warning("event=intake_replay_unhandled key=%s status=%d", row.key, response.status)
            await self.intake.done(row.key, {"status": response.status})

    async def _purge(self) -> None:
        now = time.monotonic()
        if now - self._purged_at < PURGE_EVERY:
            return
        self._purged_at = now
        purged = await self.intake.purge(self.keep_done)
        if purged:
            log.info("event=intake_purged rows=%d", purged)

"""The sweep, every few seconds on each driving process: expiry, escalation, runs ready to
continue, cards a dead process never posted, reminders, retention. The safety net under the
wakeups: everything it does also happens at once when the process doing it stays alive."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from bot.service.decide import Decider
from bot.service.events import Events, RequestSettled
from bot.service.ports import Escalated, Reminder
from bot.service.presenting import SafePresenter
from bot.service.runs.drive import RunDriver
from bot.service.runs.present import RunPresenter
from bot.service.settings import ServiceSettings
from store import ApprovalRequestRecord, Store

log = logging.getLogger("sayso.service")

PURGE_EVERY = timedelta(hours=1)
CARD_GRACE = timedelta(seconds=30)  # the pausing process posts cards well within this
END_LOOKBACK = timedelta(days=1)  # older unshown ends are left alone (nobody awaits them)


class Sweeper:
    def __init__(
        self,
        store: Store,
        decider: Decider,
        driver: RunDriver,
        presenting: RunPresenter,
        show: SafePresenter,
        events: Events,
        settings: ServiceSettings,
    ) -> None:
        self.store = store
        self.decider = decider
        self.driver = driver
        self.presenting = presenting
        self.show = show
        self.events = events
        self.settings = settings
        self._task: asyncio.Task[None] | None = None
        self._last_purge: datetime | None = None

    async def sweep_once(self, now: datetime | None = None) -> None:
        now = now or datetime.now(UTC)
        for request in await self.store.requests.expire_due(now):
            log.info(
                "event=request_expired run_id=%s call_id=%s",
                request.spec.run_id,
                request.spec.call_id,
            )
            await self.decider.refresh_card(request)
            await self.events.emit(RequestSettled(request))
        for request in await self.store.requests.escalate_due(now):
            await self._escalated(request)
        for run_id in await self.store.runs.ready(now):
            await self.driver.continue_run(run_id)
        for run_id in await self.store.requests.runs_missing_cards(now - CARD_GRACE):
            await self.presenting.repost_cards(run_id)
        for run_id in await self.store.runs.unshown(now - self._end_grace(), now - END_LOOKBACK):
            await self.presenting.show_unshown(run_id)
        if self.settings.remind_after is not None:
            for request in await self.store.requests.due_reminders(
                now - self.settings.remind_after, now
            ):
                run = await self.store.runs.get(request.spec.run_id)
                if run is not None:
                    await self.show.say(Reminder(request), run)
        if self._last_purge is None or now - self._last_purge > PURGE_EVERY:
            self._last_purge = now
            purged = await self.store.purge(self.settings.retention)
            if purged:
                log.info("event=purged runs=%d older_than=%s", purged, self.settings.retention)

    def _end_grace(self) -> timedelta:
        """How long the process that ended a run has to show it: it does so at once, and one
        that has not within twice its lease time is presumed dead (it renews leases far more
        often); at least 10 s."""
        return timedelta(seconds=max(10.0, 2 * self.settings.lease_seconds))

    async def _escalated(self, request: ApprovalRequestRecord) -> None:
        """Tell the thread (mentioning who is called in) and show it on the card."""
        log.info(
            "event=request_escalated run_id=%s call_id=%s to=%s",
            request.spec.run_id,
            request.spec.call_id,
            ",".join(request.policy.escalate_to or []),
        )
        run = await self.store.runs.get(request.spec.run_id)
        if run is not None:
            await self.show.say(Escalated(request), run)
        await self.decider.refresh_card(request, run)

    async def _forever(self, interval: float) -> None:
        while True:
            try:
                await self.sweep_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event=sweep_failed")
            await asyncio.sleep(interval)

    def start(self, interval: float) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._forever(interval), name="sweeper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

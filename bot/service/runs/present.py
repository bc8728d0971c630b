"""What a run shows where it stops: its cards (unless a standing approval covers the call), its
answer or its failure, and its status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.agent import RunResult
from bot.service.continuation import render_output
from bot.service.ports import STATUS, Answered, Cancelled, Failed, Status
from bot.service.presenting import SafePresenter
from store import ApprovalRequestRecord, RunRecord, Store
from store.cancel import CancelResult
from store.crypto import EncryptionKeyError

log = logging.getLogger("sayso.service")

UnderStanding = Callable[[RunRecord, ApprovalRequestRecord], Awaitable[bool]]


class RunPresenter:
    def __init__(
        self, store: Store, show: SafePresenter, under_standing: UnderStanding, cpu_slots: int
    ) -> None:
        self.store = store
        self.show = show
        self.under_standing = under_standing
        """Approve a call a standing approval covers (the decider's); True when it did."""
        self.cpu = asyncio.Semaphore(cpu_slots)
        """Runs doing store and Slack work at once (loading, presenting)."""

    async def present(self, result: RunResult, run: RunRecord | None = None) -> None:
        """Show where a run stopped: new cards, the final answer, or the failure (`run`: its
        row as saved, when the caller knows it)."""
        async with self.cpu:
            await self._present(result, run)

    async def _present(self, result: RunResult, run: RunRecord | None) -> None:
        if run is None or run.id != result.run.id:
            run = await self.store.runs.get(result.run.id)
        if run is None:
            return
        status = result.run.status
        if status in ("completed", "failed"):
            from bot.ops import metrics  # sayso_runs_total (cancellations: the audit trail)

            metrics.run_finished(status)
            await self.show_end(run, result)
            return
        if status == "waiting_for_human" and result.run.pause is not None:
            await self.post_cards(run.id, run)
        follow_up = bool(result.run.context.get("follow_up"))
        await self.show.run_changed(run, Status(follow_up=follow_up))

    async def show_end(self, run: RunRecord, result: RunResult, *, again: bool = False) -> None:
        """A completed run's answer, or a failed run's failure, then its final status; once
        all of it is in the outbox, the run is marked shown (a process dying before that
        leaves it to the sweep: `show_unshown`). `again`: keep what was put before."""
        end: Answered | Failed
        if result.run.status == "completed":
            last = result.run.messages[-1] if result.run.messages else None
            cut = bool(last and last.truncated)
            end = Answered(render_output(result.output), cut, again=again)
        else:
            end = Failed(result.run.error or "unknown error", again=again)
        shown = await self.show.run_changed(run, end)
        follow_up = bool(result.run.context.get("follow_up"))
        shown = await self.show.run_changed(run, Status(follow_up=follow_up)) and shown
        if shown:
            await self.store.runs.mark_shown(run.id, run.version)

    async def show_unshown(self, run_id: str) -> None:
        """Show the end of a run whose process died between saving it and showing it."""
        run = await self.store.runs.get(run_id)
        if run is None or run.shown_version == run.version:
            return
        log.warning("event=end_unshown run_id=%s status=%s: showing it", run_id, run.status)
        try:
            result = run.result
        except EncryptionKeyError:
            log.error("event=end_unreadable run_id=%s: no key reads its state", run_id)
            result = None
        async with self.cpu:
            if run.status == "cancelled":
                if not await self._show_cancel_again(run):
                    return
            elif result is not None and result.run.status == run.status:
                await self.show_end(run, result, again=True)
                return
            # else ended outside the runtime, or unreadable: nothing of it can be shown
            await self.store.runs.mark_shown(run.id, run.version)

    async def _show_cancel_again(self, run: RunRecord) -> bool:
        by = await canceller(self.store, run.id)
        current = await self.store.requests.current(run.id)
        closed = [r for r in current if r.state.status == "cancelled"]
        done = CancelResult(cancelled=True, run=run, requests=closed)
        return await show_cancelled(self.show, done, by or "someone")

    async def repost_cards(self, run_id: str) -> None:
        """Post cards that a dead process never posted; the lease makes one replica do it."""
        lease = await self.store.runs.claim(run_id)
        if lease is None:
            return
        try:
            log.warning("event=cards_missing run_id=%s: posting them", run_id)
            await self.post_cards(run_id)
        finally:
            await self.store.runs.release(lease)

    async def post_cards(self, run_id: str, run: RunRecord | None = None) -> None:
        if run is None:
            run = await self.store.runs.get(run_id)
        if run is None:
            return
        for request in await self.store.requests.current(run_id):
            if request.state.message_ts is not None or request.state.status != "pending":
                continue
            if await self.under_standing(run, request):
                continue
            place = await self.show.post_card(run, request)
            if place is not None:
                await self.store.requests.set_message(request.id, place.channel_id, place.ts)


async def show_cancelled(show: SafePresenter, done: CancelResult, actor: str) -> bool:
    """Cards of the closed requests, the root message and a note in the thread; True when
    all of it is in the outbox (the caller then marks the run shown: else the sweep shows it)."""
    run = done.run
    if run is None:
        return True
    shown = True
    for request in done.requests:
        shown = await show.request_changed(run, request) and shown
    shown = await show.run_changed(run, STATUS) and shown
    return await show.run_changed(run, Cancelled(actor)) and shown


async def canceller(store: Store, run_id: str) -> str | None:
    """Who cancelled the run (the audit trail's last successful cancel)."""
    trail = await store.audit.trail(run_id)
    by = [e.actor for e in trail if e.action == "cancel" and e.outcome == "ok" and e.actor]
    return str(by[-1]) if by else None

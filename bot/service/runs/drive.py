"""Driving runs exactly once: one process at a time per run, fenced by the store's lease.

A run is claimed (its lease), driven on this event loop while the lease is renewed, and shown
where it stops. When every slot is taken, a ready run waits in a queue WITHOUT a lease: it
stays visible as ready to every replica's sweep, and is claimed only when a slot frees."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from bot.agent import Agent, RunEvent, RunResult
from bot.agent.schema_tool import is_api_run
from bot.agent.scrub import Failure
from bot.ops import tracing
from bot.service.approved_arguments import refuse_altered
from bot.service.continuation import decisions_from
from bot.service.inflight import InFlight
from bot.service.policy.effective import Policies
from bot.service.ports import STATUS, Failed, ToolFailed
from bot.service.presenting import SafePresenter
from bot.service.registry import AgentRegistry
from bot.service.runs.handoff import FRESH_KEY, QUEUED_KEY, HandOff
from bot.service.runs.present import RunPresenter
from bot.service.runs.tasks import Tasks
from bot.service.settings import ServiceSettings
from bot.service.streaming import RunCallbacks
from store import ApprovalRequestRecord, Lease, LeaseLostError, RunRecord, Store

log = logging.getLogger("sayso.service")

Step = Callable[[Any, Any], Awaitable[RunResult]]
"""One drive of a run: given the state accessor and the event callback, run the agent."""


def _claimed(lease: Lease, *, queued: bool = False) -> None:
    """One log line per claim; a lease taken over from a holder that stopped renewing it
    (its process died or stalled) is counted (`sayso_lease_takeovers_total`)."""
    log.info(
        "event=run_claimed run_id=%s owner=%s queued=%d taken_over=%d",
        lease.run_id,
        lease.owner,
        int(queued),
        int(lease.taken_over),
    )
    if lease.taken_over:
        from bot.ops import metrics

        metrics.lease_takeover()


class RunDriver:
    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        policies: Policies,
        show: SafePresenter,
        presenting: RunPresenter,
        handoff: HandOff,
        tasks: Tasks,
        settings: ServiceSettings,
    ) -> None:
        self.store = store
        self.agents = agents
        self.policies = policies
        self.show = show
        self.presenting = presenting
        self.handoff = handoff
        self.tasks = tasks
        self.lease_seconds = settings.lease_seconds
        # Runs driven at once by this process: more wait their turn (their lease is renewed
        # meanwhile), so acks never queue behind a flood of runs and the pool is not exhausted.
        self._slots = asyncio.Semaphore(settings.max_active_runs)
        self._queued: set[str] = set()
        self.in_flight: dict[str, InFlight] = {}
        self._tool_started: dict[tuple[str, str], float] = {}

    # -- claiming ---------------------------------------------------------------------------

    async def continue_run(self, run_id: str, *, retry: bool = False) -> bool:
        """Continue the run in the background if nobody holds it (on a front whose runs are
        driven by workers: hand it to them). Returns False when the run is held by someone
        else (or already queued)."""
        if self.handoff.active:
            if retry:
                return await self.handoff.retry(run_id)
            await self.handoff.ready(run_id)
            return True
        if run_id in self._queued:
            return False
        if self._slots.locked() and not retry:
            self._queued.add(run_id)
            self.tasks.spawn(self._continue_when_free(run_id), name=f"queued:{run_id}")
            return True
        lease = await self.store.runs.claim(run_id)
        if lease is None:
            return False
        _claimed(lease)
        self.tasks.spawn(self._continue(lease, retry), name=f"continue:{run_id}")
        return True

    async def ready(self, run_id: str, lease: Lease | None) -> None:
        """A decision made the run ready (`lease`: and claimed it for this process)."""
        if lease is None:
            await self.continue_run(run_id)
        elif self.handoff.active:  # a front claimed it for its own worker
            await self.handoff.give(lease)
        else:
            self.drive_claimed(lease)

    def drives_now(self) -> bool:
        """Would a run that became ready be claimed and driven by this process at once?
        (Not with every slot taken, nor on a front without a worker of its own: such a run
        waits unleased, visible to every replica.) On a front, by its own worker."""
        if self.handoff.active:
            return self.handoff.local_takes_now()
        return not self._slots.locked()

    def drive_claimed(self, lease: Lease) -> asyncio.Task[Any]:
        """Continue a run this process has just claimed (a worker's batch claim, a decision
        that claimed its run in the same transaction)."""
        _claimed(lease)
        return self.tasks.spawn(self._continue(lease, False), name=f"continue:{lease.run_id}")

    def spawn_drive(self, lease: Lease, agent: Agent, step: Step, run: RunRecord | None) -> None:
        """Drive a new run (streaming its text) in the background."""
        drive = self._drive(lease, agent, step, stream=True, run=run)
        self.tasks.spawn(drive, name=f"run:{lease.run_id}")

    async def _continue_when_free(self, run_id: str) -> None:
        try:
            async with self._slots:
                self._queued.discard(run_id)
                lease = await self.store.runs.claim(run_id)
                if lease is None:
                    return  # another replica took it meanwhile
                _claimed(lease, queued=True)
                await self._continue(lease, False, slot_held=True)
        finally:
            self._queued.discard(run_id)

    # -- what a claimed run does next -------------------------------------------------------

    async def _continue(self, lease: Lease, retry: bool, slot_held: bool = False) -> None:
        async with self.presenting.cpu:
            # one read: the row, its state and (waiting for people) its pause's requests
            run, requests, approved = await self.store.requests.run_and_current(lease.run_id)
        agent = self.agents.get(run.agent_id) if run else None
        if run is not None and is_api_run(run.agent_id):
            await self.store.runs.release(lease)  # an API request's continuation is its caller's
            return
        if run is None or agent is None:
            log.error("event=continue_skipped run_id=%s reason=unknown_run_or_agent", lease.run_id)
            await self.store.runs.release(lease)
            return
        step, stream, row = await self._next_step(run, agent, requests, approved, retry)
        if step is None:
            await self.store.runs.release(lease)
            return
        await self._drive(lease, agent, step, slot_held=slot_held, stream=stream, run=row)

    async def _next_step(
        self,
        run: RunRecord,
        agent: Agent,
        requests: list[ApprovalRequestRecord],
        approved: dict[str, str],
        retry: bool,
    ) -> tuple[Step | None, bool, RunRecord | None]:
        """How a claimed run goes on: the step, whether its text streams, its row (when the
        step keeps it); no step: nothing to do (released)."""
        result = run.result
        needs = self.policies.needs_approval(agent)
        if result is None:  # died before its first save: nothing ran, start it again
            log.warning("event=run_restarted run_id=%s reason=no_saved_state", run.id)
            context = {
                "requested_by": run.requester,
                "team_id": run.team_id,
                "channel_id": run.channel_id,
                "follow_up": False,
            }

            async def restart(acc: Any, ev: Any) -> RunResult:
                return await agent.run(
                    run.request_text, context=context, state=acc, run_id=run.id, on_event=ev
                )

            return restart, False, run
        status = result.run.status
        if retry and status == "failed":

            async def again(acc: Any, ev: Any) -> RunResult:
                return await agent.continue_run(
                    run=result, state=acc, retry=True, on_event=ev, require_approval=needs
                )

            return again, False, run
        if status == "waiting_for_human" and result.run.pause is not None:
            if not requests or any(r.state.status == "pending" for r in requests):
                return None, False, None
            kwargs = decisions_from(await refuse_altered(self.store, result, requests, approved))

            async def decided(acc: Any, ev: Any) -> RunResult:
                return await agent.continue_run(
                    run=result, state=acc, on_event=ev, require_approval=needs, **kwargs
                )

            return decided, True, run
        if status == "running":
            context = result.run.context
            if context.pop(QUEUED_KEY, None) and not context.get("follow_up"):
                await self.show.run_changed(run, STATUS)  # queued -> running
            fresh = bool(context.pop(FRESH_KEY, None))

            async def recover(acc: Any, ev: Any) -> RunResult:
                return await agent.recover(run=result, state=acc, on_event=ev)

            return recover, fresh, None
        return None, False, None

    # -- driving ----------------------------------------------------------------------------

    @asynccontextmanager
    async def holding(self, lease: Lease) -> AsyncIterator[None]:
        """The lease stays renewed while the block waits (a root message waiting for its
        channel's pace must not let another replica take the run over meanwhile)."""
        renewing = asyncio.create_task(self._renew(lease), name=f"renew:{lease.run_id}")
        try:
            yield
        finally:
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)

    async def _renew(self, lease: Lease) -> None:
        """Renew until cancelled. A failed renewal is no reason to stop: a save may have
        advanced the version while it was in flight, or the database blipped; a lease truly
        taken over is fenced anyway (the next save raises LeaseLostError)."""
        interval = max(0.05, self.lease_seconds / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                renewed = await self.store.runs.renew(lease)
            except Exception as exc:
                log.warning("event=lease_renew_failed run_id=%s error=%r", lease.run_id, exc)
                continue
            if not renewed:
                log.warning("event=lease_not_renewed run_id=%s owner=%s", lease.run_id, lease.owner)

    async def _drive(
        self,
        lease: Lease,
        agent: Agent,
        step: Step,
        *,
        slot_held: bool = False,
        stream: bool = False,
        run: RunRecord | None = None,
    ) -> None:
        """Drive a run; `stream`: its text streams to the thread (never on a retry or a
        recovery, which could show text a second time). `run`: its row, read just before
        (read here otherwise); while driving, the row is known from this process's saves."""
        if run is None:
            run = await self.store.runs.get(lease.run_id)
        sink = self.show.text_sink(run) if stream and run is not None else None
        flight = InFlight(
            lease, self.store.runs.accessor(lease, self.policies.request_policy(agent)), run
        )
        task = asyncio.current_task()
        if task is not None:
            flight.task = task
        self.in_flight[lease.run_id] = flight
        try:
            result = await self._step(flight, step, RunCallbacks(self._progress, sink), slot_held)
            if result is not None:
                await self.presenting.present(result, flight.current())
        finally:
            self._forget(flight)

    async def _step(
        self, flight: InFlight, step: Step, on_event: RunCallbacks, slot_held: bool
    ) -> RunResult | None:
        """Run one step under the renewed lease; None when the run failed (saved and shown as
        failed) or another replica holds it."""
        lease = flight.lease
        renewer = asyncio.create_task(self._renew(lease))
        try:
            async with tracing.run_span(lease.run_id, "sayso.run drive"):
                if slot_held:
                    result = await step(flight.accessor, on_event)
                else:
                    async with self._slots:
                        result = await step(flight.accessor, on_event)
            flight.phase = "presenting"
            return result
        except LeaseLostError:
            log.warning("event=write_fenced run_id=%s: another replica holds the run", lease.run_id)
            return None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            flight.phase = "presenting"
            await self._failed(flight, exc)
            return None
        finally:
            renewer.cancel()

    async def _failed(self, flight: InFlight, exc: Exception) -> None:
        failure = Failure.of(exc)
        lease = flight.lease
        log.exception(
            "event=run_crashed run_id=%s error_id=%s error_type=%s",
            lease.run_id,
            failure.error_id,
            failure.error_type,
            exc_info=exc,
        )
        await self._mark_failed(flight.accessor, lease, failure.shown)
        from bot.ops import metrics  # sayso_runs_total

        metrics.run_finished("failed")
        run = await self.store.runs.get(lease.run_id)
        if run is not None and run.status == "failed" and run.result is not None:
            await self.presenting.show_end(run, run.result)
        elif run is not None:  # its save as failed failed too: shown once, nothing to sweep
            await self.show.run_changed(run, Failed(failure.shown))

    def _trace_tool(self, event: RunEvent) -> None:
        """A `tool <name>` span per tool body, from its started and finished events."""
        key = (event.run_id, event.call_id or "")
        if event.type == "tool_started":
            self._tool_started[key] = time.monotonic()
        elif event.type == "tool_finished":
            started = self._tool_started.pop(key, None)
            if started is not None:
                tracing.record(
                    f"tool {event.tool}",
                    time.monotonic() - started,
                    "failed" if event.detail else None,
                    run_id=event.run_id,
                    call_id=event.call_id,
                    tool=event.tool,
                )

    def _forget(self, flight: InFlight) -> None:
        if self.in_flight.get(flight.lease.run_id) is flight:
            del self.in_flight[flight.lease.run_id]

    async def drain(self, grace: float) -> None:
        """Graceful stop: let runs finish for up to `grace` seconds; then hand back the runs
        not inside a tool body (another worker continues them at once, from their last save,
        nothing shown as interrupted). A run inside a tool body is left to its lease: if it
        does not finish, it is recovered elsewhere as interrupted, as after a crash."""
        await self.tasks.settle(asyncio.get_running_loop().time() + grace)
        for flight in list(self.in_flight.values()):
            if flight.phase == "driving" and not flight.in_tool_body and flight.task is not None:
                flight.task.cancel()
                await asyncio.gather(flight.task, return_exceptions=True)
                try:
                    await self.store.runs.hand_off(flight.lease)
                    log.info("event=run_handed_back run_id=%s", flight.lease.run_id)
                except Exception:
                    log.exception("event=hand_back_failed run_id=%s", flight.lease.run_id)

    async def _mark_failed(self, accessor: Any, lease: Lease, error: str) -> None:
        """Save the run as failed (so sweeps stop retrying it); `retry` continues it later."""
        try:
            current = await self.store.runs.load_result(lease.run_id)
            if current is not None and current.run.status not in ("completed", "cancelled"):
                current.run.status = "failed"
                current.run.error = error
                current.run.pause = None
                await accessor.save(current)
                return
        except Exception:
            log.exception("event=mark_failed_failed run_id=%s", lease.run_id)
        await self.store.runs.release(lease)

    async def _progress(self, event: RunEvent) -> None:
        if event.type not in ("tool_started", "tool_finished", "paused", "completed", "failed"):
            return
        self._trace_tool(event)
        flight = self.in_flight.get(event.run_id)
        run = flight.current() if flight is not None else None
        if run is None:
            run = await self.store.runs.get(event.run_id)
        if run is None:
            return
        await self.show.run_changed(run, "activity")
        if event.type == "tool_finished" and event.detail:
            # A failed tool stays a message of its own (people act on it): the tool, the
            # exception type and the error id of the log line, secrets scrubbed.
            await self.show.say(ToolFailed(event.tool or "", event.detail), run)

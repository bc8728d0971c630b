"""Starting runs and continuing them exactly once, in whichever replica holds the lease."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.agent import (
    Agent,
    Message,
    PendingToolCall,
    Run,
    RunEvent,
    RunResult,
    Tool,
    ToolCall,
)
from bot.agent.scrub import Failure, scrub
from bot.service.api_tool import is_api_run
from bot.service.continuation import decisions_from, render_output
from bot.service.inflight import InFlight
from bot.service.limits import DEFAULT_RATE_LIMIT, RateLimit
from bot.service.policies import Policies
from bot.service.policy import EffectivePolicy, ToolSettings
from bot.service.policy_file import PolicyFile
from bot.service.ports import Presenter
from bot.service.registry import AgentRegistry
from bot.service.streaming import RunCallbacks, TextSink
from store import (
    ApprovalRequestRecord,
    Lease,
    LeaseLostError,
    RequestPolicy,
    RunRecord,
    StartLimit,
    Store,
)

log = logging.getLogger("sayso.service")

QUEUED_KEY = "_sayso_queued"
"""In a handed-off run's saved context while its root message says "queued": the worker that
takes the run removes it (tools never see it) and updates the root message."""
FRESH_KEY = "_sayso_fresh"
"""In a handed-off new run's (or follow-up's) saved context: the worker that takes the run
removes it and streams the run's text, as a front driving the run itself would. A retry, or the
recovery of a run that saved a step since, never streams (its text may have been shown)."""


@dataclass(frozen=True)
class ServiceSettings:
    default_approvers: tuple[str, ...] = ()
    approval_ttl: timedelta = timedelta(hours=24)
    remind_after: timedelta | None = None
    lease_seconds: float = 30.0
    retention: timedelta = timedelta(days=30)
    max_active_runs: int = 200
    """Runs in flight at once per worker (a run awaiting its model or a tool holds one)."""
    cpu_slots: int = 4
    """Runs doing store and Slack work at once (loading, presenting): the CPU-bound part."""
    rate_limit: RateLimit | None = DEFAULT_RATE_LIMIT
    admins: tuple[str, ...] = ()
    """User and group ids who may cancel or retry any run and revoke any standing approval
    (SAYSO_ADMINS)."""
    default_channel: str | None = None  # issue 14: API requests without a channel
    callback_hosts: tuple[str, ...] = ()  # where webhooks may go (empty: anywhere)


def run_context(
    requester: str | None, team_id: str | None, channel_id: str | None, *, follow_up: bool
) -> dict[str, Any]:
    """The context a run's tools receive (`follow_up`: it continues an earlier run's thread)."""
    return {
        "requested_by": requester,
        "team_id": team_id,
        "channel_id": channel_id,
        "follow_up": follow_up,
    }


class Runner:
    """Drives runs: one process at a time per run, fenced by the store's lease."""

    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        presenter: Presenter,
        settings: ServiceSettings,
    ) -> None:
        self.store = store
        self.agents = agents
        self.presenter = presenter
        self.settings = settings
        self._tasks: set[asyncio.Task[Any]] = set()
        # Runs driven at once by this process: more wait their turn (their lease is renewed
        # meanwhile), so acks never queue behind a flood of runs and the pool is not exhausted.
        self._slots = asyncio.Semaphore(settings.max_active_runs)
        self._cpu = asyncio.Semaphore(settings.cpu_slots)
        self._queued: set[str] = set()
        self.policies = Policies(settings.default_approvers, settings.approval_ttl)
        self.in_flight: dict[str, InFlight] = {}
        self.handoff: Callable[[str], None] | None = None
        """Set on a front whose runs are driven by workers: new and ready runs are handed off
        in the store (PostgreSQL NOTIFY wakes remote workers) and this wakes a local one."""

    # -- background work ------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "sayso") -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("event=task_failed task=%s error=%r", task.get_name(), task.exception())

    @property
    def busy(self) -> bool:
        """Is background work (a run, a continuation) going on?"""
        return bool(self._tasks)

    async def idle(self, limit: float = 30.0) -> None:
        """Wait until no background work is left (tests, shutdown)."""
        deadline = asyncio.get_running_loop().time() + limit
        while self._tasks and asyncio.get_running_loop().time() < deadline:
            await asyncio.wait(set(self._tasks), timeout=0.5)

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)

    # -- policy for new approval requests ---------------------------------------------------

    def request_policy(
        self, agent: Agent
    ) -> Callable[[RunResult, PendingToolCall | None], RequestPolicy]:
        def policy(result: RunResult, pending: PendingToolCall | None) -> RequestPolicy:
            tool = agent.tools.get(pending.call.name) if pending else None
            now = datetime.now(UTC)
            if tool is None or pending is None or pending.kind != "approval":
                approvers = (tool.approvers if tool else ()) or agent.approvers
                ttl = self.settings.approval_ttl
                if tool is not None and tool.expires_in is not None:
                    ttl = timedelta(seconds=tool.expires_in)
                return RequestPolicy(
                    approvers=list(approvers or self.settings.default_approvers),
                    expires_at=now + ttl,
                    allow_self_approval=tool.allow_self_approval if tool else True,
                )
            return self.call_policy(agent, tool, pending.call.arguments).request_policy(now)

        return policy

    def call_policy(self, agent: Agent, tool: Tool, arguments: dict[str, Any]) -> EffectivePolicy:
        """The approval policy of one call of `tool` with these arguments."""
        return self.policies.call_policy(agent, tool, arguments)

    def tool_settings(self, agent: Agent, tool: Tool) -> ToolSettings:
        return self.policies.tool_settings(agent, tool)

    def needs_approval(
        self, agent: Agent
    ) -> Callable[[ToolCall, dict[str, Any]], Awaitable[bool]] | None:
        return self.policies.needs_approval(agent)

    @property
    def policy_file(self) -> PolicyFile | None:
        return self.policies.policy_file

    @policy_file.setter
    def policy_file(self, book: PolicyFile | None) -> None:
        self.policies.policy_file = book

    # -- use cases ----------------------------------------------------------------------------

    async def start_run(
        self,
        agent: Agent,
        text: str,
        *,
        requester: str | None,
        team_id: str | None,
        channel_id: str | None,
        thread_ts: str | None = None,
        history: list[Message] | None = None,
        limit: StartLimit | None = None,
    ) -> str:
        """Create the run, post its root message (unless it continues a thread), drive it.

        With `limit`, nothing starts when the requester is at it (`StartLimitReached`)."""
        run_id = uuid.uuid4().hex
        lease = await self.store.create_run(
            limit=limit,
            run_id=run_id,
            agent_id=agent.id,
            requester=requester,
            team_id=team_id,
            channel_id=channel_id,
            thread_ts=thread_ts,
            request_text=text,
        )
        log.info("event=run_created run_id=%s agent=%s requester=%s", run_id, agent.id, requester)
        await self.store.audit(actor=requester, action="start", run_id=run_id, outcome="ok")
        conversation = [
            m for m in [*(history or []), Message(role="user", content=text)] if m.role != "system"
        ]
        context = run_context(requester, team_id, channel_id, follow_up=thread_ts is not None)
        queued_ahead = 0
        if self.handoff is not None and thread_ts is None:
            queued_ahead = await self.store.count_ready()
            if queued_ahead:  # the worker that takes it shows it running (see _continue)
                context[QUEUED_KEY] = True
        run: RunRecord | None = None
        if thread_ts is None and channel_id is not None:
            run = await self.store.get_run(run_id)
            assert run is not None
            try:
                ts = await self.presenter.post_root(run, queued_ahead=queued_ahead)
            except Exception as exc:
                # The person is told it did not start: save it as failed, or the sweep would
                # take the unsaved run for one that died early and run it after all.
                error = f"Could not post the run's first message in Slack: {scrub(str(exc))}"
                failed = Run(
                    id=run_id,
                    agent_id=agent.id,
                    model=agent.model,
                    status="failed",
                    error=error,
                    messages=conversation,
                    context=context,
                )
                try:
                    await self.store.accessor(lease, self.request_policy(agent)).save(
                        RunResult(run=failed)
                    )
                except Exception:
                    log.exception("event=mark_failed_failed run_id=%s", run_id)
                    await self.store.release(lease)
                raise
            await self.store.set_thread(run_id, channel_id, ts)
            run = replace(run, channel_id=channel_id, thread_ts=ts)
        if self.handoff is not None:
            await self._hand_off_new(lease, agent, conversation, context)
            return run_id

        async def begin(accessor: Any, on_event: Any) -> RunResult:
            return await agent.run(
                conversation,
                context=context,
                state=accessor,
                run_id=run_id,
                on_event=on_event,
                require_approval=self.needs_approval(agent),
            )

        self.spawn(self._drive(lease, agent, begin, stream=True, run=run), name=f"run:{run_id}")
        return run_id

    async def _hand_off_new(
        self, lease: Lease, agent: Agent, conversation: list[Message], context: dict[str, Any]
    ) -> None:
        """Save the run as `Agent.run` would before its first model call, then hand it to the
        workers: whichever claims it continues it from that state (`Agent.recover`)."""
        run = Run(
            id=lease.run_id,
            agent_id=agent.id,
            model=agent.model,
            messages=conversation,
            max_steps=agent.max_steps,
            context={**context, FRESH_KEY: True},
        )
        await self.store.accessor(lease, self.request_policy(agent)).save(RunResult(run=run))
        await self.store.hand_off(lease)
        self._wake(lease.run_id)

    async def _hand_off_retry(self, run_id: str) -> bool:
        """Save a failed run as running again (as `Agent.continue_run(retry=True)` does before
        driving it) and hand it to the workers, which continue it with `Agent.recover`."""
        lease = await self.store.claim_run(run_id)
        if lease is None:
            return False
        result = await self.store.load_result(run_id)
        agent = self.agents.get(result.run.agent_id) if result else None
        if result is None or agent is None or result.run.status != "failed":
            await self.store.release(lease)
            return False
        result.run.status = "running"
        result.run.error = None
        result.run.pause = None
        await self.store.accessor(lease, self.request_policy(agent)).save(result)
        await self.store.hand_off(lease)
        self._wake(run_id)
        return True

    def _wake(self, run_id: str) -> None:
        if self.handoff is not None:
            self.handoff(run_id)

    async def continue_run(self, run_id: str, *, retry: bool = False) -> bool:
        """Continue the run in the background if nobody holds it.

        On a front whose runs are driven by workers (`handoff` set), the workers are woken
        instead; a retry is saved as running again and handed off (agents' clients are bound
        to the worker's event loop: a front never drives a run).

        When this process is busy (every slot taken), the run waits in a queue WITHOUT a
        lease: it stays visible as ready to every replica's sweep, and is claimed only when a
        slot frees. Returns False when the run is held by someone else (or already queued)."""
        if self.handoff is not None:
            if retry:
                return await self._hand_off_retry(run_id)
            await self.store.notify_ready(run_id)
            self._wake(run_id)
            return True
        if run_id in self._queued:
            return False
        if self._slots.locked() and not retry:
            self._queued.add(run_id)
            self.spawn(self._continue_when_free(run_id), name=f"queued:{run_id}")
            return True
        lease = await self.store.claim_run(run_id)
        if lease is None:
            return False
        log.info("event=run_claimed run_id=%s owner=%s", run_id, lease.owner)
        self.spawn(self._continue(lease, retry), name=f"continue:{run_id}")
        return True

    def drives_now(self) -> bool:
        """Would a run that became ready be claimed and driven by this process at once?
        (Not on a front whose runs go to workers, nor with every slot taken: such a run
        waits unleased, visible to every replica.)"""
        return self.handoff is None and not self._slots.locked()

    def drive_claimed(self, lease: Lease) -> asyncio.Task[Any]:
        """Continue a run this process has just claimed (a worker's batch claim)."""
        log.info("event=run_claimed run_id=%s owner=%s", lease.run_id, lease.owner)
        return self.spawn(self._continue(lease, False), name=f"continue:{lease.run_id}")

    async def _continue_when_free(self, run_id: str) -> None:
        try:
            async with self._slots:
                self._queued.discard(run_id)
                lease = await self.store.claim_run(run_id)
                if lease is None:
                    return  # another replica took it meanwhile
                log.info("event=run_claimed run_id=%s owner=%s queued=1", run_id, lease.owner)
                await self._continue(lease, False, slot_held=True)
        finally:
            self._queued.discard(run_id)

    async def _continue(self, lease: Lease, retry: bool, slot_held: bool = False) -> None:
        async with self._cpu:
            # one read: the row, its state and (waiting for people) its pause's requests
            run, requests = await self.store.run_and_current_requests(lease.run_id)
            result = RunResult.model_validate_json(run.state) if run and run.state else None
        if run is not None and is_api_run(run.agent_id):
            # An API request's continuation is its caller's: sayso never drives it.
            await self.store.release(lease)
            return
        agent = self.agents.get(run.agent_id) if run else None
        if run is None or agent is None:
            log.error("event=continue_skipped run_id=%s reason=unknown_run_or_agent", lease.run_id)
            await self.store.release(lease)
            return
        if result is None:  # died before its first save: nothing ran, start it again
            log.warning("event=run_restarted run_id=%s reason=no_saved_state", run.id)
            context = run_context(run.requester, run.team_id, run.channel_id, follow_up=False)

            async def restart(acc: Any, ev: Any) -> RunResult:
                return await agent.run(
                    run.request_text, context=context, state=acc, run_id=run.id, on_event=ev
                )

            await self._drive(lease, agent, restart, slot_held=slot_held, run=run)
            return
        status = result.run.status
        fn: Callable[[Any, Any], Awaitable[RunResult]]
        if retry and status == "failed":

            async def fn(acc: Any, ev: Any) -> RunResult:
                return await agent.continue_run(
                    run=result,
                    state=acc,
                    retry=True,
                    on_event=ev,
                    require_approval=self.needs_approval(agent),
                )

        elif status == "waiting_for_human" and result.run.pause is not None:
            if not requests or any(r.status == "pending" for r in requests):
                await self.store.release(lease)
                return
            kwargs = decisions_from(requests)

            async def fn(acc: Any, ev: Any) -> RunResult:
                return await agent.continue_run(
                    run=result,
                    state=acc,
                    on_event=ev,
                    require_approval=self.needs_approval(agent),
                    **kwargs,
                )

            await self._drive(lease, agent, fn, slot_held=slot_held, stream=True, run=run)
            return

        elif status == "running":
            if result.run.context.pop(QUEUED_KEY, None) and not result.run.context.get("follow_up"):
                await self.safely(self.presenter.update_root(run))  # queued -> running
            fresh = bool(result.run.context.pop(FRESH_KEY, None))

            async def fn(acc: Any, ev: Any) -> RunResult:
                return await agent.recover(run=result, state=acc, on_event=ev)

            await self._drive(lease, agent, fn, slot_held=slot_held, stream=fresh)
            return

        else:
            await self.store.release(lease)
            return
        await self._drive(lease, agent, fn, slot_held=slot_held, run=run)

    async def _renew(self, lease: Lease) -> None:
        """Renew until cancelled. A failed renewal is no reason to stop: a save may have
        advanced the version while it was in flight, or the database blipped; a lease truly
        taken over is fenced anyway (the next save raises LeaseLostError)."""
        interval = max(0.05, self.settings.lease_seconds / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                renewed = await self.store.renew(lease)
            except Exception as exc:
                log.warning("event=lease_renew_failed run_id=%s error=%r", lease.run_id, exc)
                continue
            if not renewed:
                log.warning("event=lease_not_renewed run_id=%s owner=%s", lease.run_id, lease.owner)

    async def _drive(
        self,
        lease: Lease,
        agent: Agent,
        fn: Callable[[Any, Any], Awaitable[RunResult]],
        *,
        slot_held: bool = False,
        stream: bool = False,
        run: RunRecord | None = None,
    ) -> None:
        """Drive a run; `stream`: its text streams to the thread (never on a retry or a
        recovery, which could show text a second time). `run`: its row, read just before
        (read here otherwise); while driving, the row is known from this process's saves."""
        if run is None:
            run = await self.store.get_run(lease.run_id)
        on_event = RunCallbacks(self._progress, self._text_sink(run, stream))
        flight = InFlight(lease, self.store.accessor(lease, self.request_policy(agent)), run)
        accessor = flight.accessor
        renewer = asyncio.create_task(self._renew(lease))
        task = asyncio.current_task()
        if task is not None:
            flight.task = task
        self.in_flight[lease.run_id] = flight

        try:
            if slot_held:
                result = await fn(accessor, on_event)
            else:
                async with self._slots:
                    result = await fn(accessor, on_event)
            flight.phase = "presenting"
        except LeaseLostError:
            log.warning("event=write_fenced run_id=%s: another replica holds the run", lease.run_id)
            self._forget(flight)
            return
        except asyncio.CancelledError:
            self._forget(flight)
            raise
        except Exception as exc:
            flight.phase = "presenting"
            failure = Failure.of(exc)
            log.exception(
                "event=run_crashed run_id=%s error_id=%s error_type=%s",
                lease.run_id,
                failure.error_id,
                failure.error_type,
            )
            error = failure.shown
            try:
                await self._mark_failed(accessor, lease, error)
                run = await self.store.get_run(lease.run_id)
                if run is not None:
                    await self.safely(self.presenter.post_failure(run, error))
            finally:
                self._forget(flight)
            return
        finally:
            renewer.cancel()
        try:
            await self.present(result, flight.current())
        finally:
            self._forget(flight)

    def _forget(self, flight: InFlight) -> None:
        if self.in_flight.get(flight.lease.run_id) is flight:
            del self.in_flight[flight.lease.run_id]

    async def drain(self, grace: float) -> None:
        """Graceful stop: let runs finish for up to `grace` seconds; then hand back the runs
        not inside a tool body (another worker continues them at once, from their last save,
        nothing shown as interrupted). A run inside a tool body is left to its lease: if it
        does not finish, it is recovered elsewhere as interrupted, as after a crash."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self._tasks and loop.time() < deadline:
            await asyncio.wait(
                set(self._tasks), timeout=min(0.2, max(0.01, deadline - loop.time()))
            )
        for flight in list(self.in_flight.values()):
            if flight.phase == "driving" and not flight.in_tool_body and flight.task is not None:
                flight.task.cancel()
                await asyncio.gather(flight.task, return_exceptions=True)
                try:
                    await self.store.hand_off(flight.lease)
                    log.info("event=run_handed_back run_id=%s", flight.lease.run_id)
                except Exception:
                    log.exception("event=hand_back_failed run_id=%s", flight.lease.run_id)

    def _text_sink(self, run: RunRecord | None, stream: bool) -> TextSink | None:
        """Where the run's text streams (None: shown only when the answer is complete)."""
        if not stream or run is None:
            return None
        try:
            return self.presenter.text_sink(run)
        except Exception:
            log.exception("event=text_sink_failed run_id=%s", run.id)
            return None

    async def _mark_failed(self, accessor: Any, lease: Lease, error: str) -> None:
        """Save the run as failed (so sweeps stop retrying it); `retry` continues it later."""
        try:
            current = await self.store.load_result(lease.run_id)
            if current is not None and current.run.status not in ("completed", "cancelled"):
                current.run.status = "failed"
                current.run.error = error
                current.run.pause = None
                await accessor.save(current)
                return
        except Exception:
            log.exception("event=mark_failed_failed run_id=%s", lease.run_id)
        await self.store.release(lease)

    async def _progress(self, event: RunEvent) -> None:
        if event.type not in ("tool_started", "tool_finished", "paused", "completed", "failed"):
            return
        flight = self.in_flight.get(event.run_id)
        run = flight.current() if flight is not None else None
        if run is None:
            run = await self.store.get_run(event.run_id)
        if run is None:
            return
        await self.presenter.show_activity(run)
        if event.type == "tool_finished" and event.detail:
            # A failed tool stays a message of its own (people act on it): the tool, the
            # exception type and the error id of the log line, secrets scrubbed.
            text = f":warning: `{event.tool}` failed: {event.detail}"
            await self.presenter.post_progress(run, text)

    async def safely(self, aw: Awaitable[Any]) -> None:
        try:
            await aw
        except Exception:
            log.exception("event=presenter_failed")

    async def present(self, result: RunResult, run: RunRecord | None = None) -> None:
        """Show where a run stopped: new cards, the final answer, or the failure (`run`: its
        row as saved, when the caller knows it)."""
        async with self._cpu:
            await self._present(result, run)

    async def _present(self, result: RunResult, run: RunRecord | None) -> None:
        if run is None or run.id != result.run.id:
            run = await self.store.get_run(result.run.id)
        if run is None:
            return
        status = result.run.status
        if status == "waiting_for_human" and result.run.pause is not None:
            await self.post_cards(run.id, run)
        elif status == "completed":
            last = result.run.messages[-1] if result.run.messages else None
            cut = bool(last and last.truncated)
            await self.safely(self.presenter.post_answer(run, render_output(result.output), cut))
        elif status == "failed":
            await self.safely(self.presenter.post_failure(run, result.run.error or "unknown error"))
        after: list[Awaitable[Any]] = []  # independent Slack calls: made concurrently
        if not result.run.context.get("follow_up"):
            after.append(self.safely(self.presenter.update_root(run)))
        if run.requester:
            after.append(self.safely(self.presenter.refresh_home(run.requester)))
        await asyncio.gather(*after)

    async def repost_cards(self, run_id: str) -> None:
        """Post cards that a dead process never posted; the lease makes one replica do it."""
        lease = await self.store.claim_run(run_id)
        if lease is None:
            return
        try:
            log.warning("event=cards_missing run_id=%s: posting them", run_id)
            await self.post_cards(run_id)
        finally:
            await self.store.release(lease)

    async def _under_grant(self, run: RunRecord, request: ApprovalRequestRecord) -> bool:
        """Approve a call a standing approval covers (same tool, same thread, one approval
        suffices), post one line saying so, continue the run; True when it did."""
        if request.kind != "approval" or request.min_approvals > 1:
            return False
        if not run.channel_id or not run.thread_ts:
            return False
        grant = await self.store.live_grant(
            agent_id=run.agent_id,
            tool_name=request.tool_name,
            channel_id=run.channel_id,
            thread_ts=run.thread_ts,
        )
        if grant is None:
            return False
        result = await self.store.decide(
            request.id,
            actor=f"grant:{grant.id}",
            status="approved",
            reason=f"standing approval given by {grant.granted_by}",
        )
        if not result.won:
            return result.request is not None and result.request.status != "pending"
        log.info(
            "event=auto_approved run_id=%s call_id=%s grant_id=%s granted_by=%s",
            run.id,
            request.call_id,
            grant.id,
            grant.granted_by,
        )
        await self.safely(self.presenter.post_auto_approved(run, request, grant))
        if result.run_ready:
            await self.continue_run(run.id)
        return True

    async def post_cards(self, run_id: str, run: RunRecord | None = None) -> None:
        if run is None:
            run = await self.store.get_run(run_id)
        if run is None:
            return
        for request in await self.store.current_requests(run_id):
            if request.message_ts is not None or request.status != "pending":
                continue
            if await self._under_grant(run, request):
                continue
            channel = self.presenter.card_channel(run, request)
            try:
                ts = await self.presenter.post_card(run, request)
            except Exception:
                log.exception("event=card_post_failed run_id=%s request_id=%s", run_id, request.id)
                continue
            if ts and channel:
                await self.store.set_request_message(request.id, channel, ts)

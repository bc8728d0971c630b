"""Starting runs and continuing them exactly once, in whichever replica holds the lease."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.agent import Agent, Message, PendingToolCall, Run, RunEvent, RunResult
from bot.service.api_tool import is_api_run
from bot.service.continuation import decisions_from, render_output
from bot.service.ports import Presenter
from bot.service.registry import AgentRegistry
from store import Lease, LeaseLostError, RequestPolicy, Store

log = logging.getLogger("sayso.service")


@dataclass(frozen=True)
class ServiceSettings:
    default_approvers: tuple[str, ...] = ()
    approval_ttl: timedelta = timedelta(hours=24)
    remind_after: timedelta | None = None
    lease_seconds: float = 30.0
    retention: timedelta = timedelta(days=30)
    max_active_runs: int = 8
    default_channel: str | None = None  # issue 14: API requests without a channel


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
        self._queued: set[str] = set()

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
            approvers = (
                (tool.approvers if tool else ())
                or agent.approvers
                or self.settings.default_approvers
            )
            ttl = self.settings.approval_ttl
            if tool is not None and tool.expires_in is not None:
                ttl = timedelta(seconds=tool.expires_in)
            return RequestPolicy(
                approvers=list(approvers),
                expires_at=datetime.now(UTC) + ttl,
                allow_self_approval=tool.allow_self_approval if tool else True,
            )

        return policy

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
    ) -> str:
        """Create the run, post its root message (unless it continues a thread), drive it."""
        run_id = uuid.uuid4().hex
        lease = await self.store.create_run(
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
        conversation: list[Message] = [*(history or []), Message(role="user", content=text)]
        context = run_context(requester, team_id, channel_id, follow_up=thread_ts is not None)
        if thread_ts is None and channel_id is not None:
            run = await self.store.get_run(run_id)
            assert run is not None
            try:
                ts = await self.presenter.post_root(run)
            except Exception as exc:
                # The person is told it did not start: save it as failed, or the sweep would
                # take the unsaved run for one that died early and run it after all.
                error = f"Could not post the run's first message in Slack: {exc}"
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

        async def begin(accessor: Any, on_event: Any) -> RunResult:
            return await agent.run(
                conversation, context=context, state=accessor, run_id=run_id, on_event=on_event
            )

        self.spawn(self._drive(lease, agent, begin), name=f"run:{run_id}")
        return run_id

    async def continue_run(self, run_id: str, *, retry: bool = False) -> bool:
        """Continue the run in the background if nobody holds it.

        When this process is busy (every slot taken), the run waits in a queue WITHOUT a
        lease: it stays visible as ready to every replica's sweep, and is claimed only when a
        slot frees. Returns False when the run is held by someone else (or already queued)."""
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
        result = await self.store.load_result(lease.run_id)
        run = await self.store.get_run(lease.run_id)
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

            await self._drive(lease, agent, restart, slot_held=slot_held)
            return
        status = result.run.status
        fn: Callable[[Any, Any], Awaitable[RunResult]]
        if retry and status == "failed":

            async def fn(acc: Any, ev: Any) -> RunResult:
                return await agent.continue_run(run=result, state=acc, retry=True, on_event=ev)

        elif status == "waiting_for_human" and result.run.pause is not None:
            requests = await self.store.current_requests(lease.run_id)
            if not requests or any(r.status == "pending" for r in requests):
                await self.store.release(lease)
                return
            kwargs = decisions_from(requests)

            async def fn(acc: Any, ev: Any) -> RunResult:
                return await agent.continue_run(run=result, state=acc, on_event=ev, **kwargs)

        elif status == "running":

            async def fn(acc: Any, ev: Any) -> RunResult:
                return await agent.recover(run=result, state=acc, on_event=ev)

        else:
            await self.store.release(lease)
            return
        await self._drive(lease, agent, fn, slot_held=slot_held)

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
    ) -> None:
        accessor = self.store.accessor(lease, self.request_policy(agent))
        renewer = asyncio.create_task(self._renew(lease))

        async def on_event(event: RunEvent) -> None:
            await self._progress(event)

        try:
            if slot_held:
                result = await fn(accessor, on_event)
            else:
                async with self._slots:
                    result = await fn(accessor, on_event)
        except LeaseLostError:
            log.warning("event=write_fenced run_id=%s: another replica holds the run", lease.run_id)
            return
        except Exception as exc:
            log.exception("event=run_crashed run_id=%s", lease.run_id)
            error = f"{type(exc).__name__}: {exc}"
            await self._mark_failed(accessor, lease, error)
            run = await self.store.get_run(lease.run_id)
            if run is not None:
                await self.safely(self.presenter.post_failure(run, error))
            return
        finally:
            renewer.cancel()
        await self.present(result)

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
        if event.type not in ("tool_started", "tool_finished"):
            return
        run = await self.store.get_run(event.run_id)
        if run is None:
            return
        if event.type == "tool_started":
            await self.presenter.post_progress(run, f":gear: Running `{event.tool}`…")
        elif event.detail:
            await self.presenter.post_progress(
                run, f":warning: `{event.tool}` failed: {event.detail}"
            )

    async def safely(self, aw: Awaitable[Any]) -> None:
        try:
            await aw
        except Exception:
            log.exception("event=presenter_failed")

    async def present(self, result: RunResult) -> None:
        """Show where a run stopped: new cards, the final answer, or the failure."""
        run = await self.store.get_run(result.run.id)
        if run is None:
            return
        status = result.run.status
        if status == "waiting_for_human" and result.run.pause is not None:
            await self.post_cards(run.id)
        elif status == "completed":
            await self.safely(self.presenter.post_answer(run, render_output(result.output)))
        elif status == "failed":
            await self.safely(self.presenter.post_failure(run, result.run.error or "unknown error"))
        if not result.run.context.get("follow_up"):
            await self.safely(self.presenter.update_root(run))
        if run.requester:
            await self.safely(self.presenter.refresh_home(run.requester))

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

    async def post_cards(self, run_id: str) -> None:
        run = await self.store.get_run(run_id)
        if run is None:
            return
        for request in await self.store.current_requests(run_id):
            if request.message_ts is not None or request.status != "pending":
                continue
            try:
                ts = await self.presenter.post_card(run, request)
            except Exception:
                log.exception("event=card_post_failed run_id=%s request_id=%s", run_id, request.id)
                continue
            if ts and run.channel_id:
                await self.store.set_request_message(request.id, run.channel_id, ts)

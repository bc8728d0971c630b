"""Starting a run: create it, post its root message (unless it continues a thread), then drive
it here or hand it to the workers."""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import Any

from bot.agent import Agent, Message, Run, RunResult
from bot.agent.scrub import scrub
from bot.service.policy.effective import Policies
from bot.service.presenting import SafePresenter
from bot.service.runs.drive import RunDriver
from bot.service.runs.handoff import QUEUED_KEY, HandOff
from store import Lease, RunRecord, StartLimit, Store

log = logging.getLogger("sayso.service")


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


class RunStarter:
    def __init__(
        self,
        store: Store,
        policies: Policies,
        show: SafePresenter,
        driver: RunDriver,
        handoff: HandOff,
    ) -> None:
        self.store = store
        self.policies = policies
        self.show = show
        self.driver = driver
        self.handoff = handoff

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
        run_id: str | None = None,
    ) -> str:
        """Create the run, post its root message (unless it continues a thread), drive it.

        With `limit`, nothing starts when the requester is at it (`StartLimitReached`).
        `run_id`: the new run's id (derived from a recorded interaction), else a fresh one."""
        run_id = run_id or uuid.uuid4().hex
        lease = await self.store.runs.create(
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
        await self.store.audit.record(actor=requester, action="start", run_id=run_id, outcome="ok")
        conversation = [
            m for m in [*(history or []), Message(role="user", content=text)] if m.role != "system"
        ]
        context = run_context(requester, team_id, channel_id, follow_up=thread_ts is not None)
        queued_ahead = await self._queued_ahead(context, follow_up=thread_ts is not None)
        run: RunRecord | None = None
        if thread_ts is None and channel_id is not None:
            run = await self._open_thread(lease, agent, conversation, context, queued_ahead)
        if self.handoff.active:
            await self.handoff.new(lease, agent, conversation, context)
            return run_id

        async def begin(accessor: Any, on_event: Any) -> RunResult:
            return await agent.run(
                conversation,
                context=context,
                state=accessor,
                run_id=run_id,
                on_event=on_event,
                require_approval=self.policies.needs_approval(agent),
            )

        self.driver.spawn_drive(lease, agent, begin, run)
        return run_id

    async def _queued_ahead(self, context: dict[str, Any], *, follow_up: bool) -> int:
        """How many runs wait for a worker ahead of a new one (it is marked queued if any)."""
        if not self.handoff.active or follow_up:
            return 0
        queued_ahead = await self.store.runs.count_ready()
        if queued_ahead:  # the worker that takes it shows it running (see drive.py)
            context[QUEUED_KEY] = True
        return queued_ahead

    async def _open_thread(
        self,
        lease: Lease,
        agent: Agent,
        conversation: list[Message],
        context: dict[str, Any],
        queued_ahead: int,
    ) -> RunRecord:
        """Post the root message; the run's thread is its ts. When Slack refuses, the run is
        saved as failed and the error raised (the person is told it did not start)."""
        run = await self.store.runs.get(lease.run_id)
        assert run is not None and run.channel_id is not None
        try:
            async with self.driver.holding(lease):  # it may wait for the channel's pace
                ts = await self.show.open_thread(run, queued_ahead=queued_ahead)
        except Exception as exc:
            # Saved as failed, or the sweep would take the unsaved run for one that died
            # early and run it after all.
            error = f"Could not post the run's first message in Slack: {scrub(str(exc))}"
            failed = Run(
                id=lease.run_id,
                agent_id=agent.id,
                model=agent.model,
                status="failed",
                error=error,
                messages=conversation,
                context=context,
            )
            try:
                await self.store.runs.accessor(lease, self.policies.request_policy(agent)).save(
                    RunResult(run=failed)
                )
            except Exception:
                log.exception("event=mark_failed_failed run_id=%s", lease.run_id)
                await self.store.runs.release(lease)
            raise
        await self.store.runs.set_thread(run.id, run.channel_id, ts)
        return replace(run, thread_ts=ts)

"""Handing runs to workers: on a front whose runs are driven by workers, new and ready runs are
saved ready in the store (PostgreSQL NOTIFY wakes remote workers) and `RunHandedOff` wakes a
local one. A front never drives a run: agents' clients are bound to the worker's event loop."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from bot.agent import Agent, Message, Run, RunResult
from bot.service.events import Events, RunHandedOff
from bot.service.policy.effective import Policies
from bot.service.registry import AgentRegistry
from store import Lease, Store

log = logging.getLogger("sayso.service")

QUEUED_KEY = "_sayso_queued"
"""In a handed-off run's saved context while its root message says "queued": the worker that
takes the run removes it (tools never see it) and updates the root message."""
FRESH_KEY = "_sayso_fresh"
"""In a handed-off new run's (or follow-up's) saved context: the worker that takes the run
removes it and streams the run's text, as a front driving the run itself would. A retry, or the
recovery of a run that saved a step since, never streams (its text may have been shown)."""


class LocalWorker(Protocol):
    """The worker of this process (`sayso run`), which can take a run claimed for it."""

    def has_room(self) -> bool:
        """Would `take` accept a run now?"""
        ...

    def take(self, lease: Lease) -> bool:
        """Drive this claimed run (on its own event loop); False: no room, or not running."""
        ...


class HandOff:
    def __init__(
        self, store: Store, agents: AgentRegistry, policies: Policies, events: Events
    ) -> None:
        self.store = store
        self.agents = agents
        self.policies = policies
        self.events = events
        self.active = False
        """True on a front whose runs are driven by workers."""
        self.local: LocalWorker | None = None
        """The process's own worker, if any: runs claimed here go to it without a round of
        release, NOTIFY and claim."""

    async def wake(self, run_id: str) -> None:
        await self.events.emit(RunHandedOff(run_id))

    def local_takes_now(self) -> bool:
        """Would a run claimed now (with the decision that made it ready) be driven by this
        process's own worker at once?"""
        return self.local is not None and self.local.has_room()

    async def give(self, lease: Lease) -> None:
        """Hand a run this front holds to its own worker, or, when that has no room, release
        it ready for any worker (PostgreSQL NOTIFY wakes them)."""
        if self.local is not None and self.local.take(lease):
            log.info("event=run_given_to_local_worker run_id=%s", lease.run_id)
            return
        await self.store.runs.hand_off(lease)
        await self.wake(lease.run_id)

    async def new(
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
        await self.store.runs.accessor(lease, self.policies.request_policy(agent)).save(
            RunResult(run=run)
        )
        await self.give(lease)

    async def retry(self, run_id: str) -> bool:
        """Save a failed run as running again (as `Agent.continue_run(retry=True)` does before
        driving it) and hand it to the workers, which continue it with `Agent.recover`."""
        lease = await self.store.runs.claim(run_id)
        if lease is None:
            return False
        result = await self.store.runs.load_result(run_id)
        agent = self.agents.get(result.run.agent_id) if result else None
        if result is None or agent is None or result.run.status != "failed":
            await self.store.runs.release(lease)
            return False
        result.run.status = "running"
        result.run.error = None
        result.run.pause = None
        await self.store.runs.accessor(lease, self.policies.request_policy(agent)).save(result)
        await self.store.runs.hand_off(lease)
        await self.wake(run_id)
        return True

    async def ready(self, run_id: str) -> None:
        """A run became ready (a decision): tell the workers."""
        await self.store.runs.notify_ready(run_id)
        await self.wake(run_id)

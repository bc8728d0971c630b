"""Run control: the kill switch (cancel) and retry, and who may use them."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.agent.vocabulary import ENDED_RUN_STATUSES
from bot.service.outcome import Actor, Outcome
from bot.service.permissions import may_control_run
from bot.service.ports import Directory
from bot.service.presenting import SafePresenter
from bot.service.registry import AgentRegistry
from bot.service.runs.drive import RunDriver
from bot.service.runs.present import canceller, show_cancelled
from bot.service.settings import ServiceSettings, Workspace
from bot.service.start_gate import StartGate
from store import ApprovalRequestRecord, Store

log = logging.getLogger("sayso.service")

DENIED = (
    "Only the person who started this run, the approvers of its open requests or an admin "
    "may cancel it."
)
CANCELLED = "The run is cancelled."
RETRY_DENIED = "Only the person who started this run, its approvers or an admin may retry it."


def approvals_of(
    requests: Sequence[ApprovalRequestRecord], fallback: Sequence[str], channel_id: str | None
) -> list[tuple[Sequence[str], str | None]]:
    """Who may decide these requests (each: its approvers and channel); with none, the
    fallback approvers (the agent's)."""
    found: list[tuple[Sequence[str], str | None]] = [
        (() if r.policy.anyone else r.policy.approvers, r.state.channel_id or channel_id)
        for r in requests
    ]
    return found or [(tuple(fallback), channel_id)]


class RunControl:
    """Cancels and retries runs for the people allowed to (see `may_control_run`)."""

    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        directory: Directory,
        show: SafePresenter,
        driver: RunDriver,
        gate: StartGate,
        workspace: Workspace,
        settings: ServiceSettings,
    ) -> None:
        self.store = store
        self.agents = agents
        self.directory = directory
        self.show = show
        self.driver = driver
        self.gate = gate
        self.workspace = workspace
        self.admins = tuple(settings.admins)
        self.default_approvers = settings.default_approvers

    def _agent_approvers(self, agent_id: str) -> tuple[str, ...]:
        agent = self.agents.get(agent_id)
        return tuple((agent.approvers if agent else ()) or self.default_approvers)

    async def cancel(self, run_id: str, actor: Actor) -> Outcome:
        """The kill switch: end the run before its next tool and close its open requests (its
        requester, the approvers of its open requests and admins may)."""
        run = await self.store.runs.get(run_id)
        if run is None:
            return Outcome("not_found", "This run no longer exists.")
        if run.status == "cancelled" and await canceller(self.store, run_id) == actor.user_id:
            return Outcome("cancelled", CANCELLED, run=run)  # a replayed (or second) click
        if run.status in ENDED_RUN_STATUSES:
            return Outcome(
                "invalid", f"This run is {run.status}; there is nothing to cancel.", run=run
            )
        pending = [r for r in await self.store.requests.current(run_id) if r.pending]
        fallback = self._agent_approvers(run.agent_id)
        allowed = await may_control_run(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=self.workspace.team_id,  # this workspace's, never a run's
            requester=run.requester,
            admins=self.admins,
            approvals=approvals_of(pending, fallback, run.channel_id) if pending else [],
        )
        if not allowed:
            await self.store.audit.record(
                actor=actor.user_id, action="cancel", run_id=run_id, outcome="denied"
            )
            log.info("event=cancel_denied run_id=%s actor=%s", run_id, actor.user_id)
            return Outcome("denied", DENIED, run=run)
        done = await self.store.runs.cancel(run_id, actor=actor.user_id)
        if not done.cancelled:
            status = done.run.status if done.run else "gone"
            return Outcome("lost", f"This run already ended ({status}).", run=done.run)
        log.info("event=run_cancelled run_id=%s actor=%s", run_id, actor.user_id)
        if await show_cancelled(self.show, done, actor.user_id) and done.run is not None:
            await self.store.runs.mark_shown(run_id, done.run.version)
        return Outcome("cancelled", CANCELLED, run=done.run)

    async def retry(self, run_id: str, actor: Actor) -> Outcome:
        """Run a failed run again (its requester, its approvers or an admin may)."""
        run = await self.store.runs.get(run_id)
        if run is None:
            return Outcome("not_found", "This run no longer exists.")
        if run.status != "failed":
            status = run.status.replace("_", " ")
            return Outcome("invalid", f"This run is {status}; there is nothing to retry.", run=run)
        allowed = await may_control_run(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=self.workspace.team_id,
            requester=run.requester,
            admins=self.admins,
            approvals=approvals_of(
                await self.store.requests.current(run_id),
                self._agent_approvers(run.agent_id),
                run.channel_id,
            ),
        )
        if not allowed:
            return Outcome("denied", RETRY_DENIED, run=run)
        limited = await self.gate.check_rate(actor.user_id, run_id)
        if limited is not None:
            return limited
        if not await self.driver.continue_run(run_id, retry=True):
            return Outcome("lost", "Someone is already retrying this run.", run=run)
        await self.store.audit.record(
            actor=actor.user_id, action="retry", run_id=run_id, outcome="ok"
        )
        return Outcome("retried", "The run starts again.", run=run)

"""Standing approvals: "Approve, and allow this tool in this thread for a while".

A grant is made with an approval that won (never for calls needing more than one approval);
later calls of that tool in the same thread (channel and thread ts) are approved on the
grant's behalf, each posted as one line and audited; the granter, an admin or one of the
tool's approvers may revoke it; it ends on time by itself.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.service.outcome import Actor, Outcome
from bot.service.permissions import may_decide
from bot.service.ports import Directory, Presenter
from bot.service.registry import AgentRegistry
from bot.service.runner import Runner
from store import ApprovalRequestRecord, GrantRecord, RunRecord, Store

log = logging.getLogger("sayso.service")


class Grants:
    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        directory: Directory,
        presenter: Presenter,
        runner: Runner,
        admins: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.agents = agents
        self.directory = directory
        self.presenter = presenter
        self.runner = runner
        self.admins = admins

    async def give(self, request: ApprovalRequestRecord, run: RunRecord, actor: Actor) -> None:
        """After `actor` approved `request` with "and allow in this thread": record the grant
        and post it (with its Revoke button) in the thread."""
        seconds = request.standing_seconds
        if not seconds or request.min_approvals > 1 or not run.channel_id or not run.thread_ts:
            return
        grant = await self.store.add_grant(
            agent_id=run.agent_id,
            tool_name=request.tool_name,
            channel_id=run.channel_id,
            thread_ts=run.thread_ts,
            granted_by=actor.user_id,
            lasts=timedelta(seconds=seconds),
            request_id=request.id,
            run_id=run.id,
        )
        log.info(
            "event=grant_given run_id=%s tool=%s by=%s seconds=%d",
            run.id,
            request.tool_name,
            actor.user_id,
            seconds,
        )
        try:
            ts = await self.presenter.post_grant(run, grant)
        except Exception:
            log.exception("event=grant_post_failed grant_id=%s", grant.id)
            return
        if ts:
            await self.store.set_grant_message(grant.id, ts)

    async def revoke(self, grant_id: str, actor: Actor) -> Outcome:
        grant = await self.store.get_grant(grant_id)
        if grant is None:
            return Outcome("not_found", "This standing approval no longer exists.")
        if not await self._may_revoke(grant, actor):
            message = "Only the person who gave it, an admin or the tool's approvers may revoke it."
            return Outcome("denied", message)
        revoked, now = await self.store.revoke_grant(grant_id, actor.user_id)
        if not revoked or now is None:
            return Outcome("lost", "This standing approval was already revoked.")
        log.info("event=grant_revoked grant_id=%s by=%s", grant_id, actor.user_id)
        await self.runner.safely(self.presenter.update_grant(now))
        return Outcome("decided", f"You revoked the standing approval for `{now.tool_name}`.")

    async def _may_revoke(self, grant: GrantRecord, actor: Actor) -> bool:
        if actor.user_id == grant.granted_by or actor.user_id in self.admins:
            return True
        agent = self.agents.get(grant.agent_id)
        tool = agent.tools.get(grant.tool_name) if agent else None
        if agent is None or tool is None:
            return False
        approvers = self.runner.tool_settings(agent, tool).approvers or agent.approvers
        verdict = await may_decide(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=None,
            approvers=tuple(approvers or self.runner.settings.default_approvers),
            requester=None,
            allow_self_approval=True,
        )
        return verdict.allowed

"""Standing approvals: "Approve, and allow this tool in this thread for a while".

A standing approval is given with an approval that won (never for calls needing more than one
approval or a reason). A later call of that tool in the same thread (channel and thread ts) is
approved on its behalf, through the decider, only when all of these hold: it falls under the
same policy rule as the call that was approved; the person who gave it may decide the new
request under that request's own approvers; the new request needs no reason; and the
self-approval rule allows that person. Anything else gets a card. The person who gave it, an
admin or one of the tool's approvers may revoke it; it ends on time by itself.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.service.outcome import Actor, Outcome
from bot.service.permissions import is_admin, may_decide
from bot.service.policy.effective import Policies
from bot.service.ports import Directory, StandingApprovalShown
from bot.service.presenting import SafePresenter
from bot.service.registry import AgentRegistry
from bot.service.settings import ServiceSettings
from store import ApprovalRequestRecord, RunRecord, StandingApproval, Store

log = logging.getLogger("sayso.service")


class StandingApprovals:
    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        directory: Directory,
        policies: Policies,
        show: SafePresenter,
        settings: ServiceSettings,
    ) -> None:
        self.store = store
        self.agents = agents
        self.directory = directory
        self.policies = policies
        self.show = show
        self.admins = settings.admins
        self.default_approvers = settings.default_approvers

    async def give(
        self, request: ApprovalRequestRecord, run: RunRecord, actor: Actor
    ) -> StandingApproval | None:
        """After `actor` approved `request` with "and allow in this thread": record the
        standing approval and post it (with its Revoke button) in the thread."""
        seconds = request.policy.standing_seconds
        if not seconds or request.policy.min_approvals > 1 or request.policy.require_reason:
            return None
        if not run.channel_id or not run.thread_ts:
            return None
        standing = await self.store.standing.add(
            agent_id=run.agent_id,
            tool_name=request.spec.tool_name,
            channel_id=run.channel_id,
            thread_ts=run.thread_ts,
            granted_by=actor.user_id,
            lasts=timedelta(seconds=seconds),
            request_id=request.id,
            run_id=run.id,
        )
        log.info(
            "event=standing_approval_given run_id=%s tool=%s by=%s seconds=%d",
            run.id,
            request.spec.tool_name,
            actor.user_id,
            seconds,
        )
        ts = await self.show.say(StandingApprovalShown(standing), run)
        if ts:
            await self.store.standing.set_message(standing.id, ts)
        return standing

    async def covering(
        self, run: RunRecord, request: ApprovalRequestRecord, workspace_team_id: str | None
    ) -> StandingApproval | None:
        """The live standing approval that may approve this request on its giver's behalf."""
        if (
            request.spec.kind != "approval"
            or request.policy.min_approvals > 1
            or request.policy.require_reason
        ):
            return None
        if not run.channel_id or not run.thread_ts:
            return None
        standing = await self.store.standing.live(
            agent_id=run.agent_id,
            tool_name=request.spec.tool_name,
            channel_id=run.channel_id,
            thread_ts=run.thread_ts,
        )
        if standing is None:
            return None
        given_for = await self.store.requests.get(standing.request_id or "")
        if given_for is None or given_for.policy.rule != request.policy.rule:
            self._not_covered(request, standing, "another rule")
            return None
        verdict = await may_decide(
            self.directory,
            user_id=standing.granted_by,
            team_id=workspace_team_id,
            workspace_team_id=workspace_team_id,
            approvers=() if request.policy.anyone else request.policy.approvers,
            requester=request.spec.requester,
            allow_self_approval=request.policy.allow_self_approval,
            channel_id=request.state.channel_id or run.channel_id,
        )
        if not verdict.allowed:
            self._not_covered(request, standing, "giver may not decide it")
            return None
        return standing

    def _not_covered(
        self, request: ApprovalRequestRecord, standing: StandingApproval, why: str
    ) -> None:
        log.info(
            "event=standing_approval_not_applied run_id=%s call_id=%s standing_id=%s why=%r",
            request.spec.run_id,
            request.spec.call_id,
            standing.id,
            why,
        )

    async def revoke(
        self, standing_id: str, actor: Actor, workspace_team_id: str | None
    ) -> Outcome:
        standing = await self.store.standing.get(standing_id)
        if standing is None:
            return Outcome("not_found", "This standing approval no longer exists.")
        if not await self._may_revoke(standing, actor, workspace_team_id):
            message = "Only the person who gave it, an admin or the tool's approvers may revoke it."
            return Outcome("denied", message)
        revoked, now = await self.store.standing.revoke(standing_id, actor.user_id)
        if not revoked or now is None:
            return Outcome("lost", "This standing approval was already revoked.")
        log.info("event=standing_approval_revoked standing_id=%s by=%s", standing_id, actor.user_id)
        await self.show.say(StandingApprovalShown(now))
        return Outcome("decided", f"You revoked the standing approval for `{now.tool_name}`.")

    async def _may_revoke(
        self, standing: StandingApproval, actor: Actor, workspace_team_id: str | None
    ) -> bool:
        if actor.user_id == standing.granted_by:
            return True
        if await is_admin(self.directory, actor.user_id, self.admins):
            return True
        agent = self.agents.get(standing.agent_id)
        tool = agent.tools.get(standing.tool_name) if agent else None
        if agent is None or tool is None:
            return False
        approvers = self.policies.tool_settings(agent, tool).approvers or agent.approvers
        verdict = await may_decide(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=workspace_team_id,
            approvers=tuple(approvers or self.default_approvers),
            requester=None,
            allow_self_approval=True,
        )
        return verdict.allowed

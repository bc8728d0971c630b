"""Recording a person's decision on an approval request: who may, exactly once, then continue."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bot.agent.tools import Tool
from bot.agent.vocabulary import OUTCOME_OF, PersonAction
from bot.service.decision_rules import (
    ANSWERS,
    REASON_FIELD,
    REASON_NEEDED,
    VERB,
    already_decided,
    invalid_input,
    needs_reason,
)
from bot.service.events import Events, RequestSettled, RunReady, StandingApprovalGiven
from bot.service.outcome import Actor, Outcome, OutcomeKind
from bot.service.permissions import may_decide
from bot.service.policy.effective import Policies
from bot.service.policy.rules import stricter
from bot.service.ports import AutoApproved, Directory
from bot.service.presenting import SafePresenter
from bot.service.registry import AgentRegistry
from bot.service.settings import Workspace
from bot.service.standing import StandingApprovals
from store import ApprovalRequestRecord, DecisionResult, RunRecord, Store

log = logging.getLogger("sayso.service")


class Decider:
    """The one writer of decisions: people's (cards, modals, thread replies), a standing
    approval's, and an API caller's own answer all go through here, so permissions, policy,
    exactly-once and audit are in one place."""

    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        directory: Directory,
        policies: Policies,
        show: SafePresenter,
        standing: StandingApprovals,
        events: Events,
        workspace: Workspace,
        drives_now: Callable[[], bool],
    ) -> None:
        self.store = store
        self.agents = agents
        self.directory = directory
        self.policies = policies
        self.show = show
        self.standing = standing
        self.events = events
        self.workspace = workspace
        self.drives_now = drives_now
        """Would this process drive a run that became ready at once? (Then the decision
        claims the run in its own transaction.)"""

    @property
    def workspace_team_id(self) -> str | None:
        return self.workspace.team_id

    async def _settled(self, request: ApprovalRequestRecord) -> None:
        await self.events.emit(RequestSettled(request))

    async def check(
        self,
        request_id: str,
        actor: Actor,
        read: ApprovalRequestRecord | None = None,
        read_run: RunRecord | None = None,
    ) -> Outcome:
        """May this person decide this request now? (Before a modal.) `read`, `read_run`: as
        the front end just read them (the decision is a write only a pending request passes)."""
        request = read if read and read.id == request_id else None
        request = request or await self.store.requests.get(request_id)
        if request is None:
            return Outcome("not_found", "This request no longer exists.")
        if request.state.status != "pending":
            return Outcome("lost", already_decided(request), request)
        run = read_run if read_run and read_run.id == request.spec.run_id else None
        run = run or await self.store.runs.get(request.spec.run_id)
        verdict = await may_decide(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=self.workspace_team_id,
            approvers=() if request.policy.anyone else request.policy.approvers,
            requester=request.spec.requester,
            allow_self_approval=request.policy.allow_self_approval,
            channel_id=request.state.channel_id or (run.channel_id if run else None),
        )
        if not verdict.allowed:
            await self._audit_attempt(request, actor, "denied", verdict.reason)
            log.info(
                "event=decision_denied run_id=%s call_id=%s actor=%s",
                request.spec.run_id,
                request.spec.call_id,
                actor.user_id,
            )
            return Outcome("denied", verdict.reason, request)
        return Outcome("decided", "", request, run=run)

    async def precheck(
        self,
        request_id: str,
        actor: Actor,
        action: PersonAction,
        arguments: dict[str, Any] | None = None,
        output: Any = None,
        reason: str | None = None,
        read: ApprovalRequestRecord | None = None,
        read_run: RunRecord | None = None,
    ) -> Outcome:
        """Everything `decide` checks before its write (who, still pending, valid input),
        without writing: lets a modal answer with field errors within Slack's 3 s."""
        checked = await self.check(request_id, actor, read, read_run)
        if not checked.ok or checked.request is None:
            if checked.kind == "lost" and checked.request is not None:
                r = checked.request
                detail = (
                    f"wanted={OUTCOME_OF[action]} status={r.state.status}"
                    f" decided_by={r.state.decided_by}"
                )
                await self._audit_attempt(r, actor, "lost", detail)
            return checked
        tool = self.agents.tool_of(checked.agent_id or "", checked.request)
        invalid = invalid_input(checked.request, tool, action, arguments, output)
        if invalid is None and needs_reason(checked.request, action, reason):
            invalid = Outcome(
                "invalid", REASON_NEEDED, checked.request, {REASON_FIELD: REASON_NEEDED}
            )
        return invalid if invalid is not None else checked

    async def decide(
        self,
        request_id: str,
        actor: Actor,
        action: PersonAction,
        *,
        arguments: dict[str, Any] | None = None,
        reason: str | None = None,
        output: Any = None,
        standing: bool = False,
        read: ApprovalRequestRecord | None = None,
        read_run: RunRecord | None = None,
    ) -> Outcome:
        checked = await self.precheck(
            request_id, actor, action, arguments, output, reason, read, read_run
        )
        if not checked.ok:  # a losing attempt is audited by precheck
            return checked
        request = checked.request
        assert request is not None
        tool = self.agents.tool_of(checked.agent_id or "", request)
        if action == "edit" and tool is not None:  # stored as the person wrote them; the
            tool.validate(arguments or {})  # runtime fills defaults when the call runs
        if action == "answer" and tool is not None:
            output = tool.parse_output(output)
        if action == "edit" and tool is not None and request.spec.kind == "approval":
            moved = await self._reevaluate(request, tool, checked, actor, arguments or {}, reason)
            if isinstance(moved, Outcome):
                return moved
            request = moved
        if (
            request.spec.kind == "approval"
            and request.policy.min_approvals > 1
            and action != "reject"
        ):
            return await self._count_approval(request, actor, arguments, reason, action)
        result = await self.store.requests.decide(
            request.id,
            actor=actor.user_id,
            status=OUTCOME_OF[action],
            reason=reason,
            edited_arguments=arguments if action == "edit" else None,
            output=output if action in ANSWERS else None,
            # the run's lease in the same transaction, when this process will drive it now
            claim=request.spec.api_spec is None and self.drives_now(),
        )
        if result.request is None:
            return Outcome("not_found", "This request no longer exists.")
        if not result.won:
            kind: OutcomeKind = "expired" if result.expired else "lost"
            if result.expired:
                await self.refresh_card(result.request, checked.run)
                await self._settled(result.request)
            return Outcome(kind, already_decided(result.request), result.request)
        standing = standing and action == "approve"
        return await self._decided(request, actor, result, standing, checked.run)

    async def _decided(
        self,
        request: ApprovalRequestRecord,
        actor: Actor,
        result: DecisionResult,
        standing: bool = False,
        run: RunRecord | None = None,
    ) -> Outcome:
        """After a recorded decision: show it (and any standing approval it gives, before
        the run goes on), continue the run when its pause is complete."""
        assert result.request is not None
        if standing:
            run = run or await self.store.runs.get(request.spec.run_id)
            given = await self.standing.give(result.request, run, actor) if run else None
            if given is not None:
                await self.events.emit(StandingApprovalGiven(given.id, request.spec.run_id))
        log.info(
            "event=decided run_id=%s call_id=%s actor=%s status=%s",
            request.spec.run_id,
            request.spec.call_id,
            actor.user_id,
            result.request.state.status,
        )
        await self._settled(result.request)  # first: a waiting caller hears at once
        if result.lease is not None:  # claimed with the decision: the run goes on here
            await self.events.emit(RunReady(request.spec.run_id, result.lease))
        elif result.run_ready and request.spec.api_spec is None:
            # then the run goes on while the card is updated (an API request's caller goes on)
            await self.events.emit(RunReady(request.spec.run_id))
        await self.refresh_card(result.request, run)
        return Outcome(
            "decided",
            f"You {VERB[result.request.state.status]} `{request.spec.tool_name}`.",
            result.request,
        )

    async def _reevaluate(
        self,
        request: ApprovalRequestRecord,
        tool: Tool,
        checked: Outcome,
        actor: Actor,
        arguments: dict[str, Any],
        reason: str | None,
    ) -> ApprovalRequestRecord | Outcome:
        """An edit is evaluated again: one that moves the call under a stricter rule puts the
        request under that rule, if the editor may approve under it (else nothing changes)."""
        agent = self.agents.get(checked.agent_id or "")
        if agent is None:
            return request
        new = self.policies.call_policy(agent, tool, arguments)
        if not stricter(new, request):
            return request
        run = checked.run
        verdict = await may_decide(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=self.workspace_team_id or (run.team_id if run else None),
            approvers=new.approvers,
            requester=request.spec.requester,
            allow_self_approval=new.allow_self_approval,
        )
        where = f"Your edit puts this call under {new.rule}"
        if not verdict.allowed:
            await self._audit_attempt(request, actor, "denied", f"stricter rule={new.rule}")
            return Outcome("denied", f"{where}. {verdict.reason} Nothing changed.", request)
        if new.require_reason and not (reason or "").strip():
            message = f"{where}, which needs a reason: edit again and write why."
            return Outcome("invalid", message, request, {REASON_FIELD: message})
        moved = await self.store.requests.reapply_policy(
            request.id, new.request_policy(request.policy.expires_at)
        )
        log.info(
            "event=rule_applied run_id=%s call_id=%s rule=%s min_approvals=%d",
            request.spec.run_id,
            request.spec.call_id,
            new.rule,
            new.min_approvals,
        )
        await self.store.audit.record(
            actor=actor.user_id,
            action="policy",
            run_id=request.spec.run_id,
            call_id=request.spec.call_id,
            request_id=request.id,
            tool_name=request.spec.tool_name,
            arguments=arguments,
            outcome="stricter",
            detail=f"rule={new.rule} min_approvals={new.min_approvals}",
        )
        return moved or request

    async def _count_approval(
        self,
        request: ApprovalRequestRecord,
        actor: Actor,
        arguments: dict[str, Any] | None,
        reason: str | None,
        action: PersonAction,
    ) -> Outcome:
        """An approval (or an edit, which resets the count) towards a quorum."""
        counted = await self.store.requests.count_approval(
            request.id,
            actor=actor.user_id,
            edited_arguments=arguments if action == "edit" else None,
            reason=reason,
        )
        result = counted.decision
        if result.request is None:
            return Outcome("not_found", "This request no longer exists.")
        if result.won:
            return await self._decided(request, actor, result)
        now = result.request
        if now.state.status != "pending":
            kind: OutcomeKind = "expired" if result.expired else "lost"
            if result.expired:
                await self.refresh_card(now)
            return Outcome(kind, already_decided(now), now)
        waiting = f"waiting for {now.approvals_missing} more"
        if not counted.counted:
            return Outcome("invalid", f"You already approved this request; {waiting}.", now)
        log.info(
            "event=approval_counted run_id=%s call_id=%s actor=%s approvals=%d/%d",
            request.spec.run_id,
            request.spec.call_id,
            actor.user_id,
            len(now.state.approvals),
            now.policy.min_approvals,
        )
        await self.refresh_card(now)
        verb = "edited and approved" if action == "edit" else "approved"
        return Outcome("decided", f"You {verb} `{request.spec.tool_name}`; {waiting}.", now)

    async def _audit_attempt(
        self, request: ApprovalRequestRecord, actor: Actor, outcome: str, detail: str
    ) -> None:
        """Attempts that never reach the conditional write (denied, or already decided) are
        audited like the ones that do."""
        await self.store.audit.record(
            actor=actor.user_id,
            action="decide",
            run_id=request.spec.run_id,
            call_id=request.spec.call_id,
            request_id=request.id,
            tool_name=request.spec.tool_name,
            arguments=request.spec.arguments,
            outcome=outcome,
            detail=detail,
        )

    async def refresh_card(
        self, request: ApprovalRequestRecord, run: RunRecord | None = None
    ) -> None:
        """Show the request's current status on its card (a failure is logged, not raised).
        `run`: the request's run as read before (a card shows only what never changes of it:
        its agent and requester); read here otherwise."""
        if run is None or run.id != request.spec.run_id:
            run = await self.store.runs.get(request.spec.run_id)
        if run is not None:
            await self.show.request_changed(run, request)

    # -- decisions nobody clicked -----------------------------------------------------------

    async def approve_under_standing(self, run: RunRecord, request: ApprovalRequestRecord) -> bool:
        """Approve a call a standing approval covers (see bot/service/standing.py), post one
        line saying so, continue the run; True when the request is no longer pending."""
        standing = await self.standing.covering(run, request, self.workspace.team_id)
        if standing is None:
            return False
        result = await self.store.requests.decide(
            request.id,
            actor=f"grant:{standing.id}",
            status="approved",
            reason=f"standing approval {standing.id} given by {standing.granted_by}",
        )
        if not result.won or result.request is None:
            return result.request is not None and result.request.state.status != "pending"
        log.info(
            "event=auto_approved run_id=%s call_id=%s standing_id=%s given_by=%s rule=%s",
            run.id,
            request.spec.call_id,
            standing.id,
            standing.granted_by,
            request.policy.rule,
        )
        await self._settled(result.request)
        await self.show.say(AutoApproved(result.request, standing), run)
        if result.run_ready:
            await self.events.emit(RunReady(run.id))
        return True

    async def answer_for_caller(
        self, request_id: str, caller: str, answer: str, how: str
    ) -> ApprovalRequestRecord | None:
        """A question its caller's own client answered (an MCP form): answered at once in the
        caller's name (`api:<key name>`, never a Slack user), `how` as its reason."""
        result = await self.store.requests.decide(
            request_id, actor=caller, status="answered", reason=how, output=answer
        )
        if result.request is not None and (result.won or result.expired):
            await self._settled(result.request)
        return result.request

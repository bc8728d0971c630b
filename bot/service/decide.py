"""Recording a person's decision on an approval request: who may, exactly once, then continue."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from bot.agent.tools import Tool, argument_errors
from bot.agent.vocabulary import (
    ALL_APPROVAL_DECISIONS,
    OUTCOME_OF,
    PersonAction,
)
from bot.service.outcome import Actor, Outcome, OutcomeKind
from bot.service.permissions import may_decide
from bot.service.policy import stricter
from bot.service.ports import Directory, Presenter
from bot.service.registry import AgentRegistry
from bot.service.runner import Runner
from store import ApprovalRequestRecord, DecisionOutcome, RunRecord, Store

log = logging.getLogger("sayso.service")

Action = PersonAction
"""Kept for code written against `bot.service.Action`: use `PersonAction`."""

_VERB: dict[str, str] = {
    "approved": "approved",
    "edited": "approved with edits",
    "rejected": "rejected",
    "answered": "answered",
    "expired": "expired",
    "cancelled": "cancelled",
}
OUTPUT_FIELD = "output"
"""The field error key for an answer or a review (edits use the argument names)."""
REASON_FIELD = "reason"
"""The field error key for a reason that must be given."""
REASON_NEEDED = "Write why you approve: this request needs a reason."

_ANSWERS: tuple[PersonAction, ...] = ("answer", "review")
"""Actions that give the call its output."""


def _needs_reason(request: ApprovalRequestRecord, action: PersonAction, reason: str | None) -> bool:
    """Approving (or editing) a request that needs a reason, without one."""
    return request.require_reason and action in ("approve", "edit") and not (reason or "").strip()


JUST_READ_SECONDS = 0.25
"""How old a request read earlier in the same task may be for `check` to use it."""
_just_read: ContextVar[tuple[float, ApprovalRequestRecord] | None] = ContextVar(
    "sayso_just_read", default=None
)


def remember_read(request: ApprovalRequestRecord | None) -> None:
    """A front end read this request to handle a click; the check that follows in the same
    task (within `JUST_READ_SECONDS`) uses it instead of reading it again. Nothing is lost by
    that: the decision itself is a conditional write that only a pending request passes."""
    _just_read.set((time.monotonic(), request) if request is not None else None)


def _recently_read(request_id: str) -> ApprovalRequestRecord | None:
    found = _just_read.get()
    if found is None:
        return None
    _just_read.set(None)  # used once
    at, request = found
    fresh = time.monotonic() - at <= JUST_READ_SECONDS
    return request if fresh and request.id == request_id else None


def already_decided(request: ApprovalRequestRecord) -> str:
    if request.status == "expired":
        return "This request expired before anyone decided; nothing ran."
    verb = _VERB.get(request.status, request.status)
    by = (
        f" by <@{request.decided_by}>"
        if request.decided_by and request.decided_by != "system"
        else ""
    )
    return f"This request was already {verb}{by}."


class Decider:
    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        directory: Directory,
        presenter: Presenter,
        runner: Runner,
        workspace_team_id: str | None = None,
    ) -> None:
        self.store = store
        self.agents = agents
        self.directory = directory
        self.presenter = presenter
        self.runner = runner
        self.workspace_team_id = workspace_team_id
        self.on_standing: Callable[[ApprovalRequestRecord, Actor], Awaitable[None]] | None = None
        """Called when an approval that won asked to allow the tool in its thread."""
        self.on_settled: Callable[[ApprovalRequestRecord], Awaitable[None]] | None = None
        """Told of every request this decider settles (the API wakes its callers)."""

    async def _settled(self, request: ApprovalRequestRecord) -> None:
        if self.on_settled is not None:
            try:
                await self.on_settled(request)
            except Exception:
                log.exception("event=settled_hook_failed request_id=%s", request.id)

    async def check(self, request_id: str, actor: Actor) -> Outcome:
        """May this person decide this request now? (Used before opening a modal.)"""
        request = _recently_read(request_id) or await self.store.get_request(request_id)
        if request is None:
            return Outcome("not_found", "This request no longer exists.")
        if request.status != "pending":
            return Outcome("lost", already_decided(request), request)
        run = await self.store.get_run(request.run_id)
        verdict = await may_decide(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=self.workspace_team_id,
            approvers=() if request.anyone else request.approvers,
            requester=request.requester,
            allow_self_approval=request.allow_self_approval,
            channel_id=request.channel_id or (run.channel_id if run else None),
        )
        if not verdict.allowed:
            await self._audit_attempt(request, actor, "denied", verdict.reason)
            log.info(
                "event=decision_denied run_id=%s call_id=%s actor=%s",
                request.run_id,
                request.call_id,
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
    ) -> Outcome:
        """Everything `decide` checks before its write (who, still pending, valid input),
        without writing: lets a modal answer with field errors within Slack's 3 s."""
        checked = await self.check(request_id, actor)
        if not checked.ok or checked.request is None:
            if checked.kind == "lost" and checked.request is not None:
                r = checked.request
                detail = f"wanted={OUTCOME_OF[action]} status={r.status} decided_by={r.decided_by}"
                await self._audit_attempt(r, actor, "lost", detail)
            return checked
        tool = self.agents.tool_of(checked.agent_id or "", checked.request)
        invalid = self._validate(checked.request, tool, action, arguments, output)
        if invalid is None and _needs_reason(checked.request, action, reason):
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
    ) -> Outcome:
        checked = await self.precheck(request_id, actor, action, arguments, output, reason)
        if not checked.ok:  # a losing attempt is audited by precheck
            return checked
        request = checked.request
        assert request is not None
        tool = self.agents.tool_of(checked.agent_id or "", request)
        if action == "edit" and tool is not None:  # stored as the person wrote them; the
            tool.validate(arguments or {})  # runtime fills defaults when the call runs
        if action == "answer" and tool is not None:
            output = tool.parse_output(output)
        if action == "edit" and tool is not None and request.kind == "approval":
            moved = await self._reevaluate(request, tool, checked, actor, arguments or {}, reason)
            if isinstance(moved, Outcome):
                return moved
            request = moved
        if request.kind == "approval" and request.min_approvals > 1 and action != "reject":
            return await self._count_approval(request, actor, arguments, reason, action)
        result = await self.store.decide(
            request.id,
            actor=actor.user_id,
            status=OUTCOME_OF[action],
            reason=reason,
            edited_arguments=arguments if action == "edit" else None,
            output=output if action in _ANSWERS else None,
            # the run's lease in the same transaction, when this process will drive it now
            claim=request.api_spec is None and self.runner.drives_now(),
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
        result: DecisionOutcome,
        standing: bool = False,
        run: RunRecord | None = None,
    ) -> Outcome:
        """After a recorded decision: show it (and any standing approval it gives, before
        the run goes on), continue the run when its pause is complete."""
        assert result.request is not None
        if standing and self.on_standing is not None:
            await self.on_standing(result.request, actor)
        log.info(
            "event=decided run_id=%s call_id=%s actor=%s status=%s",
            request.run_id,
            request.call_id,
            actor.user_id,
            result.request.status,
        )
        await self._settled(result.request)  # first: a waiting caller hears at once
        if result.lease is not None:  # claimed with the decision: the run goes on here
            self.runner.drive_claimed(result.lease)
        elif result.run_ready and request.api_spec is None:
            # then the run goes on while the card is updated (an API request's caller goes on)
            await self.runner.continue_run(request.run_id)
        await self.refresh_card(result.request, run)
        return Outcome(
            "decided", f"You {_VERB[result.request.status]} `{request.tool_name}`.", result.request
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
        new = self.runner.call_policy(agent, tool, arguments)
        if not stricter(new, request):
            return request
        run = checked.run
        verdict = await may_decide(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=self.workspace_team_id or (run.team_id if run else None),
            approvers=new.approvers,
            requester=request.requester,
            allow_self_approval=new.allow_self_approval,
        )
        where = f"Your edit puts this call under {new.rule}"
        if not verdict.allowed:
            await self._audit_attempt(request, actor, "denied", f"stricter rule={new.rule}")
            return Outcome("denied", f"{where}. {verdict.reason} Nothing changed.", request)
        if new.require_reason and not (reason or "").strip():
            message = f"{where}, which needs a reason: edit again and write why."
            return Outcome("invalid", message, request, {REASON_FIELD: message})
        moved = await self.store.reapply_policy(request.id, new.request_policy(request.expires_at))
        log.info(
            "event=rule_applied run_id=%s call_id=%s rule=%s min_approvals=%d",
            request.run_id,
            request.call_id,
            new.rule,
            new.min_approvals,
        )
        await self.store.audit(
            actor=actor.user_id,
            action="policy",
            run_id=request.run_id,
            call_id=request.call_id,
            request_id=request.id,
            tool_name=request.tool_name,
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
        counted = await self.store.count_approval(
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
        if now.status != "pending":
            kind: OutcomeKind = "expired" if result.expired else "lost"
            if result.expired:
                await self.refresh_card(now)
            return Outcome(kind, already_decided(now), now)
        waiting = f"waiting for {now.approvals_missing} more"
        if not counted.counted:
            return Outcome("invalid", f"You already approved this request; {waiting}.", now)
        log.info(
            "event=approval_counted run_id=%s call_id=%s actor=%s approvals=%d/%d",
            request.run_id,
            request.call_id,
            actor.user_id,
            len(now.approvals),
            now.min_approvals,
        )
        await self.refresh_card(now)
        verb = "edited and approved" if action == "edit" else "approved"
        return Outcome("decided", f"You {verb} `{request.tool_name}`; {waiting}.", now)

    async def _audit_attempt(
        self, request: ApprovalRequestRecord, actor: Actor, outcome: str, detail: str
    ) -> None:
        """Attempts that never reach the conditional write (denied, or already decided) are
        audited like the ones that do."""
        await self.store.audit(
            actor=actor.user_id,
            action="decide",
            run_id=request.run_id,
            call_id=request.call_id,
            request_id=request.id,
            tool_name=request.tool_name,
            arguments=request.arguments,
            outcome=outcome,
            detail=detail,
        )

    def _validate(
        self,
        request: ApprovalRequestRecord,
        tool: Tool | None,
        action: PersonAction,
        arguments: Any,
        output: Any,
    ) -> Outcome | None:
        if request.kind == "review":
            ok = action in _ANSWERS
        elif request.kind in ("manual", "hitl"):
            ok = action in ("answer", "reject")
        else:
            ok = action in (tool.allowed_decisions if tool else ALL_APPROVAL_DECISIONS)
        if not ok:
            return Outcome("invalid", f"`{action}` is not a decision this request allows.", request)
        if action == "edit":
            if tool is None:
                return Outcome(
                    "invalid", f"Tool `{request.tool_name}` is no longer defined.", request
                )
            errors = argument_errors(tool, arguments or {})
            if errors:
                return Outcome("invalid", "Some arguments are not valid.", request, errors)
        if action == "answer" and tool is not None:
            try:
                tool.parse_output(output)
            except ValueError as exc:
                return Outcome("invalid", str(exc), request, {OUTPUT_FIELD: str(exc)})
        if action == "review" and not (isinstance(output, str) and output.strip()):
            message = "Write your review."
            return Outcome("invalid", message, request, {OUTPUT_FIELD: message})
        return None

    async def refresh_card(
        self, request: ApprovalRequestRecord, run: RunRecord | None = None
    ) -> None:
        """Show the request's current status on its card (a failure is logged, not raised).
        `run`: the request's run as read before (a card shows only what never changes of it:
        its agent and requester); read here otherwise."""
        if run is None or run.id != request.run_id:
            run = await self.store.get_run(request.run_id)
        if run is None:
            return
        try:
            await self.presenter.update_card(run, request)
        except Exception:
            log.exception("event=card_update_failed request_id=%s", request.id)

"""Recording a person's decision on an approval request: who may, exactly once, then continue."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.agent.tools import Tool, argument_errors
from bot.agent.vocabulary import (
    ALL_APPROVAL_DECISIONS,
    OUTCOME_OF,
    PersonAction,
)
from bot.service.api_tool import is_api_run
from bot.service.outcome import Actor, Outcome, OutcomeKind
from bot.service.permissions import may_decide
from bot.service.ports import Directory, Presenter
from bot.service.registry import AgentRegistry
from bot.service.runner import Runner
from store import ApprovalRequestRecord, Store

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
_ANSWERS: tuple[PersonAction, ...] = ("answer", "review")
"""Actions that give the call its output."""


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
        request = await self.store.get_request(request_id)
        if request is None:
            return Outcome("not_found", "This request no longer exists.")
        if request.status != "pending":
            return Outcome("lost", already_decided(request), request)
        run = await self.store.get_run(request.run_id)
        verdict = await may_decide(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=self.workspace_team_id or (run.team_id if run else None),
            approvers=() if request.anyone else request.approvers,
            requester=request.requester,
            allow_self_approval=request.allow_self_approval,
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
    ) -> Outcome:
        checked = await self.precheck(request_id, actor, action, arguments, output)
        if not checked.ok:  # a losing attempt is audited by precheck
            return checked
        request = checked.request
        assert request is not None
        tool = self.agents.tool_of(checked.agent_id or "", request)
        if action == "edit" and tool is not None:  # stored as the person wrote them; the
            tool.validate(arguments or {})  # runtime fills defaults when the call runs
        if action == "answer" and tool is not None:
            output = tool.parse_output(output)
        result = await self.store.decide(
            request.id,
            actor=actor.user_id,
            status=OUTCOME_OF[action],
            reason=reason,
            edited_arguments=arguments if action == "edit" else None,
            output=output if action in _ANSWERS else None,
        )
        if result.request is None:
            return Outcome("not_found", "This request no longer exists.")
        if not result.won:
            kind: OutcomeKind = "expired" if result.expired else "lost"
            if result.expired:
                await self.refresh_card(result.request)
                await self._settled(result.request)
            return Outcome(kind, already_decided(result.request), result.request)
        log.info(
            "event=decided run_id=%s call_id=%s actor=%s status=%s",
            request.run_id,
            request.call_id,
            actor.user_id,
            result.request.status,
        )
        await self._settled(result.request)  # first: a waiting caller hears at once
        await self.refresh_card(result.request)
        if result.run_ready and not is_api_run(checked.agent_id or ""):
            await self.runner.continue_run(request.run_id)
        return Outcome(
            "decided", f"You {_VERB[result.request.status]} `{request.tool_name}`.", result.request
        )

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

    async def refresh_card(self, request: ApprovalRequestRecord) -> None:
        """Show the request's current status on its card (a failure is logged, not raised)."""
        run = await self.store.get_run(request.run_id)
        if run is None:
            return
        try:
            await self.presenter.update_card(run, request)
        except Exception:
            log.exception("event=card_update_failed request_id=%s", request.id)

"""Who may read an approval request's full arguments, and refusals on the record."""

from __future__ import annotations

import logging

from bot.service.outcome import Actor, Outcome
from bot.service.permissions import may_decide
from bot.service.ports import Directory
from store import ApprovalRequestRecord, Store

log = logging.getLogger("sayso.service")

NOT_YOURS = (
    "Only the people who may decide this request, and the person who started it, "
    "may see its full arguments."
)


class ArgumentsAccess:
    """The full arguments (the `view_args` modal) are for the request's requester and the
    people who may decide it; every refusal is audited."""

    def __init__(self, store: Store, directory: Directory) -> None:
        self.store = store
        self.directory = directory

    async def view(
        self,
        request_id: str,
        actor: Actor,
        workspace_team_id: str | None,
        read: ApprovalRequestRecord | None = None,
    ) -> Outcome:
        """ "shown" with the request and its run, or why not (audited). `read`: the request
        as the front end just read it, used instead of reading it again."""
        request = read if read is not None and read.id == request_id else None
        if request is None and request_id:
            request = await self.store.requests.get(request_id)
        run = await self.store.runs.get(request.spec.run_id) if request else None
        if request is None or run is None:
            return Outcome("not_found", "This request no longer exists.")
        if actor.user_id and actor.user_id == request.spec.requester:
            return Outcome("shown", request=request, run=run)
        verdict = await may_decide(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=workspace_team_id,
            approvers=() if request.policy.anyone else request.policy.approvers,
            requester=request.spec.requester,
            allow_self_approval=True,  # a requester reads their own request's arguments
        )
        if verdict.allowed:
            return Outcome("shown", request=request, run=run)
        await self.refused(request, actor, verdict.reason)
        return Outcome("denied", NOT_YOURS, request, run=run)

    async def refused(
        self, request: ApprovalRequestRecord, actor: Actor, detail: str, action: str = "view_args"
    ) -> None:
        """On the record: `actor` was refused `action` on `request` (and why)."""
        await self.store.audit.record(
            actor=actor.user_id,
            action=action,
            run_id=request.spec.run_id,
            call_id=request.spec.call_id,
            request_id=request.id,
            tool_name=request.spec.tool_name,
            outcome="denied",
            detail=detail,
        )
        log.info(
            "event=refused action=%s run_id=%s call_id=%s actor=%s",
            action,
            request.spec.run_id,
            request.spec.call_id,
            actor.user_id,
        )

"""The kill switch: cancel a run, and who may cancel or retry one."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.agent.vocabulary import ENDED_RUN_STATUSES
from bot.service.outcome import Actor, Outcome
from bot.service.permissions import may_control_run
from bot.service.ports import Directory, Presenter
from store import ApprovalRequestRecord, RunRecord, Store
from store.cancel import CancelOutcome

log = logging.getLogger("sayso.service")

DENIED = (
    "Only the person who started this run, the approvers of its open requests or an admin "
    "may cancel it."
)


def approvals_of(
    requests: Sequence[ApprovalRequestRecord], fallback: Sequence[str], channel_id: str | None
) -> list[tuple[Sequence[str], str | None]]:
    """Who may decide these requests (each: its approvers and channel); with none, the
    fallback approvers (the agent's)."""
    found: list[tuple[Sequence[str], str | None]] = [
        (() if r.anyone else r.approvers, r.channel_id or channel_id) for r in requests
    ]
    return found or [(tuple(fallback), channel_id)]


async def show_cancelled(presenter: Presenter, done: CancelOutcome, actor: str) -> None:
    """Cards of the closed requests, the root message and a note in the thread."""
    run = done.run
    if run is None:
        return
    for request in done.requests:
        await _safely(presenter.update_card(run, request), "card_update_failed", run)
    await _safely(presenter.update_root(run), "root_update_failed", run)
    await _safely(presenter.post_cancelled(run, actor), "cancel_note_failed", run)
    if run.requester:
        await _safely(presenter.refresh_home(run.requester), "home_refresh_failed", run)


async def _safely(aw: object, event: str, run: RunRecord) -> None:
    try:
        await aw  # type: ignore[misc]
    except Exception:
        log.exception("event=%s run_id=%s", event, run.id)


class Canceller:
    """Cancels runs for the people allowed to (see `may_control_run`)."""

    def __init__(
        self,
        store: Store,
        directory: Directory,
        presenter: Presenter,
        admins: Sequence[str],
    ) -> None:
        self.store = store
        self.directory = directory
        self.presenter = presenter
        self.admins = tuple(admins)

    async def cancel(
        self, run_id: str, actor: Actor, workspace_team_id: str | None, fallback: Sequence[str]
    ) -> Outcome:
        run = await self.store.get_run(run_id)
        if run is None:
            return Outcome("not_found", "This run no longer exists.")
        if run.status in ENDED_RUN_STATUSES:
            return Outcome(
                "invalid", f"This run is {run.status}; there is nothing to cancel.", run=run
            )
        pending = [r for r in await self.store.current_requests(run_id) if r.pending]
        allowed = await may_control_run(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=workspace_team_id,
            requester=run.requester,
            admins=self.admins,
            approvals=approvals_of(pending, fallback, run.channel_id) if pending else [],
        )
        if not allowed:
            await self.store.audit(
                actor=actor.user_id, action="cancel", run_id=run_id, outcome="denied"
            )
            log.info("event=cancel_denied run_id=%s actor=%s", run_id, actor.user_id)
            return Outcome("denied", DENIED, run=run)
        done = await self.store.cancel_run(run_id, actor=actor.user_id)
        if not done.cancelled:
            status = done.run.status if done.run else "gone"
            return Outcome("lost", f"This run already ended ({status}).", run=done.run)
        log.info("event=run_cancelled run_id=%s actor=%s", run_id, actor.user_id)
        await show_cancelled(self.presenter, done, actor.user_id)
        return Outcome("cancelled", "The run is cancelled.", run=done.run)

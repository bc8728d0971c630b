"""Use-cases, front-end agnostic: start a run, decide, continue when ready, expire, recover."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.agent.messages import complete_history
from bot.agent.vocabulary import PersonAction
from bot.service.api_requests import ApiRequests
from bot.service.api_tool import is_api_run
from bot.service.arguments import ArgumentsAccess
from bot.service.cancel import Canceller, approvals_of
from bot.service.commands import MAX_REQUEST_CHARS, Command, parse
from bot.service.decide import OUTPUT_FIELD, REASON_FIELD, Action, Decider, remember_read
from bot.service.grants import Grants
from bot.service.limits import StartGate
from bot.service.outcome import IGNORED, Actor, Outcome
from bot.service.permissions import (
    may_control_run,
    may_decide_open_requests,
    open_request_channels,
)
from bot.service.policy_file import PolicyError, load_policy
from bot.service.policy_report import rows as policy_rows
from bot.service.ports import Directory, Person, Presenter
from bot.service.registry import AgentRegistry
from bot.service.runner import Runner, ServiceSettings
from store import ApprovalRequestRecord, RunRecord, StartLimitReached, Store
from store.requests import INBOX_COUNT_LIMIT

log = logging.getLogger("sayso.service")

PURGE_EVERY = timedelta(hours=1)
CARD_GRACE = timedelta(seconds=30)  # the pausing process posts cards well within this


@dataclass(frozen=True)
class Inbox:
    """What one person may decide now (newest first, each with its run) and their recent runs."""

    pending: list[tuple[ApprovalRequestRecord, RunRecord]]
    total: int
    total_is_lower_bound: bool
    """The count stopped at `total`: there may be more."""
    recent_runs: list[RunRecord]


class Service:
    """Everything the front ends call. One per process; all state lives in the store."""

    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        directory: Directory,
        presenter: Presenter,
        settings: ServiceSettings,
        workspace_team_id: str | None = None,
    ) -> None:
        self.store = store
        self.agents = agents
        self.directory = directory
        self.presenter = presenter
        self.settings = settings
        self.runner = Runner(store, agents, presenter, settings)
        self.decider = Decider(store, agents, directory, presenter, self.runner, workspace_team_id)
        self.gate = StartGate(store, directory, settings.rate_limit)
        self.canceller = Canceller(store, directory, presenter, settings.admins)
        self.arguments_access = ArgumentsAccess(store, directory)
        self.grants = Grants(store, agents, directory, presenter, self.runner, settings.admins)
        self.decider.on_standing = self._give_grant
        self.api = ApiRequests(
            store,
            presenter,
            default_channel=settings.default_channel,
            default_approvers=settings.default_approvers,
            approval_ttl=settings.approval_ttl,
            callback_hosts=settings.callback_hosts,
        )
        self.decider.on_settled = self.api.settled
        self._sweeper: asyncio.Task[None] | None = None
        self._last_purge: datetime | None = None
        # Work after an ack (starting a run, recording a decision) done at once: a burst of
        # commands or clicks queues here rather than crowding the event loop that must answer
        # Slack within 3 s.
        self._intake = asyncio.Semaphore(max(2, min(8, settings.max_active_runs)))

    @property
    def workspace_team_id(self) -> str | None:
        return self.decider.workspace_team_id

    @workspace_team_id.setter
    def workspace_team_id(self, value: str | None) -> None:
        self.decider.workspace_team_id = value

    def parse(self, text: str) -> Command:
        return parse(text, self.agents)

    async def start(
        self,
        command: Command,
        *,
        requester: str,
        team_id: str | None,
        channel_id: str,
        thread_ts: str | None = None,
    ) -> Outcome:
        """Start a run of the command's agent, if this person may here and now.

        "started" with the new run; "denied" with a message for that person alone."""
        agent = command.agent
        assert agent is not None
        actor = Actor(user_id=requester, team_id=team_id)
        refusal = await self.gate.check_person(
            agent, actor, workspace_team_id=self.workspace_team_id, channel_id=channel_id
        )
        if refusal is not None:
            return refusal
        async with self._intake:
            try:
                run_id = await self.runner.start_run(
                    agent,
                    command.text,
                    requester=requester,
                    team_id=team_id,
                    channel_id=channel_id,
                    thread_ts=thread_ts,
                    limit=self.gate.start_limit(),
                )
            except StartLimitReached as reached:
                return await self.gate.limited(requester, reached)
        return Outcome("started", run=await self.store.get_run(run_id))

    # -- approval requests and runs, for the front ends -----------------------------------

    async def approval_request(self, request_id: str) -> ApprovalRequestRecord | None:
        """The request, read now (a `check` or `decide` that follows at once in the same task
        uses this read instead of its own)."""
        request = await self.store.get_request(request_id) if request_id else None
        remember_read(request)
        return request

    async def request_with_run(
        self, request_id: str
    ) -> tuple[ApprovalRequestRecord, RunRecord] | None:
        """An approval request and its run, or None when either no longer exists."""
        request = await self.approval_request(request_id)
        run = await self.run_of(request) if request else None
        return (request, run) if request and run else None

    async def run_of(self, request: ApprovalRequestRecord) -> RunRecord | None:
        return await self.store.get_run(request.run_id)

    async def is_run_thread(self, channel_id: str, thread_ts: str) -> bool:
        """Is this thread the one of a run (where replies go to the run)?"""
        return await self.store.run_for_thread(channel_id, thread_ts) is not None

    async def first_delivery(self, key: str) -> bool:
        """True the first time `key` (an event id, a request signature) is seen by any replica:
        the front end handles a delivery Slack retries, or a replica replays, only once."""
        return await self.store.first_delivery(key)

    async def view_arguments(self, request_id: str, actor: Actor) -> Outcome:
        """May this person read the request's full arguments? (Its requester and the people
        who may decide it may.) "shown" carries the request and its run; refusals are audited.
        """
        return await self.arguments_access.view(request_id, actor, self.workspace_team_id)

    async def refuse_foreign_click(
        self, request: ApprovalRequestRecord, actor: Actor, action: str
    ) -> None:
        """On the record: a button on one card named another card's request (Slack never sends
        that: a forged or tampered click), so nothing was done."""
        await self.arguments_access.refused(request, actor, "button from another card", action)

    # -- deciding -------------------------------------------------------------------------

    async def check(self, request_id: str, actor: Actor) -> Outcome:
        """May this person decide this request now? (Before opening a form.)"""
        return await self.decider.check(request_id, actor)

    async def precheck(
        self,
        request_id: str,
        actor: Actor,
        action: PersonAction,
        *,
        arguments: dict[str, Any] | None = None,
        reason: str | None = None,
        output: Any = None,
    ) -> Outcome:
        """Everything `decide` checks, without deciding (a reason only where one is needed)."""
        return await self.decider.precheck(request_id, actor, action, arguments, output, reason)

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
        """Record a decision; `standing`: an approval that also allows the tool in the
        request's thread for the time its policy says (a standing approval)."""
        async with self._intake:
            outcome = await self.decider.decide(
                request_id,
                actor,
                action,
                arguments=arguments,
                reason=reason,
                output=output,
                standing=standing,
            )
        if outcome.ok:
            await self._refresh_home(actor.user_id)
        return outcome

    # -- the policy file ------------------------------------------------------------------

    def load_policy(self, path: str) -> None:
        """Use the policy file at `path` for new requests (raises `PolicyError` with the
        line); the effective policy is logged, one line per tool and rule."""
        self.runner.policy_file = load_policy(path, self.agents)
        for row in policy_rows(self.runner.policies, self.agents):
            log.info("event=policy %s", " ".join(f"{k}={v.strip() or '-'}" for k, v in row.items()))

    def reload_policy(self) -> bool:
        """SIGHUP: read the file again; a bad file keeps the policy in force (and says why).
        Requests already created keep the policy they were created with."""
        book = self.runner.policy_file
        if book is None:
            return False
        try:
            self.load_policy(book.path)
        except PolicyError as exc:
            log.warning("event=policy_reload_failed error=%s: the previous policy stays", exc)
            return False
        log.info("event=policy_reloaded path=%s", book.path)
        return True

    async def _give_grant(self, request: ApprovalRequestRecord, actor: Actor) -> None:
        run = await self.store.get_run(request.run_id)
        if run is not None:
            await self.grants.give(request, run, actor)

    async def revoke(self, grant_id: str, actor: Actor) -> Outcome:
        """Revoke a standing approval (its granter, an admin or the tool's approvers may)."""
        return await self.grants.revoke(grant_id, actor)

    async def retry(self, run_id: str, actor: Actor) -> Outcome:
        """Run a failed run again (its requester or its approvers may)."""
        run = await self.store.get_run(run_id)
        if run is None:
            return Outcome("not_found", "This run no longer exists.")
        if run.status != "failed":
            status = run.status.replace("_", " ")
            return Outcome("invalid", f"This run is {status}; there is nothing to retry.", run=run)
        allowed = await may_control_run(
            self.directory,
            user_id=actor.user_id,
            team_id=actor.team_id,
            workspace_team_id=self.workspace_team_id,
            requester=run.requester,
            admins=self.settings.admins,
            approvals=approvals_of(
                await self.store.current_requests(run_id),
                self._agent_approvers(run.agent_id),
                run.channel_id,
            ),
        )
        if not allowed:
            message = (
                "Only the person who started this run, its approvers or an admin may retry it."
            )
            return Outcome("denied", message, run=run)
        limited = await self.gate.check_rate(actor.user_id, run_id)
        if limited is not None:
            return limited
        if not await self.runner.continue_run(run_id, retry=True):
            return Outcome("lost", "Someone is already retrying this run.", run=run)
        await self.store.audit(actor=actor.user_id, action="retry", run_id=run_id, outcome="ok")
        return Outcome("retried", "The run starts again.", run=run)

    async def cancel(self, run_id: str, actor: Actor) -> Outcome:
        """The kill switch: end the run before its next tool and close its open requests (its
        requester, the approvers of its open requests and admins may)."""
        run = await self.store.get_run(run_id)
        fallback = self._agent_approvers(run.agent_id) if run else ()
        workspace = self.workspace_team_id  # this workspace's, never a run's (finding 1)
        return await self.canceller.cancel(run_id, actor, workspace, fallback)

    def _agent_approvers(self, agent_id: str) -> tuple[str, ...]:
        agent = self.agents.get(agent_id)
        return tuple((agent.approvers if agent else ()) or self.settings.default_approvers)

    async def inbox(self, user_id: str, limit: int = 20) -> Inbox:
        """What the person may decide now (newest first), the total, and their recent runs."""
        groups = self.agents.approver_groups(self.settings.default_approvers)
        mine = [g for g in sorted(groups) if user_id in await self.directory.group_members(g)]
        anyone = await may_decide_open_requests(
            self.directory, user_id=user_id, workspace_team_id=self.workspace_team_id
        )
        channels = (
            await open_request_channels(
                self.directory, user_id, await self.store.open_request_channels()
            )
            if anyone
            else []
        )
        requests, total = await self.store.pending_for(
            user_id,
            mine,
            include_anyone=anyone,
            limit=limit,
            count_limit=INBOX_COUNT_LIMIT,
            anyone_channels=channels,
        )
        runs = await self.store.get_runs([r.run_id for r in requests])
        return Inbox(
            pending=[(r, runs[r.run_id]) for r in requests if r.run_id in runs],
            total=total,
            total_is_lower_bound=total >= INBOX_COUNT_LIMIT,
            recent_runs=await self.store.list_runs(requester=user_id, limit=10),
        )

    async def _refresh_home(self, user_id: str) -> None:
        try:
            await self.presenter.refresh_home(user_id)
        except Exception:
            log.exception("event=home_refresh_failed user=%s", user_id)

    async def thread_reply(
        self,
        *,
        channel_id: str,
        thread_ts: str,
        user_id: str,
        team_id: str | None,
        text: str,
        ts: str,
    ) -> Outcome:
        """A person replied in a thread: answer a review or a single question, or follow up.

        Not ok with a message: tell that person alone. "ignored": not a reply for sayso."""
        run = await self.store.run_for_thread(channel_id, thread_ts)
        text = text.strip()
        if run is None or not text or not user_id:
            return IGNORED
        actor = Actor(user_id=user_id, team_id=team_id)
        if run.status == "waiting_for_human":
            return await self._answer_in_thread(run, actor, text)
        if run.status == "running":
            message = "The agent is still working in this thread; reply again once it answers."
            return Outcome("invalid", message, run=run)
        agent = self.agents.get(run.agent_id)
        if agent is None:
            return IGNORED
        if len(text) > MAX_REQUEST_CHARS:
            message = (
                f"That reply is too long to send to `{agent.id}`: {len(text):,} of "
                f"{MAX_REQUEST_CHARS:,} characters."
            )
            return Outcome("invalid", message, run=run)
        refusal = await self.gate.check_person(
            agent,
            actor,
            workspace_team_id=self.workspace_team_id,
            channel_id=channel_id,
            run_id=run.id,
        )
        if refusal is not None:
            return refusal
        previous = await self.store.load_result(run.id)
        history = complete_history(previous.run.messages) if previous else []
        try:
            await self.runner.start_run(
                agent,
                text,
                requester=user_id,
                team_id=team_id,
                channel_id=channel_id,
                thread_ts=thread_ts,
                history=history,
                limit=self.gate.start_limit(),
            )
        except StartLimitReached as reached:
            return await self.gate.limited(user_id, reached, run.id)
        return Outcome("started", run=run)

    async def _answer_in_thread(self, run: RunRecord, actor: Actor, text: str) -> Outcome:
        """A reply where a run waits: it answers the review, or the one question asked."""
        result = await self.store.load_result(run.id)
        api_request = is_api_run(run.agent_id)  # no saved state: its one request is the pause
        if not api_request and (result is None or result.run.pause is None):
            return IGNORED
        pending = [r for r in await self.store.current_requests(run.id) if r.status == "pending"]
        reviews = [r for r in pending if r.kind == "review"]
        questions = [r for r in pending if r.kind == "hitl"]
        if reviews:
            return await self.decide(reviews[0].id, actor, "review", output=text)
        if len(questions) == 1 and len(pending) == 1:
            return await self.decide(questions[0].id, actor, "answer", output=text)
        if questions:
            message = "Several requests are open here: use the buttons on their cards."
        else:
            message = "This run is waiting for a decision: use the buttons on the cards above."
        return Outcome("invalid", message, run=run)

    # -- sweeping: expiry, continuation of ready runs, crash recovery --------------------------

    async def sweep_once(self, now: datetime | None = None) -> None:
        now = now or datetime.now(UTC)
        for request in await self.store.expire_due(now):
            log.info("event=request_expired run_id=%s call_id=%s", request.run_id, request.call_id)
            await self.decider.refresh_card(request)
            await self.api.settled(request)
        for request in await self.store.escalate_due(now):
            await self._escalated(request)
        for run_id in await self.store.ready_runs(now):
            await self.runner.continue_run(run_id)
        for run_id in await self.store.runs_missing_cards(now - CARD_GRACE):
            await self.runner.repost_cards(run_id)
        if self.settings.remind_after is not None:
            for request in await self.store.due_reminders(now - self.settings.remind_after, now):
                run = await self.store.get_run(request.run_id)
                if run is not None:
                    await self.runner.safely(self.presenter.post_reminder(run, request))
        if self._last_purge is None or now - self._last_purge > PURGE_EVERY:
            self._last_purge = now
            purged = await self.store.purge(self.settings.retention)
            if purged:
                log.info("event=purged runs=%d older_than=%s", purged, self.settings.retention)

    async def _escalated(self, request: ApprovalRequestRecord) -> None:
        """Tell the thread (mentioning who is called in) and show it on the card."""
        log.info(
            "event=request_escalated run_id=%s call_id=%s to=%s",
            request.run_id,
            request.call_id,
            ",".join(request.escalate_to or []),
        )
        run = await self.store.get_run(request.run_id)
        if run is not None:
            await self.runner.safely(self.presenter.post_escalation(run, request))
        await self.decider.refresh_card(request)

    async def _sweep_forever(self, interval: float) -> None:
        while True:
            try:
                await self.sweep_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event=sweep_failed")
            await asyncio.sleep(interval)

    def start_sweeper(self, interval: float) -> None:
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep_forever(interval), name="sweeper")

    async def stop_sweeper(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None

    async def close(self) -> None:
        await self.stop_sweeper()
        await self.runner.shutdown()
        close = getattr(self.presenter, "close", None)  # optional on a Presenter
        if close is not None:
            await close()


__all__ = [
    "OUTPUT_FIELD",
    "REASON_FIELD",
    "Action",
    "Actor",
    "AgentRegistry",
    "Command",
    "Directory",
    "Inbox",
    "Outcome",
    "Person",
    "Presenter",
    "Service",
    "ServiceSettings",
]

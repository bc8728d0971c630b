# Longer than 400 lines because it is the facade: one short method for each thing a front asks
# (Slack, the approval API, MCP, workers, the command line), each handing over to its part.
"""The facade: everything the front ends (Slack, the approval API, MCP, workers, the command
line) call. A front sees only this object and subscribes to its events; all state lives in the
store, so any number of services (fronts, workers, replicas) share one database."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from bot.agent.vocabulary import PersonAction
from bot.service.api_requests import ApiRequests
from bot.service.arguments import ArgumentsAccess
from bot.service.commands import Command, parse
from bot.service.control import RunControl
from bot.service.decide import Decider
from bot.service.events import E, Events, Handler, PolicyReloaded, RunHandedOff, RunReady
from bot.service.fair import FairGate
from bot.service.inbox import Inbox, inbox_of
from bot.service.outcome import Actor, Outcome
from bot.service.policy.effective import Policies
from bot.service.policy.file import PolicyError, load_policy
from bot.service.policy.report import rows as policy_rows
from bot.service.ports import Directory, Presenter
from bot.service.presenting import SafePresenter
from bot.service.registry import AgentRegistry
from bot.service.replies import ThreadReplies
from bot.service.runs.drive import RunDriver
from bot.service.runs.handoff import HandOff
from bot.service.runs.present import RunPresenter
from bot.service.runs.start import RunStarter
from bot.service.runs.tasks import Tasks
from bot.service.settings import ServiceSettings, Workspace
from bot.service.standing import StandingApprovals
from bot.service.start_gate import StartGate
from bot.service.sweeper import Sweeper
from store import ApprovalRequestRecord, Lease, RunRecord, StartLimitReached, Store

log = logging.getLogger("sayso.service")


class Service:
    """The use-cases of one process (a front, a worker); wired here, nowhere else."""

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
        self.settings = settings
        self.events = Events()
        self.workspace = Workspace(workspace_team_id)
        self.policies = Policies(settings.default_approvers, settings.approval_ttl)
        self.show = SafePresenter(presenter)
        self.tasks = Tasks()
        self.handoff = HandOff(store, agents, self.policies, self.events)
        self.standing = StandingApprovals(
            store, agents, directory, self.policies, self.show, settings
        )
        self.decider = Decider(
            store,
            agents,
            directory,
            self.policies,
            self.show,
            self.standing,
            self.events,
            self.workspace,
            drives_now=lambda: self.driver.drives_now(),
        )
        self._wire_runs()
        self._wire_people()
        self.events.subscribe(RunReady, self._run_ready)
        # Work after an ack (starting a run, a click's or a form's whole work: intake.py): a
        # burst queues here, in fair turns per channel and person, not crowding the loop.
        self.intake_turns = FairGate(max(2, min(8, settings.max_active_runs)))

    def _wire_runs(self) -> None:
        store, settings = self.store, self.settings
        self.presenting = RunPresenter(
            store, self.show, self.decider.approve_under_standing, settings.cpu_slots
        )
        self.driver = RunDriver(
            store,
            self.agents,
            self.policies,
            self.show,
            self.presenting,
            self.handoff,
            self.tasks,
            settings,
        )
        self.starter = RunStarter(store, self.policies, self.show, self.driver, self.handoff)
        self.sweeper = Sweeper(
            store, self.decider, self.driver, self.presenting, self.show, self.events, settings
        )

    def _wire_people(self) -> None:
        store, agents, directory, settings = self.store, self.agents, self.directory, self.settings
        self.gate = StartGate(store, directory, settings.rate_limit)
        self.control = RunControl(
            store, agents, directory, self.show, self.driver, self.gate, self.workspace, settings
        )
        self.arguments_access = ArgumentsAccess(store, directory)
        self.replies = ThreadReplies(
            store, agents, self.gate, self.starter, self.decide, self.workspace
        )
        self.api = ApiRequests(
            store,
            self.show,
            self.decider,
            self.events,
            self.policies,
            default_channel=settings.default_channel,
            callback_hosts=settings.callback_hosts,
        )

    # -- wiring for front ends and workers ---------------------------------------------------

    @property
    def workspace_team_id(self) -> str | None:
        return self.workspace.team_id

    @workspace_team_id.setter
    def workspace_team_id(self, value: str | None) -> None:
        self.workspace.team_id = value

    def subscribe(self, kind: type[E], handler: Handler[E]) -> None:
        """Be told of the service's events (see bot/service/events.py)."""
        self.events.subscribe(kind, handler)

    def hand_runs_to_workers(self, wake: Callable[[str], None], local: Any = None) -> None:
        """Make this a front whose runs are driven by workers: new and ready runs are saved
        ready in the store, `wake` wakes a local worker (remote ones hear NOTIFY); `local`
        (the process's own worker, a `LocalWorker`) takes the runs this front claims."""
        self.handoff.active, self.handoff.local = True, local
        self.events.subscribe(RunHandedOff, lambda event: wake(event.run_id))

    async def _run_ready(self, event: RunReady) -> None:
        await self.driver.ready(event.run_id, event.lease)

    @property
    def busy(self) -> bool:
        """Is background work (a run, a continuation) going on?"""
        return self.tasks.busy

    async def idle(self, limit: float = 30.0) -> None:
        """Wait until no background work is left (tests, shutdown)."""
        await self.tasks.idle(limit)

    def ready_listener(self, wake: Callable[[str | None], None]) -> Any:
        """A listener waking `wake` when a run becomes ready (PostgreSQL NOTIFY)."""
        return self.store.runs.ready_listener(wake)

    async def claim_ready(self, limit: int) -> list[asyncio.Task[Any]]:
        """A worker claims up to `limit` ready runs and drives them; their tasks."""
        return [self.drive_claimed(lease) for lease in await self.store.runs.claim_ready(limit)]

    def drive_claimed(self, lease: Lease) -> asyncio.Task[Any]:
        """Drive a run claimed for this process (by a worker, or by its front)."""
        return self.driver.drive_claimed(lease)

    async def drain(self, grace: float) -> None:
        await self.driver.drain(grace)

    async def continue_run(self, run_id: str, *, retry: bool = False) -> bool:
        """Continue a ready run here (or hand it to the workers); False when it is held."""
        return await self.driver.continue_run(run_id, retry=retry)

    # -- starting runs ------------------------------------------------------------------------

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
        run_id: str | None = None,
    ) -> Outcome:
        """Start a run of the command's agent, if this person may here and now.

        "started" with the new run; "denied" with a message for that person alone. With
        `run_id` (a replayed interaction's), a run of that id already there is the answer."""
        agent = command.agent
        assert agent is not None
        actor = Actor(user_id=requester, team_id=team_id)
        async with self.intake_turns.turn(channel_id, requester):  # its reads and root too
            if run_id and (existing := await self.store.runs.get(run_id)):
                return Outcome("started", run=existing)
            refusal = await self.gate.check_person(
                agent, actor, workspace_team_id=self.workspace.team_id, channel_id=channel_id
            )
            if refusal is not None:
                return refusal
            try:
                run_id = await self.starter.start_run(
                    agent,
                    command.text,
                    requester=requester,
                    team_id=team_id,
                    channel_id=channel_id,
                    thread_ts=thread_ts,
                    limit=self.gate.start_limit(),
                    run_id=run_id,
                )
            except StartLimitReached as reached:
                return await self.gate.limited(requester, reached)
            return Outcome("started", run=await self.store.runs.get(run_id))

    async def thread_reply(
        self,
        *,
        channel_id: str,
        thread_ts: str,
        user_id: str,
        team_id: str | None,
        text: str,
        ts: str,
        run_id: str | None = None,
    ) -> Outcome:
        """A person replied in a thread: answer a review or a single question, or follow up
        (as the run `run_id`, when given: a replay finds it instead of starting another).

        Not ok with a message: tell that person alone. "ignored": not a reply for sayso."""
        if run_id and (existing := await self.store.runs.get(run_id)):
            return Outcome("started", run=existing)
        return await self.replies.reply(
            channel_id=channel_id,
            thread_ts=thread_ts,
            user_id=user_id,
            team_id=team_id,
            text=text,
            run_id=run_id,
        )

    # -- approval requests and runs, for the front ends -----------------------------------

    async def approval_request_and_run(
        self, request_id: str
    ) -> tuple[ApprovalRequestRecord | None, RunRecord | None]:
        """The request and its run in one read (pass them as `read`, `read_run` to a `check`,
        `precheck`, `decide` or (the request) `view_arguments` that follows)."""
        return await self.store.requests.with_run(request_id) if request_id else (None, None)

    async def run_of(self, request: ApprovalRequestRecord) -> RunRecord | None:
        return await self.store.runs.get(request.spec.run_id)

    async def is_run_thread(self, channel_id: str, thread_ts: str) -> bool:
        """Is this thread the one of a run (where replies go to the run)?"""
        return await self.store.runs.for_thread(channel_id, thread_ts) is not None

    async def first_delivery(self, key: str) -> bool:
        """True the first time `key` (an event id, a request signature) is seen by any replica:
        the front end handles a delivery Slack retries, or a replica replays, only once."""
        return await self.store.first_delivery(key)

    async def view_arguments(
        self, request_id: str, actor: Actor, *, read: ApprovalRequestRecord | None = None
    ) -> Outcome:
        """May this person read the request's full arguments? (Its requester and the people
        who may decide it may.) "shown" carries the request and its run; refusals are audited.
        """
        return await self.arguments_access.view(request_id, actor, self.workspace.team_id, read)

    async def refuse_foreign_click(
        self, request: ApprovalRequestRecord, actor: Actor, action: str
    ) -> None:
        """On the record: a button on one card named another card's request (Slack never sends
        that: a forged or tampered click), so nothing was done."""
        await self.arguments_access.refused(request, actor, "button from another card", action)

    async def inbox(self, user_id: str, limit: int = 20) -> Inbox:
        """What the person may decide now (newest first), the total, and their recent runs."""
        return await inbox_of(
            self.store,
            self.agents,
            self.directory,
            self.workspace,
            self.settings,
            user_id,
            limit,
        )

    # -- deciding -------------------------------------------------------------------------

    async def check(
        self,
        request_id: str,
        actor: Actor,
        *,
        read: ApprovalRequestRecord | None = None,
        read_run: RunRecord | None = None,
    ) -> Outcome:
        """May this person decide this request now? (Before opening a form.) `read`, `read_run`:
        the request and its run as just read (`approval_request_and_run`), not read again."""
        return await self.decider.check(request_id, actor, read, read_run)

    async def precheck(
        self,
        request_id: str,
        actor: Actor,
        action: PersonAction,
        *,
        arguments: dict[str, Any] | None = None,
        reason: str | None = None,
        output: Any = None,
        read: ApprovalRequestRecord | None = None,
        read_run: RunRecord | None = None,
    ) -> Outcome:
        """Everything `decide` checks, without deciding (a reason only where one is needed)."""
        return await self.decider.precheck(
            request_id, actor, action, arguments, output, reason, read, read_run
        )

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
        """Record a decision; `standing`: an approval that also allows the tool in the
        request's thread for the time its policy says (a standing approval)."""
        async with self.intake_turns.turn(None, actor.user_id):
            return await self.decider.decide(
                request_id,
                actor,
                action,
                arguments=arguments,
                reason=reason,
                output=output,
                standing=standing,
                read=read,
                read_run=read_run,
            )

    async def revoke(self, standing_id: str, actor: Actor) -> Outcome:
        """Revoke a standing approval (the person who gave it, an admin or the tool's
        approvers may)."""
        return await self.standing.revoke(standing_id, actor, self.workspace.team_id)

    async def retry(self, run_id: str, actor: Actor) -> Outcome:
        """Run a failed run again (its requester, its approvers or an admin may)."""
        return await self.control.retry(run_id, actor)

    async def cancel(self, run_id: str, actor: Actor) -> Outcome:
        """The kill switch: end the run before its next tool and close its open requests."""
        return await self.control.cancel(run_id, actor)

    # -- the policy file ------------------------------------------------------------------

    def load_policy(self, path: str) -> None:
        """Use the policy file at `path` for new requests (raises `PolicyError` with the
        line); the effective policy is logged, one line per tool and rule."""
        self.policies.policy_file = load_policy(path, self.agents)
        for row in policy_rows(self.policies, self.agents):
            log.info("event=policy %s", " ".join(f"{k}={v.strip() or '-'}" for k, v in row.items()))

    def reload_policy(self) -> bool:
        """SIGHUP: read the file again; a bad file keeps the policy in force (and says why).
        Requests already created keep the policy they were created with. Subscribers of
        `PolicyReloaded` (an embedded worker's service) follow."""
        book = self.policies.policy_file
        if book is None:
            return False
        try:
            self.load_policy(book.path)
        except PolicyError as exc:
            log.warning("event=policy_reload_failed error=%s: the previous policy stays", exc)
            return False
        log.info("event=policy_reloaded path=%s", book.path)
        self.events.emit_now(PolicyReloaded(book.path))
        return True

    # -- sweeping: expiry, continuation of ready runs, crash recovery --------------------------

    async def sweep_once(self, now: datetime | None = None) -> None:
        await self.sweeper.sweep_once(now)

    def start_sweeper(self, interval: float) -> None:
        self.sweeper.start(interval)

    async def stop_sweeper(self) -> None:
        await self.sweeper.stop()

    async def close(self) -> None:
        await self.sweeper.stop()
        await self.tasks.shutdown()
        await self.show.close()

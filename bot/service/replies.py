"""Plain replies in a run's thread: they answer a review or the one question asked, or start a
follow-up run of the thread's agent with the thread so far as its history."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.agent.messages import complete_history
from bot.agent.schema_tool import is_api_run
from bot.agent.vocabulary import PersonAction
from bot.service.commands import MAX_REQUEST_CHARS
from bot.service.outcome import IGNORED, Actor, Outcome
from bot.service.registry import AgentRegistry
from bot.service.runs.start import RunStarter
from bot.service.settings import Workspace
from bot.service.start_gate import StartGate
from store import RunRecord, StartLimitReached, Store

Decide = Callable[..., Awaitable[Outcome]]
"""`Service.decide`: (request_id, actor, action, *, output=...) -> Outcome."""


class ThreadReplies:
    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        gate: StartGate,
        starter: RunStarter,
        decide: Decide,
        workspace: Workspace,
    ) -> None:
        self.store = store
        self.agents = agents
        self.gate = gate
        self.starter = starter
        self.decide = decide
        self.workspace = workspace

    async def reply(
        self,
        *,
        channel_id: str,
        thread_ts: str,
        user_id: str,
        team_id: str | None,
        text: str,
        run_id: str | None = None,
    ) -> Outcome:
        """Not ok with a message: tell that person alone. "ignored": not a reply for sayso."""
        run = await self.store.runs.for_thread(channel_id, thread_ts)
        text = text.strip()
        if run is None or not text or not user_id:
            return IGNORED
        actor = Actor(user_id=user_id, team_id=team_id)
        if run.status == "waiting_for_human":
            return await self._answer(run, actor, text)
        if run.status == "running":
            message = "The agent is still working in this thread; reply again once it answers."
            return Outcome("invalid", message, run=run)
        return await self._follow_up(run, actor, text, channel_id, thread_ts, run_id)

    async def _follow_up(
        self,
        run: RunRecord,
        actor: Actor,
        text: str,
        channel_id: str,
        thread_ts: str,
        run_id: str | None = None,
    ) -> Outcome:
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
            workspace_team_id=self.workspace.team_id,
            channel_id=channel_id,
            run_id=run.id,
        )
        if refusal is not None:
            return refusal
        previous = await self.store.runs.load_result(run.id)
        history = complete_history(previous.run.messages) if previous else []
        try:
            await self.starter.start_run(
                agent,
                text,
                requester=actor.user_id,
                team_id=actor.team_id,
                channel_id=channel_id,
                thread_ts=thread_ts,
                history=history,
                limit=self.gate.start_limit(),
                run_id=run_id,
            )
        except StartLimitReached as reached:
            return await self.gate.limited(actor.user_id, reached, run.id)
        return Outcome("started", run=run)

    async def _answer(self, run: RunRecord, actor: Actor, text: str) -> Outcome:
        """A reply where a run waits: it answers the review, or the one question asked."""
        result = await self.store.runs.load_result(run.id)
        api_request = is_api_run(run.agent_id)  # no saved state: its one request is the pause
        if not api_request and (result is None or result.run.pause is None):
            return IGNORED
        pending = [
            r for r in await self.store.requests.current(run.id) if r.state.status == "pending"
        ]
        reviews = [r for r in pending if r.spec.kind == "review"]
        questions = [r for r in pending if r.spec.kind == "hitl"]
        answer: tuple[str, PersonAction] | None = None
        if reviews:
            answer = (reviews[0].id, "review")
        elif len(questions) == 1 and len(pending) == 1:
            answer = (questions[0].id, "answer")
        if answer is not None:
            output: Any = text
            return await self.decide(answer[0], actor, answer[1], output=output)
        if questions:
            message = "Several requests are open here: use the buttons on their cards."
        else:
            message = "This run is waiting for a decision: use the buttons on the cards above."
        return Outcome("invalid", message, run=run)

# Longer than 400 lines because the framework agent's exactly-once resume (started calls saved
# before `resume`, recovery, history) reads best in one place.
"""Agents written with another framework, run by sayso from `/sayso` like its own agents.

A `FrameworkAgent` is a sayso `Agent` whose steps are taken by another framework (LangGraph,
the OpenAI Agents SDK, Pydantic AI). The framework decides which tool calls need a person;
sayso turns each such call into the usual card and keeps everything needed to continue in the
run's saved state, so a click on any replica continues it:

- `start` runs the framework on the conversation (the request, after earlier turns of the
  thread) and returns `Finished` or `Interrupted`;
- `resume` continues it from the saved framework state with one `CallDecision` per call.

Each adapter module (`bot.adapters.pydantic_ai`, `bot.adapters.langgraph`,
`bot.adapters.openai_agents`) subclasses it and offers `agent(obj, id=..., ...)`.

Exactly once: before `resume`, the approved calls are saved as started. A process that dies
while resuming leaves them so; whoever recovers the run does not resume again (the framework
may have run the tool) but asks again, with the calls marked interrupted, exactly as for a
native agent. A run whose `resume` raised fails; its Retry asks again the same way. Only
`start` is ever repeated (after a crash before the first pause): it has run no approved call.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.agent import Agent, Message, RunEvent, Tool, ToolCall
from bot.agent.accessor import AgentStateAccessor
from bot.agent.decisions import AgentToolDecision, AgentToolEdit, AgentToolOutput
from bot.agent.loop import CallPolicy, EventCallback
from bot.agent.schema_tool import ApiTool
from bot.agent.scrub import Failure
from bot.agent.state import (
    DEFAULT_REJECT_REASON,
    Pause,
    PendingToolCall,
    Run,
    RunResult,
    ToolCallDecision,
    Turn,
    TurnCall,
)
from bot.agent.util import maybe_await, utcnow
from bot.agent.vocabulary import ALL_APPROVAL_DECISIONS, ApprovalDecision

FRAMEWORK_STATE_KEY = "framework_state"
"""Where a framework run keeps the framework's own state: in its context, saved with the run
(and encrypted with it when a key is set)."""


@dataclass(frozen=True)
class FrameworkCall:
    """A tool call the framework holds for a person."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Interrupted:
    """The framework stopped for people: these calls, and the state to resume from."""

    calls: list[FrameworkCall]
    state: Any


@dataclass(frozen=True)
class Finished:
    """The framework answered: the text shown in the thread, and its state."""

    output: str
    state: Any = None


Step = Interrupted | Finished


@dataclass(frozen=True)
class CallDecision:
    """A person's decision on one `FrameworkCall`, in the framework's terms."""

    call_id: str
    type: Literal["approve", "edit", "reject"]
    arguments: dict[str, Any] | None = None  # what runs: the edited arguments, for an edit
    reason: str | None = None  # a rejection's message, or an approval's reason


@dataclass(frozen=True)
class FrameworkTool:
    """What sayso needs to know of a framework's tool: the card's text and the Edit form."""

    name: str
    description: str = ""
    schema: dict[str, Any] | None = None
    allowed_decisions: Sequence[ApprovalDecision] = field(default=ALL_APPROVAL_DECISIONS)

    def as_tool(self) -> Tool:
        spec = {
            "schema": self.schema,
            "description": self.description,
            "allowed_decisions": list(self.allowed_decisions),
        }
        return ApiTool(spec, self.name, "approval")


def agent_id_of(name: str | None, fallback: str) -> str:
    """A framework object's name as a sayso agent id (one lowercase word)."""
    word = re.sub(r"[^a-z0-9_-]+", "-", (name or "").strip().lower()).strip("-")
    return word or fallback


class FrameworkModel:
    """The model slot of a framework agent: the framework calls its own model."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def request(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self.name} agents call their own model: sayso never does")


class FrameworkAgent(Agent, ABC):
    """An agent whose steps another framework takes (see the module docstring).

    Args:
        id: the word people type after `/sayso`.
        framework: the framework's name, shown as the run's model.
        tools: the framework's tools that may need a person (card text and Edit form).
        approvers, allowed_users, channels, channel, description: as for `bot.Agent`.
    """

    def __init__(
        self,
        id: str,
        framework: str,
        tools: Iterable[FrameworkTool] = (),
        *,
        approvers: Sequence[str] = (),
        allowed_users: Sequence[str] = (),
        channels: Sequence[str] = (),
        channel: str | None = None,
        description: str = "",
    ) -> None:
        super().__init__(
            id,
            FrameworkModel(framework),
            approvers=approvers,
            allowed_users=allowed_users,
            channels=channels,
            channel=channel,
            description=description or f"A {framework} agent",
        )
        for t in tools:
            self.tools[t.name] = t.as_tool()

    # -- what an adapter implements -------------------------------------------------------

    @abstractmethod
    async def start(self, conversation: list[Message], context: dict[str, Any]) -> Step:
        """Run the framework on the conversation (its last message is the request)."""
        raise NotImplementedError

    @abstractmethod
    async def resume(
        self, state: Any, decisions: list[CallDecision], context: dict[str, Any]
    ) -> Step:
        """Continue the framework from `state` with one decision per interrupted call."""
        raise NotImplementedError

    def tool_for(self, call: FrameworkCall) -> Tool:
        """The card's tool for a call (a tool the adapter did not list gets a plain one)."""
        known = self.tools.get(call.name)
        if known is None:
            known = self.tools[call.name] = FrameworkTool(call.name).as_tool()
        return known

    # -- the sayso Agent API, driven by the framework --------------------------------------

    async def run(
        self,
        input: str | Sequence[Message],
        *,
        context: dict[str, Any] | None = None,
        state: AgentStateAccessor | None = None,
        run_id: str | None = None,
        require_approval: CallPolicy | None = None,
        on_event: EventCallback | None = None,
    ) -> RunResult:
        """Start a run: the framework's calls needing a person pause it."""
        result = await self._begin(input, context, run_id, state)
        return await self._start(result, state, on_event)

    async def continue_run(
        self,
        run: RunResult | None = None,
        *,
        run_id: str | None = None,
        state: AgentStateAccessor | None = None,
        approvals: Iterable[AgentToolDecision] = (),
        rejections: Iterable[AgentToolDecision] = (),
        edits: Iterable[AgentToolEdit] = (),
        tool_outputs: Iterable[AgentToolOutput] = (),
        human_input: str | None = None,
        retry: bool = False,
        require_approval: CallPolicy | None = None,
        on_event: EventCallback | None = None,
    ) -> RunResult:
        """Continue with the people's decisions, or retry a failed run (see the module)."""
        result = await self._load(run, run_id, state)
        r = result.run
        if retry:
            if r.status != "failed":
                raise ValueError(f"Run {r.id} has not failed ({r.status}); nothing to retry")
            return await self._again(result, state, on_event)
        if r.status != "waiting_for_human" or r.pause is None or r.turn is None:
            raise ValueError(f"Run {r.id} is not waiting for human input (status: {r.status})")
        if list(tool_outputs):
            raise ValueError(f"Run {r.id} waits for approvals, not tool outputs")
        for d in approvals:
            by = d.decided_by
            self.record(result, ToolCallDecision.approve(d.call_id, reason=d.reason, decided_by=by))
        for d in rejections:
            by = d.decided_by
            self.record(result, ToolCallDecision.reject(d.call_id, d.reason, decided_by=by))
        for e in edits:
            self.record(result, e)
        missing = [p.call.id for p in r.pause.pending_tool_calls if p.decision is None]
        if missing:
            raise ValueError(f"Missing approval decision for tool call {missing[0]}")
        decisions = self._decisions(result)
        r.status, r.pause, r.error = "running", None, None
        r.updated_at = utcnow()
        if state is not None:  # the approved calls are started from here on: never resumed twice
            await state.save(result)
        try:
            step = await self.resume(r.context.get(FRAMEWORK_STATE_KEY), decisions, r.context)
        except Exception as exc:
            return await self._fail(result, state, on_event, exc, "resuming")
        return await self._after(result, state, on_event, step)

    async def recover(
        self,
        run: RunResult | None = None,
        *,
        run_id: str | None = None,
        state: AgentStateAccessor | None = None,
        on_event: EventCallback | None = None,
    ) -> RunResult:
        """Continue a run left `running` by a process that died (see the module)."""
        result = await self._load(run, run_id, state)
        if result.run.status != "running":
            raise ValueError(f"Run {result.run.id} is not running (status: {result.run.status})")
        return await self._again(result, state, on_event)

    # -- steps ----------------------------------------------------------------------------

    async def _again(
        self, result: RunResult, state: AgentStateAccessor | None, on_event: EventCallback | None
    ) -> RunResult:
        """Take up a run whose last step did not finish: ask again about calls that may
        have run, or start over if none was approved yet."""
        r = result.run
        if r.turn is not None and any(c.state == "started" for c in r.turn.calls):
            return await self._ask_again(result, state, on_event)
        r.status, r.error, r.turn, r.pause = "running", None, None, None
        return await self._start(result, state, on_event)

    async def _start(
        self, result: RunResult, state: AgentStateAccessor | None, on_event: EventCallback | None
    ) -> RunResult:
        r = result.run
        try:
            step = await self.start(list(r.messages), r.context)
        except Exception as exc:
            return await self._fail(result, state, on_event, exc, "starting")
        return await self._after(result, state, on_event, step)

    async def _after(
        self,
        result: RunResult,
        state: AgentStateAccessor | None,
        on_event: EventCallback | None,
        step: Step,
    ) -> RunResult:
        """Save where the framework stopped: an answer, or a pause with one call per card."""
        r = result.run
        if isinstance(step, Interrupted) and not step.calls:
            error = ValueError("it stopped for people without any call to decide")
            return await self._fail(result, state, on_event, error, "running")
        r.step += 1
        r.context[FRAMEWORK_STATE_KEY] = step.state
        if r.turn is not None:
            r.messages.extend(_transcript(r.turn))
        if isinstance(step, Finished):
            r.messages.append(Message(role="assistant", content=step.output))
            r.status, r.turn, r.pause = "completed", None, None
            result.output = step.output
            await self._save(result, state)
            await _emit(on_event, "completed", r.id)
            return result
        calls = [ToolCall(id=c.id, name=c.name, arguments=dict(c.arguments)) for c in step.calls]
        for c in step.calls:
            self.tool_for(c)
        r.turn = Turn(
            step=r.step,
            calls=[TurnCall(call=c, kind="approval", state="pending") for c in calls],
        )
        self._pause(r, [PendingToolCall(call=c, kind="approval") for c in calls])
        await self._save(result, state)
        await _emit(on_event, "paused", r.id)
        return result

    async def _ask_again(
        self, result: RunResult, state: AgentStateAccessor | None, on_event: EventCallback | None
    ) -> RunResult:
        """The calls that were being carried out may have run: a person decides again."""
        r = result.run
        assert r.turn is not None
        pending = []
        for tc in r.turn.calls:
            if tc.state != "started":
                continue
            tc.state, tc.interrupted = "pending", True
            shown = tc.call
            if tc.decision is not None and tc.decision.type == "edit":
                shown = tc.call.model_copy(update={"arguments": dict(tc.arguments)})
            pending.append(PendingToolCall(call=shown, kind="approval", interrupted=True))
        self._pause(r, pending)
        await self._save(result, state)
        await _emit(on_event, "paused", r.id)
        return result

    def _pause(self, r: Run, pending: list[PendingToolCall]) -> None:
        r.pauses += 1
        r.status, r.error = "waiting_for_human", None
        r.pause = Pause(kind="tool_approval", step=r.step, seq=r.pauses, pending_tool_calls=pending)

    def _decisions(self, result: RunResult) -> list[CallDecision]:
        """Every call of the turn in the framework's terms (the framework wants one decision
        per call it held, including calls rejected before a crash); approved calls become
        started."""
        r = result.run
        assert r.pause is not None and r.turn is not None
        out: list[CallDecision] = []
        for tc in r.turn.calls:
            p = r.pause.pending(tc.call.id)
            d = p.decision if p is not None else tc.decision
            assert d is not None, f"call {tc.call.id} has no decision"
            tc.decision = d
            if d.type == "reject":
                reason = d.reason or DEFAULT_REJECT_REASON
                out.append(CallDecision(tc.call.id, "reject", reason=reason))
                tc.content = json.dumps({"error": reason})
                tc.state, tc.finished_at = "finished", tc.finished_at or utcnow()
                continue
            if p is None:  # decided before an interruption and not asked again: ran, not again
                continue
            if d.type == "edit":
                tc.arguments = self.check_decision(result, d).arguments or {}
            else:  # as shown: an interrupted edited call shows the arguments it ran with
                tc.arguments = dict(p.call.arguments)
            kind: Literal["approve", "edit"] = (
                "edit" if tc.arguments != tc.call.arguments else "approve"
            )
            out.append(CallDecision(tc.call.id, kind, dict(tc.arguments), d.reason))
            tc.state, tc.started_at = "started", utcnow()
        return out

    async def _fail(
        self,
        result: RunResult,
        state: AgentStateAccessor | None,
        on_event: EventCallback | None,
        exc: Exception,
        doing: str,
    ) -> RunResult:
        failure = Failure.of(exc)
        r = result.run
        r.status, r.pause = "failed", None
        r.error = f"{self.model} failed while {doing}: {failure.shown}"
        await self._save(result, state)
        await _emit(on_event, "failed", r.id, detail=r.error)
        return result

    async def _save(self, result: RunResult, state: AgentStateAccessor | None) -> None:
        result.run.updated_at = utcnow()
        if state is not None:
            await state.save(result)


async def _emit(on_event: EventCallback | None, type_: str, run_id: str, **kw: Any) -> None:
    if on_event is None:
        return
    try:
        await maybe_await(on_event(RunEvent(type=type_, run_id=run_id, **kw)))
    except Exception:  # a progress callback never breaks the run
        pass


def _transcript(turn: Turn) -> list[Message]:
    """A finished turn as messages: the calls and how each ended (the run's checklist and
    history read them; the framework keeps its own)."""
    calls = [tc.call for tc in turn.calls]
    ended = [
        Message(
            role="tool",
            tool_call_id=tc.call.id,
            name=tc.call.name,
            content=tc.content or json.dumps({"status": "done"}),
        )
        for tc in turn.calls
    ]
    return [Message(role="assistant", tool_calls=calls), *ended]


def decisions_by_call(decisions: Iterable[CallDecision]) -> Mapping[str, CallDecision]:
    return {d.call_id: d for d in decisions}

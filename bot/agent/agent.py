# Longer than 400 lines because `Agent` is the runtime's public face: run, continue, recover and
# their argument checks, each documented where a user reads it.
"""`Agent`: an LLM with tools whose runs pause for people and continue from saved data."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from bot.agent.accessor import AgentStateAccessor
from bot.agent.decisions import (
    AgentToolDecision,
    AgentToolEdit,
    AgentToolOutput,
    HumanReviewHook,
)
from bot.agent.history import DEFAULT_MAX_HISTORY_CHARS
from bot.agent.loop import CallPolicy, Driver, EventCallback, apply_decision
from bot.agent.messages import Message, ToolCall
from bot.agent.models import Model, ModelSettings, ToolSpec, resolve_model
from bot.agent.state import RecordableDecision, Run, RunResult, ToolCallDecision
from bot.agent.tools import ApprovalPolicy, Tool
from bot.agent.util import maybe_await
from bot.agent.vocabulary import ENDED_RUN_STATUSES, ToolKind


async def _evaluate(policy: Any, call: ToolCall, context: dict[str, Any]) -> bool:
    if callable(policy):
        return bool(await maybe_await(policy(call, context)))
    return bool(policy)


class Agent:
    """An agent definition. It holds no run state: runs are `RunResult` data.

    Args:
        id: a word naming the agent (it is stored with every run it makes).
        model: a model name such as `"openai:gpt-4o-mini"`, or a `Model` instance.
        instructions: the system prompt.
        tools: the tools the model may call (functions decorated with `@tool`).
        require_approval: the approval policy of tools that set none themselves: True, or a
            callable `(call, context) -> bool` (maybe async), evaluated once per call.
        human_review: a callback given a `HumanReviewContext` after each model response; it
            returns an `AgentHumanReviewRequest` to pause the run for a person, or None.
        max_steps: the most model requests a run may make before it fails.
        approvers: Slack user or user group ids who may decide this agent's calls.
        description: one line shown to people (default: the first line of `instructions`).
        output_type: a type the final answer is parsed into (JSON), e.g. a pydantic model.
        model_settings: timeouts, retries and sampling settings for the model.
        allowed_users: Slack user or user group ids who may start runs and follow-ups
            (default: every full member of the workspace). Guests and people from other
            workspaces start runs only when listed by id.
        channels: Slack channel ids the agent answers in (default: every channel).
        max_history_chars: the most characters of conversation sent to the model; the oldest
            turns are dropped beyond it (whole turns, with a note telling the model).
        channel: a Slack channel id for cards that need someone other than the requester when
            the run is where only the requester sees it (the assistant side pane).
    """

    def __init__(
        self,
        id: str,
        model: str | Model,
        instructions: str = "",
        tools: Sequence[Tool] = (),
        *,
        require_approval: ApprovalPolicy = False,
        human_review: HumanReviewHook | None = None,
        max_steps: int = 20,
        approvers: Sequence[str] = (),
        description: str = "",
        output_type: Any = None,
        model_settings: ModelSettings | None = None,
        allowed_users: Sequence[str] = (),
        channels: Sequence[str] = (),
        max_history_chars: int = DEFAULT_MAX_HISTORY_CHARS,
        channel: str | None = None,
    ) -> None:
        if not id or any(ch.isspace() for ch in id):
            raise ValueError(f"Agent id {id!r} must be a non-empty word without spaces")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if max_history_chars < 1_000:
            raise ValueError("max_history_chars must be at least 1000")
        for name, ids in (("allowed_users", allowed_users), ("channels", channels)):
            if isinstance(ids, str):
                raise TypeError(f"{name} is a list of Slack ids, not one string")
        self.id = id
        self.model = model if isinstance(model, str) else getattr(model, "name", "custom")
        self._model: Model | None = None if isinstance(model, str) else model
        self._model_spec = model
        self.instructions = instructions
        self.tools: dict[str, Tool] = {}
        for t in tools:
            if not isinstance(t, Tool):
                raise TypeError(f"{t!r} is not a tool: decorate it with @tool")
            if t.name in self.tools:
                raise ValueError(f"Agent {id}: two tools are named {t.name!r}")
            self.tools[t.name] = t
        self.require_approval = require_approval
        self.human_review = human_review
        self.max_steps = max_steps
        self.approvers = tuple(approvers)
        self.description = description or instructions.split("\n")[0][:150]
        self.output_type = output_type
        self.model_settings = model_settings or ModelSettings()
        self.allowed_users = tuple(allowed_users)
        self.channels = tuple(channels)
        self.max_history_chars = max_history_chars
        self.channel = channel

    # -- configuration -------------------------------------------------------------------

    @property
    def model_client(self) -> Model:
        if self._model is None:
            self._model = resolve_model(self._model_spec)
        return self._model

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.parameters) for t in self.tools.values()]

    def parse_output(self, content: str | None) -> Any:
        if self.output_type is None or content is None:
            return content
        try:
            return TypeAdapter(self.output_type).validate_json(content)
        except ValidationError:
            return content

    async def call_kind(
        self, call: ToolCall, context: dict[str, Any], call_policy: CallPolicy | None = None
    ) -> ToolKind:
        """What a call needs: evaluated once per call; the outcome is stored in the run."""
        tool = self.tools[call.name]
        if tool.kind in ("manual", "hitl"):
            return tool.kind
        if call_policy is not None:
            needs = await _evaluate(call_policy, call, context)
        elif tool.require_approval is not None:
            needs = await _evaluate(tool.require_approval, call, context)
        elif tool.kind == "approval":
            needs = True
        else:
            needs = await _evaluate(self.require_approval, call, context)
        return "approval" if needs else "auto"

    # -- decisions -----------------------------------------------------------------------

    def check_decision(self, result: RunResult, decision: RecordableDecision) -> ToolCallDecision:
        """Validate a decision against the paused run and the tool (edits, outputs).

        Returns the decision as a `ToolCallDecision` with normalized arguments/output; raises
        `ValueError` naming what is wrong (`TypeError` for an `AgentToolDecision`, which does
        not say whether it approves or rejects). Nothing is changed.
        """
        given, pending = result.resolve(decision)
        tool = self.tools.get(pending.call.name)
        if given.type == "edit":
            if tool is None:
                raise ValueError(f"Tool {pending.call.name} is not defined on agent {self.id}")
            args = tool.validate(given.arguments or {})
            return given.model_copy(update={"arguments": args})
        if given.type == "output" and tool is not None:
            return given.model_copy(update={"output": tool.parse_output(given.output)})
        return given

    def record(self, result: RunResult, decision: RecordableDecision) -> ToolCallDecision:
        """Validate and record one decision on a paused run (decisions may arrive one by one).

        Args:
            result: the paused run.
            decision: a `ToolCallDecision`, an `AgentToolEdit` or an `AgentToolOutput`.

        Returns the decision as recorded (edited arguments validated against the tool).
        """
        checked = self.check_decision(result, decision)
        result.record(checked)
        return checked

    # -- running -------------------------------------------------------------------------

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
        """Start a run. It returns completed, failed, or `waiting_for_human` with its pause."""
        result = await self._begin(input, context, run_id, state)
        return await Driver(self, result, state, require_approval, on_event).drive()

    async def _begin(
        self,
        input: str | Sequence[Message],
        context: dict[str, Any] | None,
        run_id: str | None,
        state: AgentStateAccessor | None,
    ) -> RunResult:
        """A new run of the input, saved (so it can be recovered) before its first step."""
        context = dict(context or {})
        try:
            json.dumps(context)
        except (TypeError, ValueError):
            raise ValueError("The run context must be JSON-serializable") from None
        if isinstance(input, str):
            messages = [Message(role="user", content=input)]
        else:
            messages = [m for m in input if m.role != "system"]
        run = Run(
            id=run_id or uuid.uuid4().hex,
            agent_id=self.id,
            model=self.model,
            messages=messages,
            max_steps=self.max_steps,
            context=context,
        )
        result = RunResult(run=run)
        if state is not None:
            await state.save(result)
        return result

    async def _load(
        self, run: RunResult | None, run_id: str | None, state: AgentStateAccessor | None
    ) -> RunResult:
        if run is None:
            if run_id is None or state is None:
                raise ValueError("Pass run=<RunResult>, or run_id=... with state=<accessor>")
            loaded = await state.load(run_id)
            if loaded is None:
                raise ValueError(f"Run {run_id} not found")
            run = loaded
        # a deep copy (the caller's run stays as it was); through pydantic-core, a third of
        # the CPU of `model_copy(deep=True)`'s Python deepcopy
        result = RunResult.model_validate(run.model_dump())
        if result.run.agent_id != self.id:
            raise ValueError(
                f"Run {result.run.id} was made by agent {result.run.agent_id!r}; "
                f"agent {self.id!r} cannot continue it"
            )
        return result

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
        # Longer than 60 lines because its many keyword arguments are the public API, each checked.
        """Continue a paused run with decisions (recorded ones plus these), or retry a failed one.

        Everything is validated before anything changes: on a `ValueError` the given run is
        untouched and nothing is saved.

        Args:
            run: the paused (or failed) run; or pass `run_id` and `state` instead.
            run_id: the id of a run to load from `state`.
            state: where runs are kept; the continued run is saved there after every step.
            approvals: calls approved as proposed.
            rejections: calls rejected; each one's `reason` is what the model reads.
            edits: calls approved with replaced arguments (validated against the tool); each
                one's `reason` reaches the model with the tool's result.
            tool_outputs: the outputs of manual and hitl calls.
            human_input: the answer to a human review, or a note the model reads after the
                tool results.
            retry: continue a failed run from where it failed (no decisions).
            require_approval: a policy for new calls of this stretch, in place of the tools'.
            on_event: a callback (sync or async) told of progress (`RunEvent`).

        Returns the run completed, failed, or waiting for people again.
        """
        result = await self._load(run, run_id, state)
        r = result.run
        if retry:
            if r.status != "failed":
                raise ValueError(
                    f"Run {r.id} has not failed (status: {r.status}); nothing to retry"
                )
        elif r.status != "waiting_for_human" or r.pause is None:
            raise ValueError(f"Run {r.id} is not waiting for human input (status: {r.status})")
        else:
            decisions: list[RecordableDecision] = [
                *(
                    ToolCallDecision.approve(d.call_id, reason=d.reason, decided_by=d.decided_by)
                    for d in approvals
                ),
                *(
                    ToolCallDecision.reject(d.call_id, d.reason, decided_by=d.decided_by)
                    for d in rejections
                ),
                *edits,
                *tool_outputs,
            ]
            if r.pause.kind == "human_review":
                _answer_review(r, decisions, human_input)
            else:
                self._apply(result, decisions, human_input)
        return await Driver(self, result, state, require_approval, on_event).drive()

    def _apply(
        self, result: RunResult, decisions: list[RecordableDecision], human_input: str | None
    ) -> None:
        """Record the decisions, check that every pending call has one, and move each call of
        the turn to its next state."""
        r = result.run
        assert r.pause is not None and r.turn is not None
        for d in decisions:
            self.record(result, d)
        for p in r.pause.pending_tool_calls:
            if p.decision is None:
                if p.kind == "approval":
                    raise ValueError(f"Missing approval decision for tool call {p.call.id}")
                raise ValueError(f"Missing output for tool call {p.call.id}")
        for p in r.pause.pending_tool_calls:
            assert p.decision is not None
            tc = r.turn.get(p.call.id)
            assert tc is not None
            args = None
            if p.decision.type == "edit":
                args = self.check_decision(result, p.decision).arguments
            apply_decision(tc, p.decision, args)
        if human_input:
            r.turn.human_input = human_input

    async def recover(
        self,
        run: RunResult | None = None,
        *,
        run_id: str | None = None,
        state: AgentStateAccessor | None = None,
        on_event: EventCallback | None = None,
    ) -> RunResult:
        """Continue a run left `running` by a process that died, from its last saved state.

        Calls that had started but not finished are not re-run: the run pauses with them
        pending approval and marked `interrupted`.

        Args:
            run: the run as last saved; or pass `run_id` and `state` instead.
            run_id: the id of a run to load from `state`.
            state: where runs are kept; the recovered run is saved there after every step.
            on_event: a callback (sync or async) told of progress (`RunEvent`).

        Returns the run completed, failed, or waiting for people.
        """
        result = await self._load(run, run_id, state)
        if result.run.status != "running":
            raise ValueError(f"Run {result.run.id} is not running (status: {result.run.status})")
        return await Driver(self, result, state, None, on_event).drive()

    async def cancel(
        self,
        run: RunResult | None = None,
        *,
        run_id: str | None = None,
        state: AgentStateAccessor | None = None,
        reason: str = "Cancelled",
    ) -> RunResult:
        """End a run that has not finished; nothing pending will run.

        Args:
            run: the run; or pass `run_id` and `state` instead.
            run_id: the id of a run to load from `state`.
            state: where runs are kept; the cancelled run is saved there.
            reason: kept as the run's `error`.

        Returns the cancelled run. Raises `ValueError` for a run that has already ended.
        """
        result = await self._load(run, run_id, state)
        if result.run.status in ENDED_RUN_STATUSES:
            raise ValueError(f"Run {result.run.id} has already ended (status: {result.run.status})")
        result.run.status = "cancelled"
        result.run.error = reason
        result.run.pause = None
        if state is not None:
            await state.save(result)
        return result

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, model={self.model!r}, tools={list(self.tools)})"


def _answer_review(r: Run, decisions: list[RecordableDecision], human_input: str | None) -> None:
    """A human review takes an answer (`human_input`), never a decision on a call."""
    if decisions:
        raise ValueError(f"Unknown tool call {decisions[0].call_id} for run {r.id}")
    if not human_input:
        raise ValueError(f"Run {r.id} is waiting for human input")
    if r.turn is not None:
        r.turn.human_input = human_input
    else:
        r.messages.append(Message(role="user", content=human_input))

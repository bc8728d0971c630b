# Longer than 400 lines because the driver's steps (model turn, tool calls, pause, saves) share
# its state; split, each piece would pass that state around.
"""The agent loop: model turns, tool calls, pauses for people, and saved progress.

Invariants:
- every tool call of an assistant message gets exactly one tool result before the next
  model request (results are appended together once the whole turn is finished);
- a call is marked `started` and saved *before* its body runs; a call found `started` on
  entry (the process died inside the body) is never re-run silently: it pauses as an
  interrupted approval so a person decides.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bot.agent.decisions import AgentHumanReviewRequest, HumanReviewContext, RunEvent
from bot.agent.errors import ModelError
from bot.agent.history import HISTORY_NOTE, bound_history
from bot.agent.messages import Message, ModelResponse, ToolCall
from bot.agent.models.base import TextCallback, respond
from bot.agent.scrub import Failure
from bot.agent.state import (
    DEFAULT_REJECT_REASON,
    HumanReview,
    Pause,
    PendingToolCall,
    RunResult,
    ToolCallDecision,
    Turn,
    TurnCall,
)
from bot.agent.tools import ToolContext, render_output
from bot.agent.util import maybe_await, utcnow
from bot.agent.vocabulary import PauseKind, PendingKind

if TYPE_CHECKING:
    from bot.agent.accessor import AgentStateAccessor
    from bot.agent.agent import Agent

log = logging.getLogger("sayso.agent")

EventCallback = Callable[[RunEvent], Awaitable[None] | None]
CallPolicy = Callable[[ToolCall, dict[str, Any]], Any]

RETRY_AFTER_MAX = 120.0  # seconds: a longer Retry-After is capped (a run is not parked for hours)

REJECTION_NOTE = (
    'When a tool result is {"error": ...} because a person rejected or did not approve the '
    "call, do not retry that call unless the user asks you to; tell the user what happened."
)


def pause_kind(pending: list[PendingToolCall]) -> PauseKind:
    kinds = {p.kind for p in pending}
    if kinds == {"approval"}:
        return "tool_approval"
    if "approval" not in kinds:
        return "external_output"
    return "tool_input"


def apply_decision(
    tc: TurnCall, decision: ToolCallDecision, validated_args: dict[str, Any] | None
) -> None:
    """Turn a person's decision into the call's next state (ready to run, or finished)."""
    earlier, tc.decision = tc.decision, decision
    if decision.type == "approve":
        if tc.interrupted and earlier is not None and earlier.type == "edit":
            # runs again as it ran before: with the arguments a reviewer chose, not the model's
            tc.decision = decision.model_copy(update={"type": "edit", "arguments": tc.arguments})
        else:
            tc.arguments = dict(tc.call.arguments) if validated_args is None else validated_args
        tc.state = "ready"
    elif decision.type == "edit":
        tc.arguments = (
            validated_args if validated_args is not None else dict(decision.arguments or {})
        )
        tc.state = "ready"
    elif decision.type == "reject":
        tc.content = json.dumps({"error": decision.reason or DEFAULT_REJECT_REASON})
        tc.state = "finished"
        tc.finished_at = utcnow()
    else:
        tc.content = render_output(decision.output)
        tc.state = "finished"
        tc.finished_at = utcnow()


def _pending_kind(tc: TurnCall) -> PendingKind:
    """What a pending call waits for (a call that runs by itself never waits)."""
    assert tc.kind != "auto", f"call {tc.call.id} runs by itself: it never waits"
    return tc.kind


def _shown(tc: TurnCall) -> ToolCall:
    """The call a person decides on: an interrupted edited call shows the arguments it ran with."""
    if tc.interrupted and tc.decision is not None and tc.decision.type == "edit":
        return tc.call.model_copy(update={"arguments": dict(tc.arguments)})
    return tc.call


class Driver:
    """Runs one stretch of a run: until it pauses, completes or fails."""

    def __init__(
        self,
        agent: Agent,
        result: RunResult,
        state: AgentStateAccessor | None,
        call_policy: CallPolicy | None = None,
        on_event: EventCallback | None = None,
    ) -> None:
        self.agent = agent
        self.result = result
        self.run = result.run
        self.state = state
        self.call_policy = call_policy
        self.on_event = on_event
        # An `on_event` callback with an `on_text` attribute also receives the answer's text
        # as the model writes it (first attempt only: a retry never streams text twice).
        self.on_text: TextCallback | None = getattr(on_event, "on_text", None)

    async def save(self) -> None:
        self.run.updated_at = utcnow()
        if self.state is not None:
            await self.state.save(self.result)

    async def emit(self, type_: str, **kw: Any) -> None:
        if self.on_event is None:
            return
        try:  # sync or async callbacks
            await maybe_await(self.on_event(RunEvent(type=type_, run_id=self.run.id, **kw)))
        except Exception:  # a progress callback must never break the run
            log.exception("event=callback_failed run_id=%s type=%s", self.run.id, type_)

    async def _text(self, delta: str) -> None:
        if self.on_text is None:
            return
        try:
            await self.on_text(delta)
        except Exception:  # showing text as it comes must never break the run
            log.exception("event=text_callback_failed run_id=%s", self.run.id)
            self.on_text = None

    async def drive(self) -> RunResult:
        run = self.run
        run.status = "running"
        run.pause = None
        run.error = None
        while True:
            if run.turn is not None:
                if await self._process_turn():
                    return self.result
                continue
            if run.step >= run.max_steps:
                return await self._fail(
                    f"Run {run.id} stopped after max_steps={run.max_steps} model steps "
                    "without a final answer. Raise max_steps or simplify the request."
                )
            try:
                response = await self._request_model()
            except Exception as exc:  # provider failures, timeouts, script bugs
                failure = Failure.of(exc)
                return await self._fail(f"Model request failed: {failure.shown}", failure)
            if await self._handle_response(response):
                return self.result

    async def _request_model(self) -> ModelResponse:
        agent = self.agent
        settings = agent.model_settings
        system = "\n\n".join(p for p in (agent.instructions, REJECTION_NOTE) if p)
        room = agent.max_history_chars - len(system) - len(HISTORY_NOTE) - 2
        history, dropped = bound_history(self.run.messages, room)
        if dropped:
            system = f"{system}\n\n{HISTORY_NOTE}"
            log.info("event=history_bounded run_id=%s dropped_messages=%d", self.run.id, dropped)
        messages = [Message(role="system", content=system), *history]
        attempt = 0
        while True:
            try:
                # an overall deadline for every provider (the HTTP timeout is per read)
                on_text = self._text if self.on_text is not None and attempt == 0 else None
                return await asyncio.wait_for(
                    respond(agent.model_client, messages, agent.tool_specs, settings, on_text),
                    timeout=settings.timeout,
                )
            except TimeoutError:
                error = ModelError(
                    f"Model request timed out after {settings.timeout}s", retryable=True
                )
            except ModelError as exc:
                error = exc
            if not error.retryable or attempt >= settings.max_retries:
                raise error
            backoff = min(settings.backoff_max, settings.backoff_base * (2**attempt))
            if error.retry_after is not None:  # the provider said when: honour it
                delay = min(error.retry_after, RETRY_AFTER_MAX)
            else:
                delay = backoff + random.uniform(0, backoff / 10)
            log.warning(
                "event=model_retry run_id=%s attempt=%d delay=%.2f error=%s",
                self.run.id,
                attempt + 1,
                delay,
                error,
            )
            await asyncio.sleep(delay)
            attempt += 1

    async def _handle_response(self, response: ModelResponse) -> bool:
        """Record a model response; return True when the run stopped (paused or completed)."""
        run = self.run
        run.step += 1
        run.usage.add(response.usage)
        message = response.message.model_copy(update={"role": "assistant"})
        if message.tool_calls:
            calls = self._unique_ids(message.tool_calls)
            message = message.model_copy(update={"tool_calls": calls})
        run.messages.append(message)
        await self.emit("model_response", detail=message.content)
        turn = await self._classify(message.tool_calls) if message.tool_calls else None
        output = None if turn else self.agent.parse_output(message.content)
        review = await self._review(response, output)
        run.turn = turn
        if review is not None:
            run.status = "waiting_for_human"
            run.pauses += 1
            run.pause = Pause(
                kind="human_review",
                step=run.step,
                seq=run.pauses,
                review=HumanReview(reason=review.reason, payload=review.payload),
            )
            await self.save()
            await self.emit("paused", detail="human_review")
            return True
        if turn is None:
            run.status = "completed"
            self.result.output = output
            await self.save()
            await self.emit("completed", detail=message.content)
            return True
        await self.save()
        return False

    def _unique_ids(self, calls: list[ToolCall]) -> list[ToolCall]:
        """Give every call an id unused in this run (some providers repeat or omit them).

        Done before the assistant message is stored, so tool results always answer the ids
        the model is shown, and idempotency keys ("{run_id}:{call_id}") stay distinct.
        """
        used = {c.id for m in self.run.messages for c in m.tool_calls}
        out: list[ToolCall] = []
        for i, c in enumerate(calls):
            new_id, n = c.id, 1
            while not new_id or new_id in used:
                new_id = f"{c.id or 'call'}_{self.run.step}_{i}" + (f"_{n}" if n > 1 else "")
                n += 1
            used.add(new_id)
            out.append(c if new_id == c.id else c.model_copy(update={"id": new_id}))
        return out

    async def _review(self, response: ModelResponse, output: Any) -> AgentHumanReviewRequest | None:
        hook = self.agent.human_review
        if hook is None:
            return None
        ctx = HumanReviewContext(
            run_id=self.run.id,
            agent_id=self.run.agent_id,
            step=self.run.step,
            messages=list(self.run.messages),
            response=response,
            output=output,
            context=self.run.context,
        )
        return await maybe_await(hook(ctx))

    async def _classify(self, calls: list[ToolCall]) -> Turn:
        """Decide once per call what it needs (the outcome is stored, never recomputed)."""
        turn = Turn(step=self.run.step)
        seen: set[str] = set()
        for call in calls:
            if call.id in seen:
                call = call.model_copy(update={"id": f"{call.id}_{len(seen)}"})
            seen.add(call.id)
            tc = TurnCall(call=call, kind="auto", arguments=dict(call.arguments))
            tool = self.agent.tools.get(call.name)
            if tool is None:
                known = ", ".join(sorted(self.agent.tools)) or "none"
                tc.state, tc.error = (
                    "finished",
                    f"Unknown tool {call.name!r}. Available tools: {known}",
                )
            else:
                try:
                    tc.arguments = tool.validate(call.arguments)
                except ValueError as exc:
                    tc.state, tc.error = "finished", str(exc)
            if tc.state == "finished":
                tc.content = json.dumps({"error": tc.error})
                tc.finished_at = utcnow()
            else:
                tc.kind = await self.agent.call_kind(call, self.run.context, self.call_policy)
                tc.state = "ready" if tc.kind == "auto" else "pending"
            turn.calls.append(tc)
        return turn

    async def _process_turn(self) -> bool:
        """Advance the current turn; return True when the run paused."""
        run = self.run
        turn = run.turn
        assert turn is not None
        for tc in turn.calls:
            if tc.state == "started":  # died inside the body last time: a person decides
                # (an earlier edit is kept: the call runs again only as it started)
                tc.state, tc.kind, tc.interrupted = "pending", "approval", True
                log.warning(
                    "event=call_interrupted run_id=%s call_id=%s tool=%s",
                    run.id,
                    tc.call.id,
                    tc.call.name,
                )
        ready = [tc for tc in turn.calls if tc.state == "ready"]
        closes = not any(tc.state == "pending" for tc in turn.calls)
        last: TurnCall | None = ready[-1] if ready and closes else None
        for tc in ready:
            # The last call of a turn that closes right after it is saved finished by the
            # save that closes the turn (nothing happens in between): one write, not two.
            await self._execute(tc, save=tc is not last)
        pending = [tc for tc in turn.calls if tc.state == "pending"]
        if pending:
            items = [
                PendingToolCall(call=_shown(tc), kind=_pending_kind(tc), interrupted=tc.interrupted)
                for tc in pending
            ]
            run.status = "waiting_for_human"
            run.pauses += 1
            run.pause = Pause(
                kind=pause_kind(items), step=turn.step, seq=run.pauses, pending_tool_calls=items
            )
            await self.save()
            await self.emit("paused", detail=run.pause.kind)
            return True
        for tc in turn.calls:
            run.messages.append(
                Message(role="tool", tool_call_id=tc.call.id, name=tc.call.name, content=tc.content)
            )
        if turn.human_input:
            run.messages.append(Message(role="user", content=turn.human_input))
        run.turn = None
        await self.save()
        if last is not None:
            await self._finished(last)
        return False

    async def _execute(self, tc: TurnCall, *, save: bool = True) -> None:
        """Run one approved (or automatic) call: saved started before its body, finished
        after it (`save=False`: the caller saves it, then calls `_finished`)."""
        run = self.run
        tool = self.agent.tools[tc.call.name]
        tc.state, tc.started_at = "started", utcnow()
        await self.save()  # saved before the body starts: never repeated silently
        await self.emit("tool_started", call_id=tc.call.id, tool=tc.call.name)
        ctx = ToolContext(
            run_id=run.id,
            call_id=tc.call.id,
            agent_id=run.agent_id,
            tool_name=tc.call.name,
            context=run.context,
            decided_by=tc.decision.decided_by if tc.decision else None,
            decision_reason=tc.decision.reason if tc.decision else None,
        )
        try:
            output = await tool.invoke(tc.arguments, ctx)
            body: Any = output
            if tc.decision is not None and tc.decision.type == "edit":
                body = _edited_result(tc, tc.decision, output)
            tc.content = render_output(body)
        except Exception as exc:
            failure = Failure.of(exc)  # scrubbed: it reaches the model, Slack and the logs
            tc.error = tool.redact(failure.shown, tc.arguments)
            shown = tool.redact(failure.message, tc.arguments)
            tc.content = json.dumps({"error": f"Tool {tc.call.name} failed: {shown}"})
            log.warning(
                "event=tool_failed run_id=%s call_id=%s tool=%s error_id=%s error_type=%s error=%s",
                run.id,
                tc.call.id,
                tc.call.name,
                failure.error_id,
                failure.error_type,
                tool.redact(failure.text, tc.arguments),
            )
        tc.state, tc.finished_at = "finished", utcnow()
        if save:
            await self.save()
            await self._finished(tc)

    async def _finished(self, tc: TurnCall) -> None:
        await self.emit("tool_finished", call_id=tc.call.id, tool=tc.call.name, detail=tc.error)

    async def _fail(self, error: str, failure: Failure | None = None) -> RunResult:
        self.run.status = "failed"
        self.run.error = error
        if failure is None:
            log.warning("event=run_failed run_id=%s error=%s", self.run.id, error)
        else:
            log.warning(
                "event=run_failed run_id=%s error_id=%s error_type=%s error=%s",
                self.run.id,
                failure.error_id,
                failure.error_type,
                failure.text,
            )
        await self.save()
        await self.emit("failed", detail=error)
        return self.result


def _edited_result(tc: TurnCall, decision: ToolCallDecision, output: Any) -> dict[str, Any]:
    """What the model reads after a call a reviewer edited: what it proposed, what ran, why."""
    body: dict[str, Any] = {
        "note": "A reviewer replaced the arguments you proposed before this ran.",
        "proposed_arguments": tc.call.arguments,
        "arguments_used": tc.arguments,
    }
    if decision.reason:
        body["reason"] = decision.reason
    body["result"] = output
    return body

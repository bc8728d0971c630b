"""Pydantic AI's deferred tool approvals, decided in Slack through sayso's approval API.

    agent = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def deploy(env: str) -> str: ...

    result = await run_with_approvals(agent, "Deploy to prod", client, channel="C123")

Each call awaiting approval becomes an ordinary approval request, keyed by its tool call id:
a driver that restarts and resolves the same requests again finds the same card and the same
decision, never a second card.

`agent(obj, id=...)` lets `/sayso` run the Pydantic AI agent itself: its message history is
saved with the run, so a click on any replica continues it (see `bot.adapters.framework`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.run import AgentRunResult
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from bot.adapters.framework import (
    CallDecision,
    Finished,
    FrameworkAgent,
    FrameworkCall,
    FrameworkTool,
    Interrupted,
    Step,
    agent_id_of,
)
from bot.agent import Message
from bot.agent.tools import render_output
from bot.client import ApprovalExpired, ApprovalRejected, AsyncSaysoClient, outcome

NO_DECISION = "Nobody decided in time; the tool call was not run."


def idempotency_key(call: ToolCallPart, conversation: str | None = None) -> str:
    """The call's key: the same call always maps to the same request. Provider call ids are
    unique; a test model may reuse them across runs, so a driver can scope the keys to one
    conversation (an id it keeps with its message history)."""
    scope = f"{conversation}:" if conversation else ""
    return f"pydantic-ai:{scope}{call.tool_call_id}"


def function_tools(agent: Agent[Any, Any]) -> list[FrameworkTool]:
    """The agent's function tools: names, descriptions and parameter schemas."""
    found: list[FrameworkTool] = []

    def visit(toolset: AbstractToolset[Any]) -> None:
        if isinstance(toolset, FunctionToolset):
            for name, t in toolset.tools.items():
                d = t.tool_def
                found.append(FrameworkTool(name, d.description or "", d.parameters_json_schema))

    for toolset in agent.toolsets:
        toolset.apply(visit)
    return found


def tool_schema(agent: Agent[Any, Any], tool_name: str) -> dict[str, Any] | None:
    """The JSON Schema of a function tool's parameters (it lets an approver Edit), or None."""
    return next((t.schema for t in function_tools(agent) if t.name == tool_name), None)


async def ask(
    agent: Agent[Any, Any],
    call: ToolCallPart,
    client: AsyncSaysoClient,
    conversation: str | None = None,
    **fields: Any,
) -> str:
    """The call's approval request (the same one again for the same call): its id."""
    created = await client.create(
        kind="approval",
        title=f"Run {call.tool_name}",
        tool=call.tool_name,
        arguments=call.args_as_dict(),
        schema=tool_schema(agent, call.tool_name),
        idempotency_key=idempotency_key(call, conversation),
        **fields,
    )
    return created.id


async def decision_for(
    call: ToolCallPart, client: AsyncSaysoClient, request_id: str, within: float
) -> bool | ToolApproved | ToolDenied:
    """Wait for the request's decision, as Pydantic AI's approval result."""
    try:
        decision = outcome(await client.wait(request_id, within))
    except ApprovalRejected as rejected:
        return ToolDenied(message=rejected.reason or "The tool call was rejected.")
    except ApprovalExpired:
        return ToolDenied(message=NO_DECISION)
    if decision.arguments is not None and decision.arguments != call.args_as_dict():
        return ToolApproved(override_args=decision.arguments)
    return True


async def resolve(
    agent: Agent[Any, Any],
    result_or_requests: AgentRunResult[Any] | DeferredToolRequests,
    client: AsyncSaysoClient,
    *,
    channel: str | None = None,
    approvers: list[str] | None = None,
    min_approvals: int | None = None,
    timeout: float = 3600,  # noqa: ASYNC109
    conversation: str | None = None,
) -> DeferredToolResults:
    """Ask for every call awaiting approval (one card each, in the order the model called)
    and wait for all the decisions. `conversation` scopes the calls' idempotency keys (see
    `idempotency_key`)."""
    requests = result_or_requests
    if isinstance(requests, AgentRunResult):
        requests = requests.output
    if not isinstance(requests, DeferredToolRequests):
        raise TypeError(f"expected DeferredToolRequests, got {type(requests).__name__}")
    calls = requests.approvals
    ids = [
        await ask(
            agent,
            call,
            client,
            conversation,
            channel=channel,
            approvers=approvers,
            min_approvals=min_approvals,
        )
        for call in calls
    ]
    results = await asyncio.gather(
        *(
            decision_for(call, client, rid, within=timeout)
            for call, rid in zip(calls, ids, strict=True)
        )
    )
    return DeferredToolResults(
        approvals={call.tool_call_id: r for call, r in zip(calls, results, strict=True)}
    )


async def run_with_approvals(
    agent: Agent[Any, Any],
    prompt: str,
    client: AsyncSaysoClient,
    **kw: Any,
) -> AgentRunResult[Any]:
    """agent.run, resolving deferred approvals in Slack until the output is not
    DeferredToolRequests; `kw` goes to resolve()."""
    result = await agent.run(prompt)
    while isinstance(result.output, DeferredToolRequests):
        results = await resolve(agent, result, client, **kw)
        result = await agent.run(
            message_history=result.all_messages(), deferred_tool_results=results
        )
    return result


class PydanticAIAgent(FrameworkAgent):
    """A Pydantic AI agent run by `/sayso`: its deferred approvals are the run's cards."""

    def __init__(self, agent: Agent[Any, Any], id: str, **options: Any) -> None:
        super().__init__(id, "pydantic-ai", function_tools(agent), **options)
        self.agent = agent

    async def start(self, conversation: list[Message], context: dict[str, Any]) -> Step:
        *earlier, request = conversation
        result = await self.agent.run(request.content or "", message_history=history(earlier))
        return step_of(result)

    async def resume(
        self, state: Any, decisions: list[CallDecision], context: dict[str, Any]
    ) -> Step:
        results = DeferredToolResults(approvals={d.call_id: approval(d) for d in decisions})
        messages = ModelMessagesTypeAdapter.validate_python(state)
        result = await self.agent.run(message_history=messages, deferred_tool_results=results)
        return step_of(result)


def history(messages: list[Message]) -> list[ModelMessage]:
    """Earlier turns of the thread as Pydantic AI messages (their text, not their tools)."""
    out: list[ModelMessage] = []
    for m in messages:
        if m.role == "user" and m.content:
            out.append(ModelRequest(parts=[UserPromptPart(m.content)]))
        elif m.role == "assistant" and m.content:
            out.append(ModelResponse(parts=[TextPart(m.content)]))
    return out


def approval(decision: CallDecision) -> bool | ToolApproved | ToolDenied:
    """A sayso decision as Pydantic AI's: edited arguments are re-validated by Pydantic AI."""
    if decision.type == "reject":
        return ToolDenied(message=decision.reason or "The tool call was rejected.")
    if decision.type == "edit":
        return ToolApproved(override_args=decision.arguments)
    return True


def step_of(result: AgentRunResult[Any]) -> Step:
    state = ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json")
    output = result.output
    if not isinstance(output, DeferredToolRequests):
        return Finished(render_output(output), state)
    if output.calls:
        names = ", ".join(c.tool_name for c in output.calls)
        raise ValueError(f"external tools ({names}) are not supported from /sayso")
    calls = [FrameworkCall(c.tool_call_id, c.tool_name, c.args_as_dict()) for c in output.approvals]
    return Interrupted(calls, state)


def agent(obj: Agent[Any, Any], id: str | None = None, **options: Any) -> PydanticAIAgent:
    """`obj` as a sayso agent, for SAYSO_AGENTS: `id` is the word after `/sayso` (default: the
    agent's name); `options` are `FrameworkAgent`'s (approvers, allowed_users, channels...)."""
    return PydanticAIAgent(obj, id or agent_id_of(obj.name, "pydantic-ai"), **options)


__all__ = ["PydanticAIAgent", "agent", "resolve", "run_with_approvals", "tool_schema"]

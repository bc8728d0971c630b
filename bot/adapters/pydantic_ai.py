"""Pydantic AI's deferred tool approvals, decided in Slack through sayso's approval API.

    agent = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def deploy(env: str) -> str: ...

    result = await run_with_approvals(agent, "Deploy to prod", client, channel="C123")

Each call awaiting approval becomes an ordinary approval request, keyed by its tool call id:
a driver that restarts and resolves the same requests again finds the same card and the same
decision, never a second card.
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
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.run import AgentRunResult
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from bot.client import ApprovalExpired, ApprovalRejected, AsyncSaysoClient, outcome

NO_DECISION = "Nobody decided in time; the tool call was not run."


def idempotency_key(call: ToolCallPart, conversation: str | None = None) -> str:
    """The call's key: the same call always maps to the same request. Provider call ids are
    unique; a test model may reuse them across runs, so a driver can scope the keys to one
    conversation (an id it keeps with its message history)."""
    scope = f"{conversation}:" if conversation else ""
    return f"pydantic-ai:{scope}{call.tool_call_id}"


def tool_schema(agent: Agent[Any, Any], tool_name: str) -> dict[str, Any] | None:
    """The JSON Schema of a function tool's parameters (it lets an approver Edit), or None."""
    found: list[dict[str, Any]] = []

    def visit(toolset: AbstractToolset[Any]) -> None:
        if isinstance(toolset, FunctionToolset) and tool_name in toolset.tools:
            found.append(toolset.tools[tool_name].tool_def.parameters_json_schema)

    for toolset in agent.toolsets:
        toolset.apply(visit)
    return found[0] if found else None


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


__all__ = ["resolve", "run_with_approvals", "tool_schema"]

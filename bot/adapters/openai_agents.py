"""The OpenAI Agents SDK's tool approvals, decided in Slack through sayso's approval API.

    @function_tool(needs_approval=True)
    def deploy(env: str) -> str: ...

    agent = Agent(name="ops", tools=[deploy])
    result = await run_with_approvals(agent, "Deploy to prod", client, channel="C123")

Each interruption (a `ToolApprovalItem`) becomes an ordinary approval request with Approve and
Reject (the SDK has no edit), keyed by its call id: a driver that restarts and asks again
finds the same card and the same decision, never a second card. Every request keeps the
`RunState` JSON of the run that asked (its `context`), so another process can continue the
run from a request id alone: `await resume(agent, request_id, client)`.

`agent(obj, id=...)` lets `/sayso` run the SDK's agent itself: its RunState is saved with the
run, so a click on any replica continues it (see `bot.adapters.framework`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    Runner,
    RunResult,
    RunResultStreaming,
    RunState,
    ToolApprovalItem,
)

from bot.adapters.framework import (
    CallDecision,
    Finished,
    FrameworkAgent,
    FrameworkCall,
    FrameworkTool,
    Interrupted,
    Step,
    agent_id_of,
    decisions_by_call,
)
from bot.agent import Message
from bot.agent.tools import render_output
from bot.client import ApprovalExpired, ApprovalRejected, AsyncSaysoClient, outcome

NO_DECISION = "Nobody decided in time; the tool call was not run."
REJECTED = "The tool call was rejected."
SAVED = "openai_agents"
"""The key, in a request's `context`, of what a fresh process needs to continue the run:
`{"run_state": <RunState.to_json()>, "conversation": <id or null>}`."""

AgentState = RunState[Any, Agent[Any]]
Paused = RunResult | RunResultStreaming | AgentState


def idempotency_key(item: ToolApprovalItem, conversation: str | None = None) -> str:
    """The call's key: the same call always maps to the same request. Provider call ids are
    unique; a test model may reuse them across runs, so a driver can scope the keys to one
    conversation (an id it keeps with the run)."""
    if not item.call_id:
        raise ValueError(f"tool call {item.name!r} has no call id to key its approval by")
    scope = f"{conversation}:" if conversation else ""
    return f"openai-agents:{scope}{item.call_id}"


def tool_schema(item: ToolApprovalItem) -> dict[str, Any] | None:
    """The JSON Schema of the function tool's parameters (shown on the card), or None."""
    for tool in getattr(item.agent, "tools", None) or []:
        if isinstance(tool, FunctionTool) and tool.name == item.tool_name:
            return parameters_schema(tool)
    return None


def parameters_schema(tool: FunctionTool) -> dict[str, Any]:
    """The tool's parameters JSON Schema, without the SDK's model title."""
    return {k: v for k, v in tool.params_json_schema.items() if k != "title"}


def arguments_of(item: ToolApprovalItem) -> dict[str, Any]:
    """The call's arguments as an object (`.arguments` is the model's JSON text)."""
    raw = item.arguments
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def state_of(interrupted: Paused) -> AgentState:
    """The run's RunState: `result.to_state()`, or the state itself."""
    if isinstance(interrupted, RunState):
        return interrupted
    if isinstance(interrupted, RunResult | RunResultStreaming):
        return interrupted.to_state()
    raise TypeError(f"expected a RunResult or a RunState, got {type(interrupted).__name__}")


async def ask(
    item: ToolApprovalItem,
    client: AsyncSaysoClient,
    saved: Mapping[str, Any],
    conversation: str | None = None,
    **fields: Any,
) -> str:
    """The call's approval request (the same one again for the same call): its id. `saved`
    is the run's `context` entry (see SAVED)."""
    name = item.name or "tool"
    created = await client.create(
        kind="approval",
        title=f"Run {name}",
        tool=name,
        arguments=arguments_of(item),
        schema=tool_schema(item),
        allowed_decisions=["approve", "reject"],
        idempotency_key=idempotency_key(item, conversation),
        context={SAVED: dict(saved)},  # not a string: kept off the card
        **fields,
    )
    return created.id


async def decision_for(client: AsyncSaysoClient, request_id: str, within: float) -> str | None:
    """Wait for the request's decision: None when approved, else the rejection message the
    model will see."""
    try:
        outcome(await client.wait(request_id, within))
    except ApprovalRejected as rejected:
        return rejected.reason or REJECTED
    except ApprovalExpired:
        return NO_DECISION
    return None


async def resolve(
    interrupted: Paused,
    client: AsyncSaysoClient,
    *,
    channel: str | None = None,
    approvers: list[str] | None = None,
    min_approvals: int | None = None,
    timeout: float = 3600,  # noqa: ASYNC109
    conversation: str | None = None,
    on_asked: Callable[[list[str]], object] | None = None,
) -> AgentState:
    """Ask for every pending tool call (one card each, in the order the model called), wait
    for all the decisions and apply them: the RunState for `Runner.run(agent, state)`.

    `conversation` scopes the calls' idempotency keys (see `idempotency_key`); `on_asked`
    gets the request ids once they all exist (a driver may log them: `resume` continues
    from any of them in another process)."""
    state = state_of(interrupted)
    items = state.get_interruptions()
    saved = {"run_state": state.to_json(), "conversation": conversation}
    fields = {"channel": channel, "approvers": approvers, "min_approvals": min_approvals}
    ids = [await ask(item, client, saved, conversation, **fields) for item in items]
    if on_asked is not None:
        on_asked(ids)
    rejections = await asyncio.gather(*(decision_for(client, rid, within=timeout) for rid in ids))
    for item, rejection in zip(items, rejections, strict=True):
        if rejection is None:
            state.approve(item)
        else:
            state.reject(item, rejection_message=rejection)
    return state


async def _continue(
    agent: Agent[Any],
    result: RunResult,
    client: AsyncSaysoClient,
    run_config: RunConfig | None,
    kw: dict[str, Any],
) -> RunResult:
    while result.interruptions:
        state = await resolve(result, client, **kw)
        result = await Runner.run(agent, state, run_config=run_config)
    return result


async def run_with_approvals(
    agent: Agent[Any],
    input: str | list[Any],
    client: AsyncSaysoClient,
    *,
    context: Any = None,
    run_config: RunConfig | None = None,
    **kw: Any,
) -> RunResult:
    """`Runner.run(agent, input)`, resolving tool approvals in Slack until no interruption is
    pending; `kw` goes to resolve()."""
    result = await Runner.run(agent, input, context=context, run_config=run_config)
    return await _continue(agent, result, client, run_config, kw)


async def saved_state(
    agent: Agent[Any], saved: str | Mapping[str, Any], client: AsyncSaysoClient
) -> tuple[AgentState, str | None]:
    """The RunState (and conversation) a request keeps, from its id; or from RunState JSON
    (`to_string()` text or a `to_json()` dict) a driver kept itself."""
    if isinstance(saved, Mapping):
        return await RunState.from_json(agent, dict(saved)), None
    if saved.lstrip().startswith("{"):
        return await RunState.from_string(agent, saved), None
    request = await client.get(saved)
    kept = (request.context or {}).get(SAVED)
    if not isinstance(kept, dict) or not isinstance(kept.get("run_state"), dict):
        raise ValueError(f"request {saved} keeps no OpenAI Agents run state")
    conversation = kept.get("conversation")
    state = await RunState.from_json(agent, kept["run_state"])
    return state, conversation if isinstance(conversation, str) else None


async def resume(
    agent: Agent[Any],
    saved: str | Mapping[str, Any],
    client: AsyncSaysoClient,
    *,
    run_config: RunConfig | None = None,
    **kw: Any,
) -> RunResult:
    """Continue, in any process, a run whose tool calls were put to approval: `saved` is one
    of its request ids (the request keeps the RunState and the conversation id) or RunState
    JSON. The same calls find the same requests (no second card) and their decisions; then
    the run goes on as run_with_approvals does. Continue a run once: its tools run again if
    the same state is continued twice."""
    state, conversation = await saved_state(agent, saved, client)
    if conversation is not None:
        kw.setdefault("conversation", conversation)
    state = await resolve(state, client, **kw)
    result = await Runner.run(agent, state, run_config=run_config)
    return await _continue(agent, result, client, run_config, kw)


class OpenAIAgentsAgent(FrameworkAgent):
    """An OpenAI Agents SDK agent run by `/sayso`: its tool approvals are the run's cards
    (Approve and Reject; the SDK has no edit), its RunState JSON the run's saved state."""

    def __init__(self, agent: Agent[Any], id: str, **options: Any) -> None:
        super().__init__(id, "openai-agents", function_tools(agent), **options)
        self.agent = agent

    async def start(self, conversation: list[Message], context: dict[str, Any]) -> Step:
        return step_of(await Runner.run(self.agent, history(conversation)))

    async def resume(
        self, state: Any, decisions: list[CallDecision], context: dict[str, Any]
    ) -> Step:
        run_state = await RunState.from_json(self.agent, state)
        decided = decisions_by_call(decisions)
        for item in run_state.get_interruptions():
            d = decided.get(item.call_id or "")
            if d is None:  # not decided this time: the SDK stops for it again
                continue
            if d.type == "reject":
                run_state.reject(item, rejection_message=d.reason or REJECTED)
            elif d.type == "edit":
                raise ValueError("the OpenAI Agents SDK cannot run a call with other arguments")
            else:
                run_state.approve(item)
        return step_of(await Runner.run(self.agent, run_state))


def function_tools(agent: Agent[Any]) -> list[FrameworkTool]:
    """The function tools of the agent and of the agents it hands off to: names,
    descriptions and parameter schemas, with Approve and Reject only."""
    found: dict[str, FrameworkTool] = {}
    seen: set[int] = set()
    todo: list[Any] = [agent]
    while todo:
        current = todo.pop()
        if id(current) in seen or not isinstance(current, Agent):
            continue
        seen.add(id(current))
        for t in current.tools:
            if isinstance(t, FunctionTool) and t.name not in found:
                schema = parameters_schema(t)
                found[t.name] = FrameworkTool(t.name, t.description, schema, ("approve", "reject"))
        todo.extend(current.handoffs)
    return list(found.values())


def history(conversation: list[Message]) -> list[Any]:
    """The thread as the SDK's input items: earlier requests and answers (their text, not
    their tools), then the request."""
    return [
        {"role": m.role, "content": m.content}
        for m in conversation
        if m.role in ("user", "assistant") and m.content
    ]


def step_of(result: RunResult) -> Step:
    """Where the SDK stopped: the calls awaiting approval and the RunState JSON, or the
    answer."""
    if not result.interruptions:
        return Finished(render_output(result.final_output))
    calls = []
    for item in result.interruptions:
        if not item.call_id:
            raise ValueError(f"tool call {item.name!r} has no call id")
        calls.append(FrameworkCall(item.call_id, item.name or "tool", arguments_of(item)))
    return Interrupted(calls, result.to_state().to_json())


def agent(obj: Agent[Any], id: str | None = None, **options: Any) -> OpenAIAgentsAgent:
    """`obj` as a sayso agent, for SAYSO_AGENTS: `id` is the word after `/sayso` (default: the
    agent's name); `options` are `FrameworkAgent`'s (approvers, allowed_users, channels...)."""
    return OpenAIAgentsAgent(obj, id or agent_id_of(obj.name, "openai-agents"), **options)


__all__ = [
    "OpenAIAgentsAgent",
    "agent",
    "idempotency_key",
    "resolve",
    "resume",
    "run_with_approvals",
    "saved_state",
    "tool_schema",
]

"""LangChain v1's HumanInTheLoopMiddleware interrupts, decided in Slack through sayso's API.

    agent = create_agent(
        model,
        tools=[scale],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"scale": True})],
        checkpointer=checkpointer,
    )
    config = {"configurable": {"thread_id": "deploy-42"}}
    state = await run_with_approvals(agent, {"messages": [...]}, config, client, channel="C123")

Each action of an interrupt's `HITLRequest` becomes an ordinary approval request, keyed by
the interrupt id and the action's position: a driver that restarts and resolves the same
thread again finds the same card and the same decision, and the thread is resumed once.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any, cast

from langchain.agents.middleware.human_in_the_loop import (
    ActionRequest,
    ApproveDecision,
    Decision,
    EditDecision,
    HITLResponse,
    RejectDecision,
    ReviewConfig,
)
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt, StateSnapshot

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
from bot.adapters.langgraph_hitl import (
    SAYSO_DECISIONS,
    actions_of,
    arguments_schema,
    card_decisions,
    middleware_decision,
    response_to,
    review_policies,
    title_of,
    tool_schemas,
)
from bot.adapters.langgraph_threads import export_thread, graph_on, import_thread, new_thread
from bot.agent import Message
from bot.agent.tools import render_output
from bot.agent.vocabulary import ApprovalDecision
from bot.client import ApprovalExpired, ApprovalRejected, AsyncSaysoClient, outcome
from bot.client import Decision as SaysoDecision

NO_DECISION = "Nobody decided in time; the tool call was not run."


def idempotency_key(interrupt: Interrupt, index: int) -> str:
    """The key of an interrupt's `index`-th action. Interrupt ids are kept in the thread's
    checkpoint, so the same pending action always maps to the same request."""
    return f"langgraph:{interrupt.id}:{index}"


async def ask(
    interrupt: Interrupt,
    index: int,
    action: ActionRequest,
    config: ReviewConfig,
    client: AsyncSaysoClient,
    schema: dict[str, Any] | None,
    **fields: Any,
) -> str:
    """The action's approval request (the same one again for the same action): its id."""
    created = await client.create(
        kind="approval",
        title=title_of(action),
        tool=action["name"],
        arguments=dict(action["args"]),
        schema=config.get("args_schema") or schema,
        allowed_decisions=card_decisions(config),
        idempotency_key=idempotency_key(interrupt, index),
        **fields,
    )
    return created.id


def decision_of(
    action: ActionRequest,
    config: ReviewConfig,
    settled: SaysoDecision | ApprovalRejected | ApprovalExpired,
) -> Decision:
    """The middleware's decision for a settled request: approve, edit (the approver changed
    the arguments) or reject (with the approver's reason). A request nobody decided is a
    rejection saying so, or ApprovalExpired where the action cannot be rejected."""
    if isinstance(settled, ApprovalRejected):
        reject = RejectDecision(type="reject")
        if settled.reason:
            reject["message"] = settled.reason
        return reject
    if isinstance(settled, ApprovalExpired):
        if "reject" not in config["allowed_decisions"]:
            raise settled
        return RejectDecision(type="reject", message=NO_DECISION)
    args = settled.arguments
    if args is not None and args != action["args"] and "edit" in config["allowed_decisions"]:
        return EditDecision(type="edit", edited_action={"name": action["name"], "args": args})
    return ApproveDecision(type="approve")


async def _decide(
    action: ActionRequest,
    config: ReviewConfig,
    client: AsyncSaysoClient,
    request_id: str,
    within: float,
) -> Decision:
    settled: SaysoDecision | ApprovalRejected | ApprovalExpired
    try:
        settled = outcome(await client.wait(request_id, within))
    except (ApprovalRejected, ApprovalExpired) as error:
        settled = error
    return decision_of(action, config, settled)


async def answer(
    graph: Pregel,
    interrupts: Sequence[Interrupt],
    client: AsyncSaysoClient,
    *,
    timeout: float = 3600,  # noqa: ASYNC109
    **fields: Any,
) -> dict[str, HITLResponse | Decision]:
    """Ask for every pending action (one card each, in order) and wait for all the decisions:
    the resume value for `Command(resume=...)`, keyed by interrupt id. A batched interrupt
    gets a `HITLResponse` (its decisions in the order of its actions), a per-call one its
    single decision."""
    schemas = tool_schemas(graph)
    asked: list[tuple[Interrupt, ActionRequest, ReviewConfig, str]] = []
    for interrupt in interrupts:
        for index, (action, config) in enumerate(actions_of(interrupt)):
            schema = schemas.get(action["name"])
            rid = await ask(interrupt, index, action, config, client, schema, **fields)
            asked.append((interrupt, action, config, rid))
    decisions = await asyncio.gather(
        *(_decide(action, config, client, rid, timeout) for _, action, config, rid in asked)
    )
    return {
        interrupt.id: response_to(
            interrupt,
            [d for (i, *_), d in zip(asked, decisions, strict=True) if i.id == interrupt.id],
        )
        for interrupt in interrupts
    }


class _Thread:
    """One thread of a graph, through the async API, or through the sync one on a worker
    thread when the checkpointer has no async methods (e.g. SqliteSaver)."""

    def __init__(self, graph: Pregel, config: RunnableConfig) -> None:
        self.graph = graph
        self.config = config
        self.sync: bool | None = None

    async def _is_sync(self) -> bool:
        if self.sync is None:
            saver = self.graph.checkpointer
            self.sync = False
            if isinstance(saver, BaseCheckpointSaver):
                try:
                    await saver.aget_tuple(self.config)
                except NotImplementedError:
                    self.sync = True
        return self.sync

    async def state(self) -> StateSnapshot:
        if await self._is_sync():
            return await asyncio.to_thread(self.graph.get_state, self.config)
        return await self.graph.aget_state(self.config)

    async def invoke(self, value: Any) -> None:
        """Run the graph, each step's checkpoint saved before the next step starts (so a
        thread whose driver died shows the step it died in)."""
        if await self._is_sync():
            run = functools.partial(self.graph.invoke, durability="sync")
            await asyncio.to_thread(run, value, self.config)
        else:
            await self.graph.ainvoke(value, self.config, durability="sync")


class ToolsMayHaveRun(RuntimeError):
    """The thread stopped while its tools ran (the driver died): they may have run, so sayso
    does not run them again. Continue the thread yourself (`graph.ainvoke(None, config)`)
    if running them twice is harmless."""


def _tool_nodes(graph: Pregel, names: Sequence[str]) -> list[str]:
    return [n for n in names if n in graph.nodes and isinstance(graph.nodes[n].bound, ToolNode)]


async def resolve(
    graph: Pregel,
    config: RunnableConfig,
    client: AsyncSaysoClient,
    *,
    channel: str | None = None,
    approvers: list[str] | None = None,
    min_approvals: int | None = None,
    timeout: float = 3600,  # noqa: ASYNC109
) -> dict[str, Any]:
    """Continue the thread of `config` until no interrupt is pending; return its final state
    values. Each pending HumanInTheLoopMiddleware action becomes a card; the decisions
    resume the thread with `Command(resume=...)`. Safe to call again after a crash: the same
    interrupt maps to the same request and its decision, and a thread resumed already has
    nothing pending. A thread stopped at a static breakpoint raises ValueError; one stopped
    while its tools ran (the driver died in them) raises ToolsMayHaveRun, never runs them
    again. (Per-call interrupts are reviewed inside the tools step: LangGraph keeps no trace
    of their unfinished resume, so a driver killed in such a tool applies the decision
    again.)"""
    thread = _Thread(graph, config)
    fields = {"channel": channel, "approvers": approvers, "min_approvals": min_approvals}
    while True:
        snapshot = await thread.state()
        if snapshot.interrupts:
            resume = await answer(graph, snapshot.interrupts, client, timeout=timeout, **fields)
            await thread.invoke(Command(resume=resume))
        elif snapshot.next and (graph.interrupt_before_nodes or graph.interrupt_after_nodes):
            raise ValueError(
                f"the thread stopped before {', '.join(snapshot.next)} with no interrupt to "
                "answer: a breakpoint (interrupt_before/after) is not sayso's to pass"
            )
        elif running := _tool_nodes(graph, snapshot.next):
            raise ToolsMayHaveRun(
                f"thread {config['configurable'].get('thread_id')} stopped while "
                f"{', '.join(running)} ran (its driver died?): its tool calls may have run, "
                "so they are not run again"
            )
        elif snapshot.next:  # stopped between other steps (a crash): carry on from there
            await thread.invoke(None)
        else:
            return dict(snapshot.values)


async def run_with_approvals(
    graph: Pregel,
    input: Any,
    config: RunnableConfig,
    client: AsyncSaysoClient,
    **kw: Any,
) -> dict[str, Any]:
    """Run the graph on `input` in the thread of `config`, then `resolve` it (`kw` goes
    there). A thread with work pending (a driver restarted before it finished) is resolved
    without sending `input` again."""
    thread = _Thread(graph, config)
    if not (await thread.state()).next:
        await thread.invoke(input)
    return await resolve(graph, config, client, **kw)


# -- run by /sayso ---------------------------------------------------------------------------


def framework_tools(graph: Pregel) -> list[FrameworkTool]:
    """The graph's tools as sayso shows them on cards: description, Edit form, decisions."""
    policies = review_policies(graph)
    tools = []
    for node in graph.nodes.values():
        if not isinstance(node.bound, ToolNode):
            continue
        for name, tool in node.bound.tools_by_name.items():
            allowed = policies.get(name, list(SAYSO_DECISIONS))
            decisions = card_decisions(ReviewConfig(action_name=name, allowed_decisions=allowed))
            tool_schema = arguments_schema(tool)
            shown = cast(list[ApprovalDecision], decisions)
            tools.append(FrameworkTool(name, tool.description, tool_schema, shown))
    return tools


def call_id(interrupt: Interrupt, index: int) -> str:
    """The sayso call id of an interrupt's `index`-th action."""
    return f"{interrupt.id}:{index}"


def chat_input(conversation: list[Message]) -> dict[str, Any]:
    """The thread's text turns (its last message is the request) as the graph's input."""
    turns = [
        {"role": m.role, "content": m.content}
        for m in conversation
        if m.role in ("user", "assistant") and m.content and not m.tool_calls
    ]
    return {"messages": turns}


def output_text(values: dict[str, Any]) -> str:
    """What the thread shows once the graph finished: its structured response, else its
    last message's text, else its state as JSON."""
    if values.get("structured_response") is not None:
        return render_output(values["structured_response"])
    messages = values.get("messages") or []
    if messages and isinstance(messages[-1], BaseMessage):
        return messages[-1].text
    return render_output(values)


class LangGraphAgent(FrameworkAgent):
    """A LangGraph graph (e.g. LangChain's `create_agent`) run by `/sayso`: the actions of its
    HumanInTheLoopMiddleware interrupts are the run's cards. Each run is a thread of its own,
    whose latest checkpoint is saved with the run (the graph's own checkpointer is not used),
    so a click on any replica resumes it. The graph's state takes `messages`."""

    def __init__(self, graph: Pregel, id: str, **options: Any) -> None:
        super().__init__(id, "langgraph", framework_tools(graph), **options)
        self.graph = graph

    async def start(self, conversation: list[Message], context: dict[str, Any]) -> Step:
        saver, config = new_thread()
        graph = graph_on(self.graph, saver)
        await graph.ainvoke(chat_input(conversation), config)
        return await self._step(graph, config, saver)

    async def resume(
        self, state: Any, decisions: list[CallDecision], context: dict[str, Any]
    ) -> Step:
        saver, config = import_thread(state)
        graph = graph_on(self.graph, saver)
        by_call = decisions_by_call(decisions)
        resume: dict[str, HITLResponse | Decision] = {}
        for interrupt in (await graph.aget_state(config)).interrupts:
            mine = []
            for index, (action, review) in enumerate(actions_of(interrupt)):
                decided = by_call.get(call_id(interrupt, index))
                if decided is None:
                    raise ValueError(f"no decision for {action['name']} ({interrupt.id})")
                mine.append(middleware_decision(action, review, decided))
            resume[interrupt.id] = response_to(interrupt, mine)
        if not resume:
            raise ValueError("the thread has no interrupt to resume")
        await graph.ainvoke(Command(resume=resume), config)
        return await self._step(graph, config, saver)

    async def _step(self, graph: Pregel, config: RunnableConfig, saver: Any) -> Step:
        snapshot = await graph.aget_state(config)
        saved = export_thread(saver, config)
        if snapshot.interrupts:
            calls = [
                FrameworkCall(call_id(interrupt, index), action["name"], dict(action["args"]))
                for interrupt in snapshot.interrupts
                for index, (action, _) in enumerate(actions_of(interrupt))
            ]
            return Interrupted(calls, saved)
        if snapshot.next:
            raise ValueError(f"the graph stopped before {', '.join(snapshot.next)} unasked")
        return Finished(output_text(dict(snapshot.values)), saved)


def agent(obj: Pregel, id: str | None = None, **options: Any) -> LangGraphAgent:
    """`obj` (a compiled graph) as a sayso agent, for SAYSO_AGENTS: `id` is the word after
    `/sayso` (default: the graph's name); `options` are `FrameworkAgent`'s (approvers,
    allowed_users, channels...)."""
    return LangGraphAgent(obj, id or agent_id_of(obj.name, "langgraph"), **options)


__all__ = [
    "LangGraphAgent",
    "ToolsMayHaveRun",
    "actions_of",
    "agent",
    "answer",
    "decision_of",
    "idempotency_key",
    "resolve",
    "run_with_approvals",
    "tool_schemas",
]

"""`@tool`: schemas from type hints, ToolContext, sync bodies in a worker thread."""

from __future__ import annotations

import asyncio
import threading
from typing import Literal

import pytest

from bot import Agent, AgentToolDecision, ToolContext, tool
from bot.agent import Tool
from tests.agent.backends import FAST, Backend
from tests.agent.ops import Ledger
from tests.helpers.waiting import eventually


@tool(require_approval=True)
async def deploy(
    environment: Literal["staging", "production"], version: str, replicas: int = 2
) -> dict:
    """Deploy a version of the service.

    Use it only when asked.
    """
    return {}


def test_schema_from_type_hints() -> None:
    assert isinstance(deploy, Tool)
    assert deploy.name == "deploy" and deploy.kind == "approval"
    assert deploy.description == "Deploy a version of the service.\n\nUse it only when asked."
    assert deploy.parameters == {
        "type": "object",
        "properties": {
            "environment": {"type": "string", "enum": ["staging", "production"]},
            "version": {"type": "string"},
            "replicas": {"type": "integer", "default": 2},
        },
        "required": ["environment", "version"],
        "additionalProperties": False,
    }


def test_tool_kinds_and_options() -> None:
    @tool
    def a(x: str) -> str:
        return x

    @tool(kind="hitl")
    def b(question: str) -> str:
        """Ask."""
        return ""

    @tool(kind="manual", name="lookup", description="Look it up")
    def c(ticket_id: str) -> dict:
        return {}

    assert (a.kind, b.kind, c.kind) == ("auto", "hitl", "manual")
    assert a.description == "a"  # no docstring: the name
    assert (c.name, c.description) == ("lookup", "Look it up")
    assert a("hi") == "hi"  # still callable as a function
    with pytest.raises(ValueError, match="Unknown tool kind"):
        tool(kind="sometimes")(lambda: None)  # type: ignore[arg-type]


def test_validation_names_the_field() -> None:
    assert deploy.validate({"environment": "staging", "version": "v1"}) == {
        "environment": "staging",
        "version": "v1",
        "replicas": 2,
    }
    with pytest.raises(ValueError, match="field 'environment'"):
        deploy.validate({"environment": "moon", "version": "v1"})
    with pytest.raises(ValueError, match="field 'replicas'"):
        deploy.validate({"environment": "staging", "version": "v1", "replicas": "many"})


async def test_tool_context_is_hidden_from_the_model_and_passed_to_the_body(
    backend: Backend, ledger: Ledger
) -> None:
    @tool(require_approval=True)
    def notify(channel: str, ctx: ToolContext) -> str:
        """Notify a channel."""
        ledger.add(
            "notify",
            run_id=ctx.run_id,
            call_id=ctx.call_id,
            agent_id=ctx.agent_id,
            tool_name=ctx.tool_name,
            context=ctx.context,
            key=ctx.idempotency_key,
            decided_by=ctx.decided_by,
        )
        return "sent"

    assert notify.parameters["properties"] == {"channel": {"type": "string"}}
    assert notify.parameters["required"] == ["channel"]

    agent = Agent(id="bot", model=backend.model, tools=[notify], model_settings=FAST)
    (cid,) = backend.reply(tool_calls=[("notify", {"channel": "#ops"})])
    result = await agent.run("tell ops", context={"requested_by": "U123"}, run_id="r1")
    sent_tools = backend.requests[0]["tools"]
    assert sent_tools == [
        {
            "type": "function",
            "function": {
                "name": "notify",
                "description": "Notify a channel.",
                "parameters": notify.parameters,
            },
        }
    ]
    assert "ctx" not in str(sent_tools)

    backend.reply(text="sent")
    await agent.continue_run(run=result, approvals=[AgentToolDecision(cid, decided_by="U_LEAD")])
    assert ledger.args("notify") == [
        {
            "run_id": "r1",
            "call_id": cid,
            "agent_id": "bot",
            "tool_name": "notify",
            "context": {"requested_by": "U123"},
            "key": f"r1:{cid}",
            "decided_by": "U_LEAD",
        }
    ]


async def test_sync_bodies_run_in_a_thread_without_blocking_the_loop(
    backend: Backend,
) -> None:
    loop_ticked = threading.Event()
    threads: list[int] = []

    @tool
    def slow_sync(name: str) -> str:
        threads.append(threading.get_ident())
        # Only returns True if the event loop keeps running while this body blocks.
        return "ticked" if loop_ticked.wait(timeout=2) else "blocked"

    @tool
    async def fast_async(name: str) -> str:
        threads.append(threading.get_ident())
        return "async"

    async def ticker() -> None:  # ticks once the sync body is blocking its thread
        await eventually(lambda: threads, interval=0.01, what="the sync body to start")
        loop_ticked.set()

    agent = Agent(id="t", model=backend.model, tools=[slow_sync, fast_async], model_settings=FAST)
    s, f = backend.reply(tool_calls=[("slow_sync", {"name": "a"}), ("fast_async", {"name": "b"})])
    backend.reply(text="done")
    tick = asyncio.create_task(ticker())
    result = await agent.run("go")
    await tick
    assert result.run.status == "completed"
    assert backend.tool_results() == {s: "ticked", f: "async"}
    main = threading.get_ident()
    assert threads[0] != main and threads[1] == main


async def test_a_tool_error_becomes_the_tool_result(backend: Backend) -> None:
    @tool
    def flaky(n: int) -> int:
        raise RuntimeError("disk full")

    agent = Agent(id="t", model=backend.model, tools=[flaky], model_settings=FAST)
    (c,) = backend.reply(tool_calls=[("flaky", {"n": 1})])
    backend.reply(text="sorry")
    result = await agent.run("go")
    assert result.run.status == "completed"
    assert backend.tool_results() == {c: {"error": "Tool flaky failed: RuntimeError: disk full"}}


def test_agent_rejects_bad_tool_lists() -> None:
    with pytest.raises(TypeError, match="decorate it with @tool"):
        Agent(id="a", model="scripted:echo", tools=[lambda: None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="two tools are named 'deploy'"):
        Agent(id="a", model="scripted:echo", tools=[deploy, deploy])
    with pytest.raises(ValueError, match="without spaces"):
        Agent(id="my agent", model="scripted:echo")

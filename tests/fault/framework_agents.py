"""Framework agents for the fault suite: a Pydantic AI agent run by `/sayso scaler ...`
through bot.adapters.pydantic_ai, and a LangChain v1 agent run by `/sayso lgscaler ...` through
bot.adapters.langgraph. Their `scale` tool needs approval and records each execution in the
suite's shared effects file, then sleeps `hang` s (so a test can kill a process inside it)."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.adapters.langgraph import LangGraphAgent
from bot.adapters.pydantic_ai import PydanticAIAgent
from tests.e2e.langgraph_agents import ScriptedChatModel
from tests.fault.agents import record


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stateless: ask for `scale` until the conversation holds its result, then say it."""
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if isinstance(last, ModelRequest) and returns:
        return ModelResponse(parts=[TextPart(f"Scaled: {returns[0].content}")])
    call = ToolCallPart("scale", {"service": "api", "replicas": 3}, tool_call_id=uuid.uuid4().hex)
    return ModelResponse(parts=[call])


def scaler_agent(effects_path: str | Path, hang: float = 0.0) -> PydanticAIAgent:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(respond), output_type=[str, DeferredToolRequests], name="scaler"
    )

    @agent.tool_plain(requires_approval=True)
    async def scale(service: str, replicas: int = 1) -> str:
        """Scale a service."""
        record(
            effects_path,
            {"tool": "scale", "replicas": replicas, "pid": os.getpid(), "at": time.time()},
        )
        if hang:
            await asyncio.sleep(hang)  # a body that takes time: a test kills the process in it
        return f"{service} x{replicas}"

    return PydanticAIAgent(agent, "scaler")


def langgraph_scaler_agent(effects_path: str | Path, hang: float = 0.0) -> LangGraphAgent:
    @tool
    async def scale(service: str, replicas: int = 1) -> str:
        """Scale a service."""
        record(
            effects_path,
            {"tool": "scale", "replicas": replicas, "pid": os.getpid(), "at": time.time()},
        )
        if hang:
            await asyncio.sleep(hang)  # a body that takes time: a test kills the process in it
        return f"{service} x{replicas}"

    graph = create_agent(
        ScriptedChatModel(replicas=3, said="Scaled"),
        [scale],
        middleware=[HumanInTheLoopMiddleware({"scale": True})],
    )
    return LangGraphAgent(graph, "lgscaler")

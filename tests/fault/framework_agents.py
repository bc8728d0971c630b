"""A Pydantic AI agent for the fault suite, run by `/sayso scaler ...` through
bot.adapters.pydantic_ai: its `scale` tool needs approval and records each execution in the
suite's shared effects file, then sleeps `hang` s (so a test can kill a process inside it)."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

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

from bot.adapters.pydantic_ai import PydanticAIAgent
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

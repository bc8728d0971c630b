"""A LangChain v1 agent for the fault suite, run by `/sayso lgscaler ...` through
bot.adapters.langgraph (loaded with WITH_LANGGRAPH set: LangChain takes seconds to import).
Its `scale` tool needs approval (HumanInTheLoopMiddleware) and records each execution in the
suite's shared effects file, then sleeps `hang` s (so a test can kill a process inside it)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool

from bot.adapters.langgraph import LangGraphAgent
from tests.e2e.langgraph_agents import ScriptedChatModel
from tests.fault.agents import record


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

"""An OpenAI Agents SDK agent for the fault suite, run by `/sayso deployer ...` through
bot.adapters.openai_agents: it asks the suite's fake model (which calls `deploy`), its
`deploy` tool needs approval, records each execution in the shared effects file, then sleeps
`hang` s (so a test can kill a process inside it)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from bot.adapters.openai_agents import OpenAIAgentsAgent
from tests.fault.agents import record


def deployer_agent(
    model_url: str, effects_path: str | Path, hang: float = 0.0
) -> OpenAIAgentsAgent:
    set_tracing_disabled(True)  # traces would go to OpenAI's servers

    @function_tool(needs_approval=True)
    async def deploy(environment: str, version: str) -> str:
        """Deploy a version to an environment."""
        record(
            effects_path,
            {"tool": "deploy", "version": version, "pid": os.getpid(), "at": time.time()},
        )
        if hang:
            await asyncio.sleep(hang)  # a body that takes time: a test kills the process in it
        return f"{version} runs on {environment}"

    model = OpenAIChatCompletionsModel(
        "fake", AsyncOpenAI(base_url=model_url, api_key="test-key", max_retries=1)
    )
    agent = Agent(name="deployer", instructions="You deploy.", model=model, tools=[deploy])
    return OpenAIAgentsAgent(agent, "deployer")

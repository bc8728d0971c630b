"""Agents for the fault suite: every tool body records its side effect durably in a file.

The file is shared by all processes of a test (one line per execution, appended with O_APPEND
and fsync), so the test can count executions across replicas, including killed ones.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from bot.agent import (
    Agent,
    AgentHumanReviewRequest,
    HumanReviewContext,
    ToolContext,
    tool,
)
from bot.agent.models import ModelSettings, OpenAIChatModel
from bot.testing.fake_model import chat_completion

DEPLOY_ARGS = {"environment": "staging", "version": "v2"}
ANSWER = "Deployed v2 to staging."
DRAFT = "DRAFT: we refunded your order."
HELPER_DONE = "Thanks, all done."
"""The `helper` agent's last word, after its question is answered or its draft reviewed."""
WITH_OPENAI_AGENTS = "FAULT_OPENAI_AGENTS"
WITH_LANGGRAPH = "FAULT_LANGGRAPH"


def _helper(body: dict[str, Any], request: str) -> dict[str, Any]:
    """`helper`: "question ..." asks `ask_user`, then thanks; "draft ..." writes a draft
    (which a person reviews), then thanks."""
    messages = body.get("messages", [])
    if "question" in request and not any(m.get("role") == "tool" for m in messages):
        call = {"id": f"call_{uuid.uuid4().hex[:12]}", "name": "ask_user"}
        return chat_completion(tool_calls=[{**call, "arguments": {"question": "Region?"}}])
    drafted = any(str(m.get("content") or "").startswith("DRAFT") for m in messages)
    if "draft" in request and not drafted:
        return chat_completion(text=DRAFT, request=body)
    return chat_completion(text=HELPER_DONE, request=body)


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """The model, stateless so concurrent runs get the right answer: ask for `deploy` until
    the conversation holds a tool result, then answer with text (`helper`: see `_helper`)."""
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    if "ask_user" in tools:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        return _helper(body, str(users[0].get("content") or "") if users else "")
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return chat_completion(text=ANSWER, request=body)
    call = {"id": f"call_{uuid.uuid4().hex[:12]}", "name": "deploy", "arguments": DEPLOY_ARGS}
    return chat_completion(tool_calls=[call], request=body)


def record(path: str | Path, entry: dict[str, Any]) -> None:
    """Append one JSON line and fsync it: the line survives a SIGKILL right after."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def executions(path: str | Path) -> list[dict[str, Any]]:
    """Every execution recorded so far (empty when nothing ran)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def make_agents(
    model_url: str,
    effects_path: str | Path,
    hang: float = 0.0,
    min_approvals: int = 1,
    escalate_after: float | None = None,
) -> list[Agent]:
    """The `ops` agent with one approval tool, `deploy` (needing `min_approvals` people); its
    body sleeps `hang` s after recording its side effect (so a test can kill the process
    inside the body; with `escalate_after`, U_APPROVER is called in after that many s), and the
    Pydantic AI `scaler` agent (tests/fault/framework_agents.py) and, with WITH_OPENAI_AGENTS
    set in the environment, the OpenAI Agents SDK `deployer` agent
    (tests/fault/openai_agents_agents.py), with WITH_LANGGRAPH the LangGraph `lgscaler` agent
    (tests/fault/langgraph_agents.py), which hang the same way."""

    @tool(
        require_approval=True,
        min_approvals=min_approvals,
        escalate_after=escalate_after,
        escalate_to=["U_APPROVER"] if escalate_after else (),
    )
    async def deploy(
        environment: Literal["staging", "production"],
        version: str,
        ctx: ToolContext | None = None,
    ) -> dict:
        """Deploy a version to an environment."""
        record(
            effects_path,
            {
                "tool": "deploy",
                "version": version,
                "key": ctx.idempotency_key if ctx else None,
                "pid": os.getpid(),
                "at": time.time(),
            },
        )
        if hang:
            await asyncio.sleep(hang)  # a body that takes time: a test kills the process in it
        return {"status": "deployed", "environment": environment, "version": version}

    @tool(kind="hitl")
    def ask_user(question: str) -> str:
        """Ask the person a question and wait for their answer."""
        raise NotImplementedError  # a person answers in place of the body

    def review(ctx: HumanReviewContext) -> AgentHumanReviewRequest | None:
        content = ctx.response.message.content or ""
        if content.startswith("DRAFT"):
            return AgentHumanReviewRequest("A customer reply needs sign-off", {"draft": content})
        return None

    model = OpenAIChatModel("fake", base_url=model_url, api_key="test-key")
    settings = ModelSettings(timeout=10, max_retries=1, backoff_base=0.01, backoff_max=0.05)
    from tests.fault.framework_agents import scaler_agent  # it imports `record` from here

    agents = [
        Agent(
            id="ops",
            model=model,
            instructions="You run operations.",
            tools=[deploy],
            model_settings=settings,
        ),
        scaler_agent(effects_path, hang),
        Agent(
            id="helper",
            model=model,
            instructions="You help.",
            tools=[ask_user],
            human_review=review,
            model_settings=settings,
        ),
    ]
    if os.environ.get(WITH_OPENAI_AGENTS) == "1":  # the SDK takes seconds to import
        from tests.fault.openai_agents_agents import deployer_agent

        agents.append(deployer_agent(model_url, effects_path, hang))
    if os.environ.get(WITH_LANGGRAPH) == "1":  # LangChain takes seconds to import
        from tests.fault.langgraph_agents import langgraph_scaler_agent

        agents.append(langgraph_scaler_agent(effects_path, hang))
    return agents

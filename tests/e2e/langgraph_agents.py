"""A LangChain v1 agent for the LangGraph adapter's tests: `create_agent` with
HumanInTheLoopMiddleware on a scripted fake chat model, its tool runs counted in a file
(so a test sees them across processes)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware.human_in_the_loop import InterruptMode
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import Field

ASKED: dict[str, Any] = {"service": "api", "replicas": 2}


class ScriptedChatModel(GenericFakeChatModel):
    """langchain_core's fake chat model, answering from the conversation rather than a list
    (so a fresh process continues where the last one stopped): asked to scale, a call to
    `scale` with ASKED (its `replicas` changed by the field), then, once the tool answered,
    "<said>: <its answer>"; asked anything else, "you said: <it> (request <how many the
    conversation holds>)"."""

    messages: Any = iter(())
    replicas: int = ASKED["replicas"]  # what the call asks for
    said: str = "tool said"  # how the answer starts

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"{self.said}: {str(last.content).rsplit(chr(10), 1)[-1]}")
        elif "scale" not in str(last.content).lower():
            asked = sum(isinstance(m, HumanMessage) for m in messages)
            reply = AIMessage(f"you said: {last.content} (request {asked})")
        else:
            args = {**ASKED, "replicas": self.replicas}
            call = {"name": "scale", "args": args, "id": "call-1", "type": "tool_call"}
            reply = AIMessage("", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def runs(path: Path) -> list[dict[str, Any]]:
    """The tool's runs recorded in `path`, one JSON object a line."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def scaling_agent(
    checkpointer: BaseCheckpointSaver[Any] | None,
    runs_file: Path,
    *,
    allowed: list[Any] | None = None,
    mode: InterruptMode = "batched",
    name: str | None = None,
    hang: float = 0.0,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """An agent whose model asks to scale `api` to 2 replicas, approved through the
    middleware (`allowed` decisions, all by default); its tool records each run, then sleeps
    `hang` s (so a test can kill the process inside it)."""

    @tool
    def scale(service: str, replicas: Annotated[int, Field(ge=1, le=10)] = 1) -> str:
        """Scale a service."""
        with runs_file.open("a") as out:
            out.write(json.dumps({"service": service, "replicas": replicas}) + "\n")
        if hang:
            time.sleep(hang)  # a body that takes time: a test kills the process in it
        return f"{service} x{replicas}"

    interrupt_on: dict[str, Any] = {"scale": {"allowed_decisions": allowed} if allowed else True}
    return create_agent(
        ScriptedChatModel(),
        [scale],
        middleware=[HumanInTheLoopMiddleware(interrupt_on, interrupt_mode=mode)],
        checkpointer=checkpointer,
        name=name,
    )

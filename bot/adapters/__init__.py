"""Agents of other frameworks, approved in Slack: LangGraph, the OpenAI Agents SDK and Pydantic AI.

Each framework has a module with drivers for its own loop (`resolve`, ...) and `agent(obj, ...)`,
which lets `/sayso` run the framework's agent (see `bot.adapters.framework`).
"""

from __future__ import annotations

import importlib
from typing import Any

from bot.agent import Agent

FRAMEWORKS = {
    "pydantic_ai": "bot.adapters.pydantic_ai",
    "agents": "bot.adapters.openai_agents",
    "langgraph": "bot.adapters.langgraph",
}
"""The top-level package of a framework's agent type, and the sayso adapter for it."""


def as_agent(obj: Any) -> Agent:
    """A sayso agent for `obj`: itself if it is one, else the adapter of its framework."""
    if isinstance(obj, Agent):
        return obj
    package = type(obj).__module__.split(".")[0]
    adapter = FRAMEWORKS.get(package)
    if adapter is None:
        raise TypeError(
            f"{obj!r} is not an Agent, a LangGraph graph, an OpenAI Agents SDK Agent "
            "or a Pydantic AI Agent"
        )
    try:
        module = importlib.import_module(adapter)
    except ImportError as exc:
        extra = adapter.rsplit(".", 1)[1].replace("_", "-")
        raise TypeError(f"{obj!r} needs sayso[{extra}] installed ({exc})") from None
    wrapped: Agent = module.agent(obj)
    return wrapped

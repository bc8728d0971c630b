"""The agents this bot runs, loaded from `module:attribute`: an Agent or a list of them, where
an agent of LangGraph, the OpenAI Agents SDK or Pydantic AI is taken as it is (`bot.adapters`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bot.agent import Agent, Tool
from bot.agent.schema_tool import api_tool
from store import ApprovalRequestRecord


class AgentRegistry:
    def __init__(self, agents: Iterable[Agent]) -> None:
        self._agents: dict[str, Agent] = {}
        for agent in agents:
            if not isinstance(agent, Agent):
                raise TypeError(f"{agent!r} is not an Agent")
            if agent.id in self._agents:
                raise ValueError(f"Two agents are named {agent.id!r}")
            self._agents[agent.id] = agent
        if not self._agents:
            raise ValueError("No agents to run: SAYSO_AGENTS names an empty list")

    def get(self, agent_id: str) -> Agent | None:
        return self._agents.get(agent_id)

    def tool(self, agent_id: str, tool_name: str) -> Tool | None:
        agent = self._agents.get(agent_id)
        return agent.tools.get(tool_name) if agent else None

    def tool_of(self, agent_id: str, request: ApprovalRequestRecord) -> Tool | None:
        """The tool behind a request: the agent's, or the one an API request describes."""
        if request.spec.api_spec is not None:
            return api_tool(request.spec.api_spec, request.spec.tool_name, request.spec.kind)
        return self.tool(agent_id, request.spec.tool_name)

    @property
    def ids(self) -> list[str]:
        return list(self._agents)

    def __iter__(self) -> Iterator[Agent]:
        return iter(self._agents.values())

    def __len__(self) -> int:
        return len(self._agents)

    @property
    def names_approvers(self) -> bool:
        """Does any agent or tool list its approvers? (Else any full member decides.)"""
        return any(a.approvers or any(t.approvers for t in a.tools.values()) for a in self)

    def approver_groups(self, defaults: Iterable[str]) -> set[str]:
        """Every user group named anywhere (for the inbox query)."""
        groups = {a for a in defaults if a.startswith("S")}
        for agent in self:
            groups |= {a for a in agent.approvers if a.startswith("S")}
            for t in agent.tools.values():
                groups |= {a for a in t.approvers if a.startswith("S")}
        return groups

"""Parsing `/sayso [agent] <request>` and `@sayso [agent] <request>`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.agent import Agent
from bot.service.registry import AgentRegistry

MAX_REQUEST_CHARS = 4000
_MENTION = re.compile(r"<@[UW][A-Z0-9_]+(\|[^>]*)?>")


@dataclass(frozen=True)
class Command:
    kind: str  # help | start | error
    agent: Agent | None = None
    text: str = ""
    message: str = ""


def parse(text: str, agents: AgentRegistry) -> Command:
    text = _MENTION.sub("", text or "").strip()
    if not text or text.lower() in ("help", "-h", "--help", "?"):
        return Command("help")
    first, _, rest = text.partition(" ")
    agent = agents.get(first)
    if agent is not None:
        request = rest.strip()
        if not request:
            return Command(
                "error",
                message=f"Tell `{agent.id}` what to do: `/sayso {agent.id} <request>`.",
            )
    elif len(agents) == 1:
        agent, request = next(iter(agents)), text
    else:
        return Command(
            "error",
            message=(
                f"I don't know an agent called `{first}`. Agents: "
                + ", ".join(f"`{a}`" for a in agents.ids)
                + ". Try `/sayso help`."
            ),
        )
    if len(request) > MAX_REQUEST_CHARS:
        return Command(
            "error",
            message=f"That request is too long: {len(request)} of {MAX_REQUEST_CHARS} characters.",
        )
    return Command("start", agent=agent, text=request)

"""sayso: a Slack approval bot for AI agents.

The public API for writing agents is importable from here.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: `import bot.<module>` stays cheap (see __getattr__)
if TYPE_CHECKING:
    from typing import Any

    from bot.agent import (
        SCHEMA_VERSION,
        Agent,
        AgentHumanReviewRequest,
        AgentStateAccessor,
        AgentToolDecision,
        AgentToolEdit,
        AgentToolOutput,
        HumanReviewContext,
        InMemoryStateAccessor,
        Message,
        ModelSettings,
        PendingToolCall,
        Rule,
        RunEvent,
        RunResult,
        Sensitive,
        Tool,
        ToolCall,
        ToolCallDecision,
        ToolContext,
        ToolError,
        tool,
    )

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "Agent",
    "AgentHumanReviewRequest",
    "AgentStateAccessor",
    "AgentToolDecision",
    "AgentToolEdit",
    "AgentToolOutput",
    "HumanReviewContext",
    "InMemoryStateAccessor",
    "Message",
    "ModelSettings",
    "PendingToolCall",
    "Rule",
    "RunEvent",
    "RunResult",
    "Sensitive",
    "Tool",
    "ToolCall",
    "ToolCallDecision",
    "ToolContext",
    "ToolError",
    "tool",
]


def __getattr__(name: str) -> Any:
    """The public names load `bot.agent` on first use: `import bot.<module>` stays cheap
    (`sayso hook claude-code` answers an ungated call in a few tens of milliseconds)."""
    if name in __all__:
        import bot.agent

        return getattr(bot.agent, name)
    raise AttributeError(f"module 'bot' has no attribute {name!r}")

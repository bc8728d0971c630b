"""sayso: a Slack approval bot for AI agents.

The public API for writing agents is importable from here.
"""

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

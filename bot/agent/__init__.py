"""The agent runtime: tools, runs that pause for people, and continuation from saved data.

It knows nothing of Slack or SQL and could ship on its own.
"""

from bot.agent.accessor import AgentStateAccessor, InMemoryStateAccessor
from bot.agent.agent import Agent
from bot.agent.decisions import (
    AgentHumanReviewRequest,
    AgentToolDecision,
    AgentToolEdit,
    AgentToolOutput,
    HumanReviewContext,
    RunEvent,
)
from bot.agent.errors import ModelError, ToolError, UnknownSchemaVersionError
from bot.agent.messages import Message, ModelResponse, ToolCall, Usage
from bot.agent.models import ModelSettings
from bot.agent.rules import Rule
from bot.agent.sensitive import Sensitive
from bot.agent.state import (
    SCHEMA_VERSION,
    Pause,
    PendingToolCall,
    Run,
    RunResult,
    ToolCallDecision,
)
from bot.agent.tools import Tool, ToolContext, tool

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
    "ModelError",
    "ModelResponse",
    "ModelSettings",
    "Pause",
    "PendingToolCall",
    "Rule",
    "Run",
    "RunEvent",
    "RunResult",
    "Sensitive",
    "Tool",
    "ToolCall",
    "ToolCallDecision",
    "ToolContext",
    "ToolError",
    "UnknownSchemaVersionError",
    "Usage",
    "tool",
]

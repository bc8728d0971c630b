"""Conversation data: messages, tool calls and model responses (provider-neutral)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One tool call proposed by the model. `id` is the provider's call id."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Message(BaseModel):
    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # an assistant answer the provider cut off at its output token limit (max_tokens / length)
    truncated: bool = False


class Usage(BaseModel):
    """Token usage, summed over every model request of a run."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class ModelResponse(BaseModel):
    message: Message
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None

    @property
    def truncated(self) -> bool:
        """The answer was cut off at the output token limit (its message says so too)."""
        return self.message.truncated


def complete_history(messages: list[Message]) -> list[Message]:
    """The conversation up to its first unfinished turn: an assistant message whose tool calls
    did not all get results (a run that failed or stopped mid-turn). Providers refuse such a
    history, so a follow-up starts from the part that is whole."""
    for i, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        wanted = {c.id for c in message.tool_calls}
        answered = set()
        for later in messages[i + 1 :]:
            if later.role != "tool":
                break
            answered.add(later.tool_call_id)
        if not wanted <= answered:
            return messages[:i]
    return list(messages)

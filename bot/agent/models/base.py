"""The model interface every provider implements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bot.agent.messages import Message, ModelResponse


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ModelSettings:
    """Timeouts and retry policy for model requests."""

    timeout: float = 60.0
    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    temperature: float | None = None
    max_tokens: int | None = None


@runtime_checkable
class Model(Protocol):
    name: str

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings,
    ) -> ModelResponse: ...

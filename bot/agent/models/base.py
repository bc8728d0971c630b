"""The model interface every provider implements, and the optional streaming interface."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bot.agent.errors import ModelError
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


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer's text, as the model writes it."""

    text: str


@dataclass(frozen=True)
class FinalResponse:
    """The last event of a stream: the whole response, the same as `Model.request` returns."""

    response: ModelResponse


StreamEvent = TextDelta | FinalResponse


@runtime_checkable
class Model(Protocol):
    name: str

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings,
    ) -> ModelResponse: ...


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model that can also stream: text deltas as they come, then one `FinalResponse`.

    The text deltas joined equal the final message's content (whitespace-only text is held
    back until real text follows, so a stream never shows blank text before a tool call).
    """

    def stream(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        settings: ModelSettings,
    ) -> AsyncIterator[StreamEvent]: ...


TextCallback = Callable[[str], Awaitable[None]]


async def respond(
    model: Model,
    messages: list[Message],
    tools: list[ToolSpec],
    settings: ModelSettings,
    on_text: TextCallback | None = None,
) -> ModelResponse:
    """One model response: streamed through `on_text` when the model streams, else requested."""
    if on_text is None or not isinstance(model, StreamingModel):
        return await model.request(messages, tools, settings)
    final: ModelResponse | None = None
    async for event in model.stream(messages, tools, settings):
        if isinstance(event, TextDelta):
            await on_text(event.text)
        else:
            final = event.response
    if final is None:
        raise ModelError(f"Model {model.name} ended its stream without a response", retryable=True)
    return final

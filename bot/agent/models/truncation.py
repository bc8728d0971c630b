"""Answers cut off at the output token limit (`max_tokens` on Anthropic, `length` on OpenAI).

- A text answer cut off is returned with `message.truncated = True`: the run keeps it and says
  it was cut off.
- A tool call cut off is never returned: its input is partial and may still validate. The
  request is made once more with twice the limit; if the call is cut off again, the request
  fails with a `ModelError` saying so, and the run fails without running anything.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from bot.agent.errors import ModelError
from bot.agent.messages import ModelResponse, Usage
from bot.agent.models.base import FinalResponse, StreamEvent, TextDelta

log = logging.getLogger("sayso.agent")

CUT_OFF_REASONS = frozenset({"max_tokens", "length"})
DEFAULT_MAX_TOKENS = 4096  # what sayso asks Anthropic for when ModelSettings.max_tokens is None
MAX_TOKENS_CEILING = 32768  # a retry never asks for more output tokens than this

# one attempt of a request, given the max_tokens to ask for (None: the provider's default)
Attempt = Callable[[int | None], Awaitable[ModelResponse]]
StreamAttempt = Callable[[int | None], AsyncIterator[StreamEvent]]


def is_cut_off(finish_reason: str | None) -> bool:
    return finish_reason in CUT_OFF_REASONS


def has_cut_off_tool_call(response: ModelResponse) -> bool:
    return response.truncated and bool(response.message.tool_calls)


def _usage_of(*responses: ModelResponse) -> Usage:
    total = Usage()
    for response in responses:
        total.add(response.usage)
    return total


def _cut_off(tokens: int, *, retried: bool) -> ModelError:
    why = (
        "even after a retry with twice the limit"
        if retried
        else f"the most sayso asks for (ceiling {MAX_TOKENS_CEILING})"
    )
    return ModelError(
        f"The model's tool call was cut off at {tokens} tokens (max_tokens), {why}; "
        "the call was not run. Raise ModelSettings(max_tokens=...) or ask for smaller tool inputs."
    )


async def complete_tool_calls(
    first: ModelResponse, used: int | None, attempt: Attempt
) -> ModelResponse:
    """`first` when its tool calls are whole; else one retry with a higher limit, or an error."""
    if not has_cut_off_tool_call(first):
        return first
    reached = used or first.usage.output_tokens or DEFAULT_MAX_TOKENS
    higher = min(reached * 2, MAX_TOKENS_CEILING)
    if higher <= reached:
        raise _cut_off(reached, retried=False)
    log.warning(
        "event=tool_call_cut_off model=%s max_tokens=%d retry_max_tokens=%d",
        first.model,
        reached,
        higher,
    )
    second = await attempt(higher)
    if has_cut_off_tool_call(second):
        raise _cut_off(higher, retried=True)
    return second.model_copy(update={"usage": _usage_of(first, second)})


async def request_whole(attempt: Attempt, used: int | None) -> ModelResponse:
    """A response whose tool calls are never cut off (see the module docstring)."""
    return await complete_tool_calls(await attempt(used), used, attempt)


class _BlankTextGate:
    """Holds whitespace-only text back until real text follows (then lets it all through)."""

    def __init__(self) -> None:
        self._held = ""
        self._open = False

    def feed(self, text: str) -> str:
        if self._open:
            return text
        self._held += text
        if not self._held.strip():
            return ""
        self._open = True
        text, self._held = self._held, ""
        return text


async def stream_whole(
    stream_attempt: StreamAttempt, attempt: Attempt, used: int | None
) -> AsyncIterator[StreamEvent]:
    """Text deltas, then the response, whose tool calls are never cut off.

    A retry after a cut-off tool call is not streamed: the final response is what counts.
    """
    gate = _BlankTextGate()
    final: ModelResponse | None = None
    async for event in stream_attempt(used):
        if isinstance(event, FinalResponse):
            final = event.response
            continue
        text = gate.feed(event.text)
        if text:
            yield TextDelta(text)
    if final is None:
        raise ModelError("The model's stream ended without a response", retryable=True)
    yield FinalResponse(await complete_tool_calls(final, used, attempt))

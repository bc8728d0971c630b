"""`scripted:<name>`: a deterministic offline model for demos and tests.

A script is a function from the conversation (and the tools on offer) to the next assistant
message. Register one with `@register_script("name")` and use it as `model="scripted:name"`.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, overload

from bot.agent.messages import Message, ModelResponse, ToolCall, Usage
from bot.agent.models.base import FinalResponse, ModelSettings, StreamEvent, TextDelta, ToolSpec
from bot.agent.util import estimate_tokens

ScriptReply = Message | str | ToolCall | list[ToolCall]
ScriptFn = Callable[[list[Message], list[ToolSpec]], Any]

_SCRIPTS: dict[str, ScriptFn] = {}


@overload
def register_script(name: str, fn: None = None) -> Callable[[ScriptFn], ScriptFn]: ...


@overload
def register_script(name: str, fn: ScriptFn) -> ScriptFn: ...


def register_script(
    name: str, fn: ScriptFn | None = None
) -> ScriptFn | Callable[[ScriptFn], ScriptFn]:
    """Register a script under `name` (usable as a decorator)."""

    def wrap(f: ScriptFn) -> ScriptFn:
        _SCRIPTS[name] = f
        return f

    return wrap(fn) if fn is not None else wrap


def call(name: str, /, **arguments: Any) -> ToolCall:
    """A tool call for a script to return; its id is assigned when the reply is made.

    `name` is positional-only, so a tool may itself have a `name` argument.
    """
    return ToolCall(id="", name=name, arguments=arguments)


def _to_message(reply: ScriptReply, turn: int) -> Message:
    if isinstance(reply, Message):
        message = reply
    elif isinstance(reply, str):
        message = Message(role="assistant", content=reply)
    elif isinstance(reply, ToolCall):
        message = Message(role="assistant", tool_calls=[reply])
    else:
        message = Message(role="assistant", tool_calls=list(reply))
    calls = [
        c if c.id else c.model_copy(update={"id": f"call_{turn}_{i}"})
        for i, c in enumerate(message.tool_calls)
    ]
    return message.model_copy(update={"tool_calls": calls})


@register_script("echo")
def _echo(messages: list[Message], tools: list[ToolSpec]) -> str:
    last = next((m.content for m in reversed(messages) if m.role == "user"), "")
    return f"You said: {last}"


class ScriptedModel:
    """Replies from a registered script name, a function, or a fixed list of replies."""

    def __init__(
        self, script: str | ScriptFn | Sequence[ScriptReply], *, stream_delay: float = 0.0
    ) -> None:
        self.stream_delay = stream_delay  # seconds between streamed words (a demo reads live)
        if isinstance(script, str):
            if script not in _SCRIPTS:
                known = ", ".join(sorted(_SCRIPTS)) or "none"
                raise ValueError(f"Unknown script {script!r} (registered scripts: {known})")
            self.name = f"scripted:{script}"
            self._fn: ScriptFn = _SCRIPTS[script]
        elif callable(script):
            self.name = f"scripted:{getattr(script, '__name__', 'custom')}"
            self._fn = script
        else:
            replies = list(script)
            self.name = "scripted:list"

            def from_list(messages: list[Message], tools: list[ToolSpec]) -> ScriptReply:
                turn = sum(1 for m in messages if m.role == "assistant")
                if turn >= len(replies):
                    return "(script finished)"
                return replies[turn]

            self._fn = from_list

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        reply = self._fn(messages, tools)
        if inspect.isawaitable(reply):
            reply = await reply
        turn = sum(1 for m in messages if m.role == "assistant") + 1
        message = _to_message(reply, turn)
        prompt = sum(estimate_tokens(m.content or "") for m in messages)
        completion = estimate_tokens(message.content or "") + 10 * len(message.tool_calls)
        if message.truncated:
            finish_reason = "length"
        else:
            finish_reason = "tool_calls" if message.tool_calls else "stop"
        return ModelResponse(
            message=message,
            usage=Usage(requests=1, input_tokens=prompt, output_tokens=completion),
            finish_reason=finish_reason,
            model=self.name,
        )

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamEvent]:
        """The scripted reply's text word by word, then the reply itself (as `request`)."""
        response = await self.request(messages, tools, settings)
        for word in re.findall(r"\S+\s*|\s+", response.message.content or ""):
            if self.stream_delay:
                await asyncio.sleep(self.stream_delay)
            yield TextDelta(word)
        yield FinalResponse(response)

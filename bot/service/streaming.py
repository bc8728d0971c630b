"""Run callbacks with an optional text sink: the answer streams to the front end as it is
written (the loop reads `on_text` from the `on_event` callback it is given)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.agent import RunEvent


class TextSink(Protocol):
    """Where a run's text goes as the model writes it (e.g. a Slack stream in the thread)."""

    async def text(self, delta: str) -> None: ...

    async def event(self, event: RunEvent) -> None:
        """Told of every run event (a model response ends the text of that response)."""
        ...


class RunCallbacks:
    """The `on_event` callback of one drive of a run; `on_text` is set when text streams."""

    def __init__(
        self, progress: Callable[[RunEvent], Awaitable[None]], sink: TextSink | None = None
    ) -> None:
        self.progress = progress
        self.sink = sink
        self.on_text: Callable[[str], Awaitable[None]] | None = sink.text if sink else None

    async def __call__(self, event: RunEvent) -> None:
        if self.sink is not None:
            await self.sink.event(event)
        await self.progress(event)

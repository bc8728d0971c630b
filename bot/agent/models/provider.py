"""What the HTTP providers share: the client, whole and streamed requests, and the stream loop.

A provider (OpenAI-compatible chat completions, Anthropic messages) says only what differs:
its URL, headers and payload, how a whole answer is asked for and parsed, and how its stream
events are assembled (`StreamAssembler`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, Protocol, TypeVar

from bot.agent.errors import ModelError
from bot.agent.messages import Message, ModelResponse
from bot.agent.models.base import FinalResponse, ModelSettings, StreamEvent, TextDelta, ToolSpec
from bot.agent.models.http import Sessions, post_json, post_sse
from bot.agent.models.truncation import request_whole, stream_whole

RequestObserver = Callable[[str, float, str, Any], None]
REQUEST_OBSERVERS: list[RequestObserver] = []
"""Told of each model request: (model name, seconds, outcome `ok` / `error`, usage or None).
bot/ops/metrics.py counts them; the runtime itself knows nothing of metrics."""


def _observe(model: str, started: float, outcome: str, usage: Any) -> None:
    seconds = time.perf_counter() - started
    for observer in REQUEST_OBSERVERS:
        try:
            observer(model, seconds, outcome, usage)
        except Exception:  # an observer never breaks a model request
            pass


class StreamAssembler(Protocol):
    """Builds one answer from a provider's stream events."""

    @property
    def finished(self) -> bool: ...

    def add(self, event: dict[str, Any]) -> str | None:
        """Take one event; return the text it adds to the answer, if any."""


A = TypeVar("A", bound=StreamAssembler)


class HttpModel(ABC, Generic[A]):
    """A model behind an HTTP API (subclasses set `provider` and `default_base_url`)."""

    provider = ""
    default_base_url = ""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.model = model
        self.name = f"{self.provider}:{model}"
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self._api_key = api_key
        self._sessions = Sessions()

    # -- what a provider says --------------------------------------------------------------

    @property
    @abstractmethod
    def _url(self) -> str:
        raise NotImplementedError

    @property
    @abstractmethod
    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    @abstractmethod
    def _payload(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> dict[str, Any]:
        """The request body without max_tokens (raises EmptyPromptError for a blank prompt)."""
        raise NotImplementedError

    @abstractmethod
    def _body(self, payload: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
        """The body of a whole request with this output limit."""
        raise NotImplementedError

    @abstractmethod
    def _stream_body(self, payload: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
        """The body of a streamed request with this output limit."""
        raise NotImplementedError

    @abstractmethod
    def _parse(self, data: dict[str, Any]) -> ModelResponse:
        raise NotImplementedError

    @abstractmethod
    def _assembler(self) -> A:
        raise NotImplementedError

    @abstractmethod
    def _streamed(self, events: A) -> ModelResponse:
        """The whole answer of a finished stream, as `_parse` gives it for a whole request."""
        raise NotImplementedError

    def _limit(self, settings: ModelSettings) -> int | None:
        """The output limit of a first attempt (None: the provider's own)."""
        return settings.max_tokens

    # -- shared ----------------------------------------------------------------------------

    async def _complete(
        self, payload: dict[str, Any], max_tokens: int | None, settings: ModelSettings
    ) -> ModelResponse:
        body = self._body(payload, max_tokens)
        started = time.perf_counter()
        try:
            session = await self._sessions.get()
            data = await post_json(session, self._url, body, self._headers, settings.timeout)
            response = self._parse(data)
        except BaseException:
            _observe(self.name, started, "error", None)
            raise
        _observe(self.name, started, "ok", response.usage)
        return response

    async def _stream_once(
        self, payload: dict[str, Any], max_tokens: int | None, settings: ModelSettings
    ) -> AsyncIterator[StreamEvent]:
        body = self._stream_body(payload, max_tokens)
        events = self._assembler()
        started = time.perf_counter()
        try:
            async for event in post_sse(
                await self._sessions.get(), self._url, body, self._headers, settings.timeout
            ):
                text = events.add(event)
                if text:
                    yield TextDelta(text)
            if not events.finished:
                raise ModelError(
                    "The model's stream ended before its answer was complete", retryable=True
                )
            response = self._streamed(events)
        except BaseException:
            _observe(self.name, started, "error", None)
            raise
        _observe(self.name, started, "ok", response.usage)
        yield FinalResponse(response)

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        payload = self._payload(messages, tools, settings)
        return await request_whole(
            lambda limit: self._complete(payload, limit, settings), self._limit(settings)
        )

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamEvent]:
        """Text deltas as the model writes them, then the same response `request` returns."""
        payload = self._payload(messages, tools, settings)
        async for event in stream_whole(
            lambda limit: self._stream_once(payload, limit, settings),
            lambda limit: self._complete(payload, limit, settings),
            self._limit(settings),
        ):
            yield event

    async def aclose(self) -> None:
        """Close the HTTP session of the running event loop."""
        await self._sessions.aclose()

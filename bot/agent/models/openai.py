"""Any OpenAI-compatible Chat Completions endpoint (OpenAI, OpenRouter, Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bot.agent.errors import ModelError
from bot.agent.messages import Message, ModelResponse, ToolCall, Usage
from bot.agent.models.base import FinalResponse, ModelSettings, StreamEvent, TextDelta, ToolSpec
from bot.agent.models.history import answer_text, sendable
from bot.agent.models.http import post_json, post_sse
from bot.agent.models.limits import is_cut_off, request_whole, stream_whole
from bot.agent.models.openai_stream import ChunkAssembler


def _to_wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content or "",
        }
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in message.tool_calls
        ]
    return wire


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return {"__invalid_json__": str(raw)[:2000]}
    return parsed if isinstance(parsed, dict) else {"__invalid_json__": str(raw)[:2000]}


def parse_completion(data: dict[str, Any], model: str) -> ModelResponse:
    try:
        choice = data["choices"][0]
        msg = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelError(f"Model answered without choices: {str(data)[:300]}") from None
    calls = [
        ToolCall(
            id=c.get("id") or f"call_{i}",
            name=c["function"]["name"],
            arguments=_parse_arguments(c["function"].get("arguments")),
        )
        for i, c in enumerate(msg.get("tool_calls") or [])
    ]
    usage = data.get("usage") or {}
    finish_reason = choice.get("finish_reason")
    return ModelResponse(
        message=Message(
            role="assistant",
            content=answer_text(msg.get("content")),
            tool_calls=calls,
            truncated=is_cut_off(finish_reason),
        ),
        usage=Usage(
            requests=1,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
        finish_reason=finish_reason,
        model=data.get("model") or model,
    )


def _tools_to_wire(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


class OpenAIChatModel:
    """`openai:<model>`: POST {base_url}/chat/completions with standard messages and tools."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._client = client

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient()
        return self._client

    @property
    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _payload(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> dict[str, Any]:
        """The request body without max_tokens (raises EmptyPromptError for a blank prompt)."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [_to_wire(m) for m in sendable(messages)],
        }
        if tools:
            payload["tools"] = _tools_to_wire(tools)
        if settings.temperature is not None:
            payload["temperature"] = settings.temperature
        return payload

    async def _complete(
        self, payload: dict[str, Any], max_tokens: int | None, settings: ModelSettings
    ) -> ModelResponse:
        body = payload if max_tokens is None else {**payload, "max_tokens": max_tokens}
        data = await post_json(self._http(), self._url, body, self._headers, settings.timeout)
        return parse_completion(data, self.model)

    async def _stream_once(
        self, payload: dict[str, Any], max_tokens: int | None, settings: ModelSettings
    ) -> AsyncIterator[StreamEvent]:
        body = {**payload, "stream": True, "stream_options": {"include_usage": True}}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        chunks = ChunkAssembler()
        async for chunk in post_sse(self._http(), self._url, body, self._headers, settings.timeout):
            text = chunks.add(chunk)
            if text:
                yield TextDelta(text)
        if not chunks.finished:
            raise ModelError(
                "The model's stream ended before its answer was complete", retryable=True
            )
        yield FinalResponse(parse_completion(chunks.completion(), self.model))

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        payload = self._payload(messages, tools, settings)
        return await request_whole(
            lambda limit: self._complete(payload, limit, settings), settings.max_tokens
        )

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> AsyncIterator[StreamEvent]:
        """Text deltas as the model writes them, then the same response `request` returns."""
        payload = self._payload(messages, tools, settings)
        async for event in stream_whole(
            lambda limit: self._stream_once(payload, limit, settings),
            lambda limit: self._complete(payload, limit, settings),
            settings.max_tokens,
        ):
            yield event

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

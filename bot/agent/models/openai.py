"""Any OpenAI-compatible Chat Completions endpoint (OpenAI, OpenRouter, Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import json
from typing import Any

from bot.agent.errors import ModelError
from bot.agent.messages import Message, ModelResponse, ToolCall, Usage
from bot.agent.models.base import ModelSettings, ToolSpec
from bot.agent.models.history import answer_text, sendable
from bot.agent.models.openai_stream import ChunkAssembler
from bot.agent.models.provider import HttpModel
from bot.agent.models.truncation import is_cut_off


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


class OpenAIChatModel(HttpModel[ChunkAssembler]):
    """`openai:<model>`: POST {base_url}/chat/completions with standard messages and tools."""

    provider = "openai"
    default_base_url = "https://api.openai.com/v1"

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

    def _body(self, payload: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
        return payload if max_tokens is None else {**payload, "max_tokens": max_tokens}

    def _stream_body(self, payload: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
        body = {**payload, "stream": True, "stream_options": {"include_usage": True}}
        return self._body(body, max_tokens)

    def _parse(self, data: dict[str, Any]) -> ModelResponse:
        return parse_completion(data, self.model)

    def _assembler(self) -> ChunkAssembler:
        return ChunkAssembler()

    def _streamed(self, events: ChunkAssembler) -> ModelResponse:
        return parse_completion(events.completion(), self.model)

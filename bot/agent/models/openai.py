"""Any OpenAI-compatible Chat Completions endpoint (OpenAI, OpenRouter, Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from bot.agent.errors import ModelError
from bot.agent.messages import Message, ModelResponse, ToolCall, Usage
from bot.agent.models.base import ModelSettings, ToolSpec
from bot.agent.models.http import post_json


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
    return ModelResponse(
        message=Message(role="assistant", content=msg.get("content"), tool_calls=calls),
        usage=Usage(
            requests=1,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
        finish_reason=choice.get("finish_reason"),
        model=data.get("model") or model,
    )


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

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        payload: dict[str, Any] = {"model": self.model, "messages": [_to_wire(m) for m in messages]}
        if tools:
            payload["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
        if settings.temperature is not None:
            payload["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            payload["max_tokens"] = settings.max_tokens
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        data = await post_json(
            self._http(), f"{self.base_url}/chat/completions", payload, headers, settings.timeout
        )
        return parse_completion(data, self.model)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

"""`anthropic:<model>`: the Anthropic Messages API."""

from __future__ import annotations

from typing import Any

import httpx

from bot.agent.errors import ModelError
from bot.agent.messages import Message, ModelResponse, ToolCall, Usage
from bot.agent.models.base import ModelSettings, ToolSpec
from bot.agent.models.http import post_json

API_VERSION = "2023-06-01"


def _to_wire(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    system = "\n\n".join(m.content or "" for m in messages if m.role == "system")
    wire: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": m.content or "",
            }
            if wire and wire[-1]["role"] == "user" and isinstance(wire[-1]["content"], list):
                wire[-1]["content"].append(block)
            else:
                wire.append({"role": "user", "content": [block]})
            continue
        if m.role == "assistant":
            content: list[dict[str, Any]] = []
            if m.content:
                content.append({"type": "text", "text": m.content})
            for c in m.tool_calls:
                content.append(
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                )
            wire.append({"role": "assistant", "content": content})
            continue
        wire.append({"role": "user", "content": [{"type": "text", "text": m.content or ""}]})
    return system, wire


class AnthropicModel:
    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.anthropic.com",
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._client = client

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        system, wire = _to_wire(messages)
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            "max_tokens": settings.max_tokens or 4096,
        }
        if system:
            payload["system"] = system
        if tools:
            payload["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        if settings.temperature is not None:
            payload["temperature"] = settings.temperature
        headers = {"anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        if self._client is None:
            self._client = httpx.AsyncClient()
        data = await post_json(
            self._client, f"{self.base_url}/v1/messages", payload, headers, settings.timeout
        )
        if not isinstance(data.get("content"), list):
            raise ModelError(f"Anthropic answered without content: {str(data)[:300]}")
        text = "".join(b.get("text", "") for b in data["content"] if b.get("type") == "text")
        calls = [
            ToolCall(id=b["id"], name=b["name"], arguments=b.get("input") or {})
            for b in data["content"]
            if b.get("type") == "tool_use"
        ]
        usage = data.get("usage") or {}
        return ModelResponse(
            message=Message(role="assistant", content=text or None, tool_calls=calls),
            usage=Usage(
                requests=1,
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
            ),
            finish_reason=data.get("stop_reason"),
            model=data.get("model") or self.model,
        )

"""`anthropic:<model>`: the Anthropic Messages API."""

from __future__ import annotations

from typing import Any

from bot.agent.errors import ModelError
from bot.agent.messages import Message, ModelResponse, ToolCall, Usage
from bot.agent.models.anthropic_stream import EventAssembler
from bot.agent.models.base import ModelSettings, ToolSpec
from bot.agent.models.history import answer_text, is_blank, sendable
from bot.agent.models.provider import HttpModel
from bot.agent.models.truncation import DEFAULT_MAX_TOKENS, is_cut_off

API_VERSION = "2023-06-01"


def _blocks(m: Message) -> tuple[str, list[dict[str, Any]]]:
    """The role and content blocks of one message (its text is never blank here)."""
    if m.role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
        if not is_blank(m.content):  # content is optional; blank text would be refused
            result["content"] = m.content
        return "user", [result]
    content: list[dict[str, Any]] = []
    if m.content:
        content.append({"type": "text", "text": m.content})
    for c in m.tool_calls:
        content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
    return m.role, content


def _to_wire(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """System text and messages; consecutive messages of one role become one message."""
    kept = sendable(messages)
    system = "\n\n".join(m.content or "" for m in kept if m.role == "system")
    wire: list[dict[str, Any]] = []
    for m in kept:
        if m.role == "system":
            continue
        role, blocks = _blocks(m)
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return system, wire


def parse_message(data: dict[str, Any], model: str) -> ModelResponse:
    """A Messages API response body (streamed responses are assembled into the same shape)."""
    content = data.get("content")
    if not isinstance(content, list):
        raise ModelError(f"Anthropic answered without content: {str(data)[:300]}")
    text = "".join(str(b.get("text") or "") for b in content if b.get("type") == "text")
    calls = [
        ToolCall(id=b["id"], name=b["name"], arguments=b.get("input") or {})
        for b in content
        if b.get("type") == "tool_use"
    ]
    usage = data.get("usage") or {}
    stop_reason = data.get("stop_reason")
    return ModelResponse(
        message=Message(
            role="assistant",
            content=answer_text(text),
            tool_calls=calls,
            truncated=is_cut_off(stop_reason),
        ),
        usage=Usage(
            requests=1,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
        ),
        finish_reason=stop_reason,
        model=data.get("model") or model,
    )


class AnthropicModel(HttpModel[EventAssembler]):
    """`anthropic:<model>`: POST {base_url}/v1/messages."""

    provider = "anthropic"
    default_base_url = "https://api.anthropic.com"

    @property
    def _url(self) -> str:
        return f"{self.base_url}/v1/messages"

    @property
    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def _payload(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> dict[str, Any]:
        """The request body without max_tokens (raises EmptyPromptError for a blank prompt)."""
        system, wire = _to_wire(messages)
        payload: dict[str, Any] = {"model": self.model, "messages": wire}
        if system:
            payload["system"] = system
        if tools:
            payload["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        if settings.temperature is not None:
            payload["temperature"] = settings.temperature
        return payload

    def _body(self, payload: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
        return {**payload, "max_tokens": max_tokens or DEFAULT_MAX_TOKENS}

    def _stream_body(self, payload: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
        return {**self._body(payload, max_tokens), "stream": True}

    def _parse(self, data: dict[str, Any]) -> ModelResponse:
        return parse_message(data, self.model)

    def _assembler(self) -> EventAssembler:
        return EventAssembler()

    def _streamed(self, events: EventAssembler) -> ModelResponse:
        return parse_message(events.message(), self.model)

    def _limit(self, settings: ModelSettings) -> int | None:
        return settings.max_tokens or DEFAULT_MAX_TOKENS

"""Chat Completions streaming: chunks (`stream: true`) assembled into one completion body.

The body has the shape of a non-streamed response, so the same parser reads both and a
streamed answer is exactly the answer the non-streamed request would have given.
"""

from __future__ import annotations

from typing import Any

from bot.agent.errors import ModelError


class ChunkAssembler:
    """Collects `chat.completion.chunk` events; `add` returns the text delta of a chunk."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, dict[str, str]] = {}
        self._finish_reason: str | None = None
        self._usage: dict[str, Any] | None = None
        self._model: str | None = None
        self._id: str | None = None

    @property
    def finished(self) -> bool:
        return self._finish_reason is not None

    def add(self, chunk: dict[str, Any]) -> str:
        if isinstance(chunk.get("error"), dict):
            error = chunk["error"]
            raise ModelError(f"Model provider failed mid-stream: {error.get('message') or error}")
        self._model = chunk.get("model") or self._model
        self._id = chunk.get("id") or self._id
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        text = ""
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) == 0:
                text += self._add_choice(choice)
        return text

    def _add_choice(self, choice: dict[str, Any]) -> str:
        if choice.get("finish_reason"):
            self._finish_reason = choice["finish_reason"]
        delta = choice.get("delta") or {}
        for call in delta.get("tool_calls") or []:
            self._add_call(call)
        text = delta.get("content")
        if isinstance(text, str) and text:
            self._text.append(text)
            return text
        return ""

    def _add_call(self, call: dict[str, Any]) -> None:
        slot = self._calls.setdefault(int(call.get("index", 0)), {"name": "", "arguments": ""})
        if call.get("id"):
            slot["id"] = call["id"]
        function = call.get("function") or {}
        slot["name"] += function.get("name") or ""
        slot["arguments"] += function.get("arguments") or ""

    def completion(self) -> dict[str, Any]:
        """The whole response, shaped like a non-streamed Chat Completions body."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) or None}
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": slot.get("id") or f"call_{index}",
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": slot["arguments"]},
                }
                for index, slot in sorted(self._calls.items())
            ]
        return {
            "id": self._id,
            "object": "chat.completion",
            "model": self._model,
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish_reason}],
            "usage": self._usage or {},
        }

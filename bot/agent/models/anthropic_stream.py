"""Messages API streaming: SSE events assembled into one message body.

The body has the shape of a non-streamed response (content blocks, stop_reason, usage), so
the same parser reads both and a streamed answer is exactly the non-streamed one.
"""

from __future__ import annotations

import json
from typing import Any

from bot.agent.errors import ModelError

RETRYABLE_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


def tool_input(raw: str) -> dict[str, Any]:
    """A tool_use input from its streamed JSON (partial JSON, when cut off, is kept visible)."""
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"__invalid_json__": raw[:2000]}
    return parsed if isinstance(parsed, dict) else {"__invalid_json__": raw[:2000]}


class EventAssembler:
    """Collects message_start, content_block_* and message_delta events; `add` returns text."""

    def __init__(self) -> None:
        self._message: dict[str, Any] = {}
        self._usage: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self.finished = False

    def add(self, event: dict[str, Any]) -> str:
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(int(event.get("index", 0)), event.get("delta") or {})
        if kind == "message_start":
            self._message = dict(event.get("message") or {})
            self._usage.update(self._message.get("usage") or {})
        elif kind == "content_block_start":
            index = int(event.get("index", 0))
            self._blocks[index] = dict(event.get("content_block") or {})
            if self._blocks[index].get("type") == "tool_use":
                self._json[index] = []
        elif kind == "message_delta":
            self._message.update(event.get("delta") or {})
            self._usage.update(event.get("usage") or {})
        elif kind == "message_stop":
            self.finished = True
        elif kind == "error":
            self._fail(event.get("error") or {})
        return ""  # ping, content_block_stop and event types added later carry no text

    def _delta(self, index: int, delta: dict[str, Any]) -> str:
        block = self._blocks.setdefault(index, {"type": "text", "text": ""})
        if delta.get("type") == "text_delta":
            text = str(delta.get("text") or "")
            block["text"] = str(block.get("text") or "") + text
            return text
        if delta.get("type") == "input_json_delta":
            self._json.setdefault(index, []).append(str(delta.get("partial_json") or ""))
        return ""

    @staticmethod
    def _fail(error: dict[str, Any]) -> None:
        kind = error.get("type")
        raise ModelError(
            f"Anthropic failed mid-stream ({kind}): {error.get('message') or error}",
            retryable=kind in RETRYABLE_ERRORS,
        )

    def message(self) -> dict[str, Any]:
        """The whole message, shaped like a non-streamed Messages API body."""
        content = []
        for index, block in sorted(self._blocks.items()):
            if index in self._json:
                block = {**block, "input": tool_input("".join(self._json[index]))}
            content.append(block)
        return {**self._message, "content": content, "usage": self._usage}

"""The Anthropic Messages API as the fake serves it: bodies, SSE events, and the requests the
real API refuses with HTTP 400 (with its own error messages)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

JsonObject = dict[str, Any]
SseEvent = tuple[str, JsonObject]

EMPTY_TEXT = "text content blocks must be non-empty"
BLANK_TEXT = "text content blocks must contain non-whitespace text"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> JsonObject:
    """An error body as the Messages API writes it."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def partial_input(raw: str) -> JsonObject:
    """What a cut-off tool input reads as once closed: often valid, which is the danger."""
    for tail in ("", '"}', "}", '"]}', "]}", "}}"):
        try:
            value = json.loads(raw + tail)
        except ValueError:
            continue
        return value if isinstance(value, dict) else {}
    return {}


def anthropic_message(
    *,
    text: str | None = None,
    tool_calls: Sequence[JsonObject] = (),
    model: str = "fake-model",
    stop_reason: str | None = None,
    usage: dict[str, int] | None = None,
    message_id: str = "msg_fake",
) -> JsonObject:
    """A Messages API response body. `tool_calls` items are `{"id", "name", "arguments"}`
    (arguments a dict, or a raw JSON string that may be cut off)."""
    content: list[JsonObject] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    for c in tool_calls:
        args = c["arguments"]
        content.append(
            {
                "type": "tool_use",
                "id": c["id"],
                "name": c["name"],
                "input": partial_input(args) if isinstance(args, str) else args,
            }
        )
    usage = usage or {}
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_calls else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
        },
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _block_events(index: int, block: JsonObject, raw: str | None, size: int) -> list[SseEvent]:
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        text = raw if raw is not None else json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(text, size)]
    else:
        start = {**block, "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block.get("text", ""), size)]
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        *[
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ],
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def message_events(
    body: JsonObject, *, raw_inputs: dict[str, str] | None = None, size: int = 5
) -> list[SseEvent]:
    """A message body as its SSE stream: message_start, content blocks in pieces of `size`
    characters, message_delta (stop_reason, output tokens) and message_stop.

    `raw_inputs` (tool_use id -> JSON text) streams a tool input as given, e.g. cut off.
    """
    raw_inputs = raw_inputs or {}
    usage = body.get("usage") or {}
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1}
    events: list[SseEvent] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(body.get("content") or []):
        events += _block_events(index, block, raw_inputs.get(block.get("id", "")), size)
    delta = {"stop_reason": body.get("stop_reason"), "stop_sequence": None}
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": delta,
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# -- what the real API refuses ---------------------------------------------------------------


def _check_text(text: Any, where: str) -> str | None:
    if not isinstance(text, str) or text == "":
        return f"{where}: {EMPTY_TEXT}"
    if not text.strip():
        return f"{where}: {BLANK_TEXT}"
    return None


def _check_blocks(blocks: list[Any], where: str) -> str | None:
    for block in blocks:
        if not isinstance(block, dict):
            return f"{where}: content blocks must be objects"
        if block.get("type") == "text":
            problem = _check_text(block.get("text"), where)
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            problem = _check_blocks(block["content"], where)
        else:
            problem = None
        if problem:
            return problem
    return None


def _content_blocks(i: int, m: JsonObject, final_assistant: bool) -> list[JsonObject] | str:
    """The content blocks of message `i`, or what the API says is wrong with them."""
    content = m.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        return f"messages.{i}.content: Input should be a valid list"
    if not content:
        if final_assistant:
            return []
        return (
            f"messages.{i}: all messages must have non-empty content except for the "
            "optional final assistant message"
        )
    problem = _check_blocks(content, "messages")
    if problem:
        return problem
    last = content[-1]
    if final_assistant and last.get("type") == "text" and last["text"] != last["text"].rstrip():
        return "final assistant content cannot end with trailing whitespace"
    return content


def _check_results(i: int, blocks: list[JsonObject], open_ids: list[str]) -> str | None:
    results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
    missing = [cid for cid in open_ids if cid not in results]
    if missing:
        return (
            f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
            f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
            "`tool_result` block in the next message."
        )
    for j, cid in enumerate(results):
        if cid not in open_ids:
            return (
                f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                f"blocks: {cid}. Each `tool_result` block must have a corresponding "
                "`tool_use` block in the previous message."
            )
    return None


def _check_messages(messages: list[Any]) -> str | None:
    open_ids: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        final_assistant = role == "assistant" and i == len(messages) - 1
        blocks = _content_blocks(i, m, final_assistant)
        if isinstance(blocks, str):
            return blocks
        problem = _check_results(i, blocks, open_ids)
        if problem:
            return problem
        open_ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    if open_ids:
        return f"`tool_use` ids were found without `tool_result` blocks: {', '.join(open_ids)}"
    return None


def _check_tools(tools: list[Any]) -> str | None:
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or not TOOL_NAME.match(str(t.get("name") or "")):
            return f"tools.{i}.custom.name: String should match pattern '{TOOL_NAME.pattern}'"
        schema = t.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{i}.custom.input_schema.type: Input should be 'object'"
    return None


def _check_top(body: JsonObject) -> str | None:
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return f"{name}: Field required"
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    system = body.get("system")
    if isinstance(system, list):
        return _check_blocks(system, "system")
    return None


def check_messages_request(body: Any) -> str | None:
    """What the Messages API refuses with HTTP 400 (None when fine): blank or empty text
    blocks, messages without content, `tool_use` without its `tool_result` right after,
    `tool_result` without its `tool_use`, trailing whitespace in a final assistant message."""
    if not isinstance(body, dict):
        return "Request body must be a JSON object"
    problem = _check_top(body)
    if problem:
        return problem
    messages = body["messages"]
    if not isinstance(messages, list):
        return "messages: Input should be a valid list"
    if not messages:
        return "messages: at least one message is required"
    return _check_messages(messages) or _check_tools(body.get("tools") or [])

"""The OpenAI Chat Completions API as the fake serves it: bodies, stream chunks, and the
requests the real API refuses with HTTP 400 (with its own error messages)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bot.agent.util import estimate_tokens

JsonObject = dict[str, Any]
ROLES = ("system", "user", "assistant", "tool", "developer")
NULL_CONTENT = "Invalid value for 'content': expected a string, got null."


def chat_completion(
    *,
    text: str | None = None,
    tool_calls: Sequence[JsonObject] = (),
    model: str = "fake-model",
    usage: dict[str, int] | None = None,
    finish_reason: str | None = None,
    request: JsonObject | None = None,
    completion_id: str = "chatcmpl-fake",
) -> JsonObject:
    """A standard Chat Completions response body.

    `tool_calls` items are `{"id", "name", "arguments"}` (arguments a dict or a raw string);
    arguments go on the wire as JSON strings, as real providers send them.
    """
    wire_calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {
                "name": c["name"],
                "arguments": c["arguments"]
                if isinstance(c["arguments"], str)
                else json.dumps(c["arguments"]),
            },
        }
        for c in tool_calls
    ]
    message: JsonObject = {"role": "assistant", "content": text}
    if wire_calls:
        message["tool_calls"] = wire_calls
    if usage is None:
        prompt = estimate_tokens((request or {}).get("messages", []))
        completion = estimate_tokens(text or "") + 10 * len(wire_calls)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage = {
        **usage,
        "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
    }
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 0,
        "model": (request or {}).get("model") or model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if wire_calls else "stop"),
            }
        ],
        "usage": usage,
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def chat_chunks(body: JsonObject, *, include_usage: bool, size: int = 5) -> list[JsonObject]:
    """A completion body as the `chat.completion.chunk` events of its stream (`stream: true`).

    Text and tool call arguments are split into pieces of `size` characters; with
    `include_usage` (`stream_options.include_usage`) a last chunk carries the usage.
    """
    choice = body["choices"][0]
    message = choice["message"]
    head = {"id": body.get("id"), "object": "chat.completion.chunk", "created": 0}
    head["model"] = body.get("model")
    if include_usage:
        head["usage"] = None

    def chunk(delta: JsonObject, finish_reason: str | None = None) -> JsonObject:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    out = [chunk({"role": "assistant", "content": ""})]
    if message.get("content"):
        out += [chunk({"content": piece}) for piece in _pieces(message["content"], size)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        first = {"index": index, "id": call["id"], "type": "function"}
        out.append(chunk({"tool_calls": [{**first, "function": {"name": function["name"]}}]}))
        for piece in _pieces(function["arguments"], size):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    out.append(chunk({}, choice.get("finish_reason")))
    if include_usage:
        out.append({**head, "choices": [], "usage": body.get("usage")})
    return out


def _dangling(open_calls: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        f"response messages: {', '.join(open_calls)}"
    )


def _check_tool_message(i: int, m: JsonObject, open_calls: list[str]) -> str | None:
    cid = m.get("tool_call_id")
    if cid not in open_calls:
        return (
            f"messages[{i}]: messages with role 'tool' must be a response to a preceding "
            f"message with 'tool_calls' (unknown or repeated tool_call_id {cid!r})"
        )
    open_calls.remove(cid)
    if not isinstance(m.get("content"), str):
        return f"messages[{i}]: tool message content must be a string"
    return None


def _assistant_call_ids(i: int, m: JsonObject) -> list[str] | str:
    """The call ids of an assistant message, or what is wrong with it."""
    calls = m.get("tool_calls")
    if calls == []:
        return (
            f"Invalid 'messages[{i}].tool_calls': empty array. Expected an array with "
            "minimum length 1, but got an empty array instead."
        )
    if not calls and m.get("content") is None:
        return NULL_CONTENT
    ids: list[str] = []
    for c in calls or []:
        fn = c.get("function") or {}
        if c.get("type") != "function" or not fn.get("name") or not c.get("id"):
            return f"messages[{i}]: malformed tool call {c!r}"
        if not isinstance(fn.get("arguments"), str):
            return f"messages[{i}]: tool call arguments must be a JSON string"
        ids.append(c["id"])
    if len(set(ids)) != len(ids):
        return f"messages[{i}]: duplicate tool_call ids {ids}"
    return ids


def _check_messages(messages: list[Any]) -> str | None:
    open_calls: list[str] = []  # ids of the last assistant message still waiting for a result
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ROLES:
            return f"messages[{i}]: invalid role {role!r}"
        if role == "tool":
            problem = _check_tool_message(i, m, open_calls)
            if problem:
                return problem
            continue
        if open_calls:
            return _dangling(open_calls)
        if role == "assistant":
            ids = _assistant_call_ids(i, m)
            if isinstance(ids, str):
                return ids
            open_calls = ids
        elif m.get("content") is None:
            return NULL_CONTENT
        elif not isinstance(m.get("content"), str | list):
            return f"messages[{i}]: {role} message content must be a string"
    return _dangling(open_calls) if open_calls else None


def _check_tools(tools: list[Any]) -> str | None:
    for t in tools:
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(fn, dict):
            return f"Invalid tool {t!r}"
        if not fn.get("name") or not isinstance(fn.get("parameters", {}), dict):
            return f"Invalid tool {t!r}"
        if fn.get("parameters", {}).get("type", "object") != "object":
            return f"Tool {fn['name']}: parameters must be a JSON Schema object"
    return None


def _check_options(body: JsonObject) -> str | None:
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        return (
            "Invalid 'max_tokens': integer below minimum value. "
            f"Expected a value >= 1, but got {max_tokens} instead."
        )
    if "stream_options" in body and not body.get("stream"):
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    return None


def check_chat_request(body: Any) -> str | None:
    """What a real Chat Completions provider would reject with HTTP 400 (None when fine).

    Checks the shape of messages and tools, null content, and that every tool call of an
    assistant message is answered by exactly one tool message before any other message.
    """
    if not isinstance(body, dict):
        return "Request body must be a JSON object"
    if not body.get("model"):
        return "you must provide a model parameter"
    messages = body.get("messages")
    if messages == []:
        return (
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead."
        )
    if not isinstance(messages, list):
        return "Missing required parameter: 'messages'."
    return (
        _check_messages(messages) or _check_tools(body.get("tools") or []) or _check_options(body)
    )

"""Built-in responders of the fake model server's script mode (`python -m bot.testing.fake_model`).

Scripts answer in the Chat Completions shape: `tool-then-text` (call `--tool`, or the first
tool offered, with `--arguments` or sample arguments built from its schema, then answer with
text once a tool result is present), `text` (always `--text`), `echo` (repeat the last user
message).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

from bot.testing.openai_api import chat_completion

JsonObject = dict[str, Any]
Script = Callable[[JsonObject], JsonObject]
SCRIPTS = ("tool-then-text", "text", "echo")


def sample_arguments(schema: JsonObject) -> JsonObject:
    """Plausible arguments for a JSON Schema object: enum -> first value, str -> "test", ..."""
    out: JsonObject = {}
    props = schema.get("properties") or {}
    for name in schema.get("required") or list(props):
        prop = props.get(name, {})
        if "default" in prop:
            out[name] = prop["default"]
        elif prop.get("enum"):
            out[name] = prop["enum"][0]
        elif "const" in prop:
            out[name] = prop["const"]
        else:
            kind = prop.get("type")
            out[name] = {
                "integer": 1,
                "number": 1.0,
                "boolean": True,
                "array": [],
                "object": {},
            }.get(kind, "test")
    return out


def _last_user_text(body: JsonObject) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def _chosen_tool(body: JsonObject, tool: str | None) -> JsonObject | None:
    """The tool to call: `tool` by name (offered or not), else the first tool offered."""
    offered: list[JsonObject] = [t["function"] for t in body.get("tools") or []]
    if tool is None:
        return offered[0] if offered else None
    return next((t for t in offered if t["name"] == tool), {"name": tool})


def build_script(
    name: str, *, tool: str | None = None, arguments: str | None = None, text: str = "Done."
) -> Script:
    """A built-in responder for script mode (see the module docstring)."""
    if name == "echo":
        return lambda body: chat_completion(text=f"You said: {_last_user_text(body)}", request=body)
    if name == "text":
        return lambda body: chat_completion(text=text, request=body)
    if name != "tool-then-text":
        raise ValueError(f"Unknown script {name!r}: use {', '.join(SCRIPTS)}")
    counter = itertools.count(1)

    def tool_then_text(body: JsonObject) -> JsonObject:
        messages = body.get("messages", [])
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return chat_completion(text=f"{text} Tool result: {last.get('content')}", request=body)
        chosen = _chosen_tool(body, tool)
        if chosen is None:
            return chat_completion(text=text, request=body)
        args = (
            json.loads(arguments) if arguments else sample_arguments(chosen.get("parameters") or {})
        )
        call = {"id": f"call_{next(counter)}", "name": chosen["name"], "arguments": args}
        return chat_completion(tool_calls=[call], request=body)

    return tool_then_text

"""Web API: assistant.threads.setStatus / setSuggestedPrompts / setTitle (the AI side pane).

A thread of the pane is opened with `sandbox.open_assistant(user)`; its status is cleared when
the app replies in it, as in Slack.
"""

from __future__ import annotations

from typing import Any

from bot.sandbox.api_chat import Handler
from bot.sandbox.core import SandboxCore
from bot.sandbox.messages import ApiError, require

MAX_PROMPTS = 4


def _pane(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = str(require(args, "channel_id", "channel_not_found"))
    thread_ts = str(require(args, "thread_ts", "invalid_arguments"))
    pane = sb.ws.assistant_threads.get((channel, thread_ts))
    if pane is None:
        raise ApiError("invalid_thread_ts")
    return pane


def set_status(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    status = args.get("status")
    if not isinstance(status, str):
        raise ApiError("invalid_arguments", detail="missing required argument status")
    _pane(sb, args)["status"] = status
    return {"ok": True}


def set_suggested_prompts(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    prompts = args.get("prompts")
    if not isinstance(prompts, list) or not 1 <= len(prompts) <= MAX_PROMPTS:
        raise ApiError("invalid_arguments", detail=f"prompts must be 1..{MAX_PROMPTS} items")
    for prompt in prompts:
        if not isinstance(prompt, dict) or not prompt.get("title") or not prompt.get("message"):
            raise ApiError("invalid_arguments", detail="each prompt needs a title and a message")
    pane = _pane(sb, args)
    pane["prompts"] = prompts
    pane["prompts_title"] = args.get("title")
    return {"ok": True}


def set_title(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    _pane(sb, args)["title"] = str(require(args, "title"))
    return {"ok": True}


METHODS: dict[str, Handler] = {
    "assistant.threads.setStatus": set_status,
    "assistant.threads.setSuggestedPrompts": set_suggested_prompts,
    "assistant.threads.setTitle": set_title,
}

"""Helpers shared by the Web API methods: argument parsing, Slack errors, bot messages."""

from __future__ import annotations

import json
import secrets
import string
from typing import Any

from bot.sandbox.blockkit import MAX_MESSAGE_TEXT, check_message_blocks
from bot.sandbox.state import APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID

JSON_FIELDS = ("blocks", "attachments", "view", "metadata", "users", "chunks", "prompts")


class ApiError(Exception):
    """A Slack Web API error answer: {"ok": false, "error": code, ...extra}."""

    def __init__(self, code: str, **extra: Any) -> None:
        super().__init__(code)
        self.code = code
        self.extra = extra

    def answer(self) -> dict[str, Any]:
        return {"ok": False, "error": self.code, **self.extra}


def decode_json_fields(args: dict[str, Any]) -> dict[str, Any]:
    """Form-encoded calls carry blocks/view/metadata as JSON strings; decode them."""
    out = dict(args)
    for key in JSON_FIELDS:
        value = out.get(key)
        if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
            try:
                out[key] = json.loads(value)
            except ValueError as exc:
                raise ApiError("invalid_arguments", detail=f"{key} is not valid JSON") from exc
    return out


def require(args: dict[str, Any], name: str, error: str | None = None) -> Any:
    value = args.get(name)
    if value in (None, ""):
        raise ApiError(error or "invalid_arguments", detail=f"missing required argument {name}")
    return value


def truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("1", "true", "yes"))


def slack_block_id() -> str:
    """Slack gives blocks without a block_id a short random one."""
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(5))


def fill_ids(blocks: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Copy blocks, giving every block a block_id and every element an action_id, like Slack."""
    filled: list[dict[str, Any]] = []
    for block in blocks or []:
        block = json.loads(json.dumps(block))
        block.setdefault("block_id", slack_block_id())
        elements = list(block.get("elements") or []) if block.get("type") == "actions" else []
        for key in ("accessory", "element"):
            if isinstance(block.get(key), dict):
                elements.append(block[key])
        for element in elements:
            if isinstance(element, dict) and element.get("type") not in (None, "image"):
                element.setdefault("action_id", slack_block_id())
        filled.append(block)
    return filled


def check_message(args: dict[str, Any], *, require_content: bool = True) -> None:
    """Slack's message checks: some content, text length, Block Kit limits."""
    text = args.get("text")
    blocks = args.get("blocks")
    if require_content and not text and not blocks and not args.get("attachments"):
        raise ApiError("no_text")
    if isinstance(text, str) and len(text) > MAX_MESSAGE_TEXT:
        raise ApiError("msg_too_long")
    if blocks is not None:
        errors = check_message_blocks(blocks)
        if errors:
            raise ApiError(
                "invalid_blocks",
                errors=errors,
                response_metadata={"messages": [f"[ERROR] {e}" for e in errors]},
            )


def bot_profile() -> dict[str, Any]:
    return {
        "id": BOT_ID,
        "app_id": APP_ID,
        "name": "sayso",
        "icons": {},
        "deleted": False,
        "team_id": TEAM_ID,
    }


def bot_message(args: dict[str, Any]) -> dict[str, Any]:
    """The stored form of a message the bot posts (ts is added by the workspace)."""
    message: dict[str, Any] = {
        "user": BOT_USER_ID,
        "bot_id": BOT_ID,
        "app_id": APP_ID,
        "text": args.get("text") or "",
        "bot_profile": bot_profile(),
    }
    if args.get("blocks") is not None:
        message["blocks"] = fill_ids(args["blocks"])
    if args.get("attachments"):
        message["attachments"] = args["attachments"]
    if args.get("thread_ts"):
        message["thread_ts"] = str(args["thread_ts"])
    if isinstance(args.get("metadata"), dict):
        message["metadata"] = args["metadata"]
    return message

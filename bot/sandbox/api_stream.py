"""Web API: chat.startStream / chat.appendStream / chat.stopStream (streamed bot replies).

A stream is a bot message in a thread whose `markdown_text` grows; while it streams the
message carries `"streaming": true`. `refuse_streaming` on the sandbox makes every
startStream fail, as a workspace that does not allow it would.
"""

from __future__ import annotations

from typing import Any

from bot.sandbox.api_chat import Handler, existing_channel, own_message, resolve_channel
from bot.sandbox.blockkit import MAX_MARKDOWN_TEXT
from bot.sandbox.core import SandboxCore
from bot.sandbox.messages import ApiError, bot_message, check_message, require

REFUSED = "feature_not_enabled"


def _chunks_text(args: dict[str, Any]) -> str:
    """The markdown text a call adds: `markdown_text` and any markdown_text chunks."""
    text = args.get("markdown_text") or ""
    chunks = args.get("chunks") or []
    if not isinstance(chunks, list):
        raise ApiError("invalid_arguments", detail="chunks must be an array")
    for chunk in chunks:
        if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str):
            raise ApiError("invalid_chunks")
        if chunk["type"] == "markdown_text":
            if not isinstance(chunk.get("text"), str):
                raise ApiError("invalid_chunks")
            text += chunk["text"]
    if not isinstance(text, str) or len(text) > MAX_MARKDOWN_TEXT:
        raise ApiError("msg_too_long")
    return text


def _grow(message: dict[str, Any], text: str) -> None:
    total = message.get("markdown_text", "") + text
    if len(total) > MAX_MARKDOWN_TEXT * 4:
        raise ApiError("msg_too_long")
    message["markdown_text"] = total
    message["text"] = total


def _streaming(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = existing_channel(sb, args)
    message = own_message(sb, channel, args.get("ts"), "cant_update_message")
    if not message.get("streaming"):
        raise ApiError("message_not_in_streaming_state")
    return message


def start_stream(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    if sb.refuse_streaming:
        raise ApiError(REFUSED)
    channel = resolve_channel(sb, args.get("channel"))
    thread_ts = str(require(args, "thread_ts"))
    if not channel.startswith("D"):  # in channels Slack streams to one person
        require(args, "recipient_team_id", "missing_recipient_team_id")
        user = require(args, "recipient_user_id", "missing_recipient_user_id")
        if user not in sb.ws.people:
            raise ApiError("user_not_found")
    text = _chunks_text(args)
    stored = bot_message({"thread_ts": thread_ts, "text": text})
    stored.update(streaming=True, markdown_text=text)
    try:
        message = sb.ws.add_message(channel, stored)
    except LookupError as exc:
        raise ApiError("thread_not_found") from exc
    return {"ok": True, "channel": channel, "ts": message["ts"]}


def append_stream(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    message = _streaming(sb, args)
    text = _chunks_text(args)
    if not text:
        raise ApiError("invalid_arguments", detail="markdown_text or chunks is required")
    _grow(message, text)
    return {"ok": True, "channel": args["channel"], "ts": message["ts"]}


def stop_stream(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    message = _streaming(sb, args)
    _grow(message, _chunks_text(args))
    if args.get("blocks"):
        check_message({"text": message["text"] or "-", "blocks": args["blocks"]})
        message["blocks"] = bot_message({"blocks": args["blocks"]})["blocks"]
    message.pop("streaming", None)
    return {"ok": True, "channel": args["channel"], "ts": message["ts"], "message": message}


METHODS: dict[str, Handler] = {
    "chat.startStream": start_stream,
    "chat.appendStream": append_stream,
    "chat.stopStream": stop_stream,
}

"""Web API: chat.* and reactions.add."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.sandbox.core import SandboxCore
from bot.sandbox.messages import ApiError, bot_message, check_message, fill_ids, require
from bot.sandbox.state import BOT_ID, BOT_USER_ID

Handler = Callable[[SandboxCore, dict[str, Any]], dict[str, Any]]


def resolve_channel(sb: SandboxCore, channel: Any) -> str:
    """A channel id; a user id means the bot's DM with that person (D + rest of the id)."""
    if not isinstance(channel, str) or not channel:
        raise ApiError("channel_not_found")
    if channel[0] in "UW":
        if channel not in sb.ws.people:
            raise ApiError("channel_not_found")
        channel = "D" + channel[1:]
    if channel.startswith("#"):
        for info in sb.ws.channels.values():
            if info["name"] == channel[1:]:
                return info["id"]
        raise ApiError("channel_not_found")
    sb.ws.ensure_channel(channel)
    return channel


def existing_channel(sb: SandboxCore, args: dict[str, Any]) -> str:
    channel = args.get("channel")
    if channel not in sb.ws.channels:
        raise ApiError("channel_not_found")
    return channel


def post_message(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = resolve_channel(sb, args.get("channel"))
    check_message(args)
    try:
        message = sb.ws.add_message(channel, bot_message(args))
    except LookupError as exc:
        raise ApiError("thread_not_found") from exc
    if sb.deliver_bot_messages:
        event = {
            "type": "message",
            "subtype": "bot_message",
            "channel": channel,
            "channel_type": "im" if channel.startswith("D") else "channel",
            "event_ts": message["ts"],
            **{k: v for k, v in message.items() if k not in ("type",)},
        }
        sb.spawn(sb.send_event(event))
    return {"ok": True, "channel": channel, "ts": message["ts"], "message": message}


def own_message(sb: SandboxCore, channel: str, ts: Any, error: str) -> dict[str, Any]:
    message = sb.ws.find(channel, str(ts)) if ts else None
    if message is None:
        raise ApiError("message_not_found")
    if message.get("bot_id") != BOT_ID:
        raise ApiError(error)
    return message


def update(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = existing_channel(sb, args)
    message = own_message(sb, channel, args.get("ts"), "cant_update_message")
    check_message(args, require_content=False)
    if args.get("text") is not None:
        message["text"] = args["text"]
    if args.get("blocks") is not None:  # omitted blocks are kept, [] removes them
        message["blocks"] = fill_ids(args["blocks"])
        message.pop("markdown_text", None)  # a streamed message now shows its blocks
    if args.get("attachments") is not None:
        message["attachments"] = args["attachments"]
    if isinstance(args.get("metadata"), dict):
        message["metadata"] = args["metadata"]
    message["edited"] = {"user": BOT_USER_ID, "ts": sb.ws.clock.next()}
    return {
        "ok": True,
        "channel": channel,
        "ts": message["ts"],
        "text": message["text"],
        "message": message,
    }


def delete(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = existing_channel(sb, args)
    message = own_message(sb, channel, args.get("ts"), "cant_delete_message")
    if message.get("reply_count"):  # a root with replies leaves a tombstone, as in Slack
        for key in ("blocks", "attachments", "bot_id", "app_id", "bot_profile", "metadata"):
            message.pop(key, None)
        message.update(subtype="tombstone", text="This message was deleted.", user="USLACKBOT")
    else:
        sb.ws.delete(channel, message["ts"])
    return {"ok": True, "channel": channel, "ts": message["ts"]}


def post_ephemeral(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = resolve_channel(sb, args.get("channel"))
    user = require(args, "user", "user_not_found")
    if user not in sb.ws.people:
        raise ApiError("user_not_found")
    check_message(args)
    message = bot_message(args)
    message.pop("metadata", None)
    eph = sb.ws.add_ephemeral(channel, user, message)
    return {"ok": True, "message_ts": eph.ts}


def permalink(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = existing_channel(sb, args)
    ts = str(require(args, "message_ts", "message_not_found"))
    if sb.ws.find(channel, ts) is None:
        raise ApiError("message_not_found")
    link = f"{sb.url}/archives/{channel}/p{ts.replace('.', '')}"
    return {"ok": True, "channel": channel, "permalink": link}


def _reaction_target(sb: SandboxCore, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The message `reactions.*` names, and the emoji name (without colons)."""
    channel = existing_channel(sb, args)
    name = str(require(args, "name", "invalid_name")).strip(":")
    message = sb.ws.find(channel, str(args.get("timestamp") or ""))
    if message is None:
        raise ApiError("message_not_found")
    return message, name


def reactions_add(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    message, name = _reaction_target(sb, args)
    reactions = message.setdefault("reactions", [])
    for reaction in reactions:
        if reaction["name"] == name:
            if BOT_USER_ID in reaction["users"]:
                raise ApiError("already_reacted")
            reaction["users"].append(BOT_USER_ID)
            reaction["count"] += 1
            break
    else:
        reactions.append({"name": name, "users": [BOT_USER_ID], "count": 1})
    return {"ok": True}


def reactions_remove(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    message, name = _reaction_target(sb, args)
    for reaction in message.get("reactions", []):
        if reaction["name"] == name and BOT_USER_ID in reaction["users"]:
            reaction["users"].remove(BOT_USER_ID)
            reaction["count"] -= 1
            if not reaction["count"]:
                message["reactions"].remove(reaction)
            return {"ok": True}
    raise ApiError("no_reaction")


METHODS: dict[str, Handler] = {
    "chat.postMessage": post_message,
    "chat.update": update,
    "chat.delete": delete,
    "chat.postEphemeral": post_ephemeral,
    "chat.getPermalink": permalink,
    "reactions.add": reactions_add,
    "reactions.remove": reactions_remove,
}

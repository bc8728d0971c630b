"""Web API: auth.test, team.info, users.*, usergroups.*, conversations.*."""

from __future__ import annotations

from typing import Any

from bot.sandbox.api_chat import Handler, existing_channel, resolve_channel
from bot.sandbox.core import SandboxCore
from bot.sandbox.messages import ApiError, truthy
from bot.sandbox.state import BOT_ID, BOT_USER_ID, TEAM_DOMAIN, TEAM_ID, TEAM_NAME

NO_MORE = {"next_cursor": ""}


def auth_test(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "ok": True,
        "url": f"https://{TEAM_DOMAIN}.slack.com/",
        "team": TEAM_NAME,
        "user": "sayso",
        "team_id": TEAM_ID,
        "user_id": BOT_USER_ID,
        "bot_id": BOT_ID,
        "is_enterprise_install": False,
    }


def team_info(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    team = {"id": TEAM_ID, "name": TEAM_NAME, "domain": TEAM_DOMAIN, "icon": {}}
    return {"ok": True, "team": team}


def users_info(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    person = sb.ws.people.get(args.get("user") or "")
    if person is None:
        raise ApiError("user_not_found")
    return {"ok": True, "user": person.to_slack()}


def users_list(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    members = [p.to_slack() for p in sb.ws.people.values()]
    return {"ok": True, "members": members, "cache_ts": 1700000000, "response_metadata": NO_MORE}


def usergroups_users_list(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    group = sb.ws.groups.get(args.get("usergroup") or "")
    if group is None:
        raise ApiError("no_such_subteam")
    return {"ok": True, "users": list(group.users)}


def usergroups_list(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    groups = []
    for group in sb.ws.groups.values():
        item: dict[str, Any] = {
            "id": group.id,
            "team_id": TEAM_ID,
            "handle": group.handle,
            "name": group.name,
            "is_usergroup": True,
            "user_count": len(group.users),
        }
        if truthy(args.get("include_users")):
            item["users"] = list(group.users)
        groups.append(item)
    return {"ok": True, "usergroups": groups}


def _limit(args: dict[str, Any], default: int) -> int:
    try:
        return max(1, min(int(args.get("limit") or default), 1000))
    except (TypeError, ValueError):
        return default


def _shown(messages: list[dict[str, Any]], args: dict[str, Any]) -> list[dict[str, Any]]:
    """Messages as Slack lists them: `metadata` only with include_all_metadata."""
    if truthy(args.get("include_all_metadata")):
        return messages
    return [{k: v for k, v in m.items() if k != "metadata"} for m in messages]


def _window(messages: list[dict[str, Any]], args: dict[str, Any]) -> list[dict[str, Any]]:
    if args.get("oldest"):
        messages = [m for m in messages if float(m["ts"]) > float(args["oldest"])]
    if args.get("latest"):
        messages = [m for m in messages if float(m["ts"]) < float(args["latest"])]
    return messages


def replies(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = existing_channel(sb, args)
    ts = str(args.get("ts") or "")
    thread = sb.ws.thread(channel, ts)
    if not thread:
        raise ApiError("thread_not_found")
    thread = _shown([thread[0], *_window(thread[1:], args)], args)  # the parent always comes
    limit = _limit(args, 1000)
    return {
        "ok": True,
        "messages": thread[:limit],
        "has_more": len(thread) > limit,
        "response_metadata": NO_MORE,
    }


def history(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = existing_channel(sb, args)
    messages = list(reversed(sb.ws.top_level(channel)))  # newest first, as Slack
    messages = _shown(_window(messages, args), args)
    limit = _limit(args, 100)
    return {
        "ok": True,
        "messages": messages[:limit],
        "has_more": len(messages) > limit,
        "pin_count": 0,
        "response_metadata": NO_MORE,
    }


def conversations_info(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    """A channel the bot could post in is one it can see (chat.postMessage makes any C… id a
    channel here): the same answer, so checking a channel before posting agrees with posting."""
    channel = resolve_channel(sb, args.get("channel"))
    return {"ok": True, "channel": sb.ws.channels[channel]}


def conversations_members(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    channel = existing_channel(sb, args)
    members = sb.ws.channel_members(channel)
    limit = _limit(args, 100)
    try:
        start = int(args.get("cursor") or 0)
    except (TypeError, ValueError):
        raise ApiError("invalid_cursor") from None
    page = members[start : start + limit]
    more = start + limit < len(members)
    cursor = {"next_cursor": str(start + limit) if more else ""}
    return {"ok": True, "members": page, "response_metadata": cursor}


def conversations_open(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    users = args.get("users")
    if isinstance(users, list):
        users = ",".join(users)
    if not users or "," in users:
        raise ApiError("invalid_arguments", detail="the sandbox opens one-person DMs only")
    channel = resolve_channel(sb, users)
    return {"ok": True, "channel": {"id": channel}}


METHODS: dict[str, Handler] = {
    "auth.test": auth_test,
    "team.info": team_info,
    "users.info": users_info,
    "users.list": users_list,
    "usergroups.users.list": usergroups_users_list,
    "usergroups.list": usergroups_list,
    "conversations.replies": replies,
    "conversations.history": history,
    "conversations.info": conversations_info,
    "conversations.open": conversations_open,
    "conversations.members": conversations_members,
}

"""Web API: views.open, views.push, views.update, views.publish.

Invalid views are answered as Slack answers views.*: ``invalid_arguments`` with the problems in
``response_metadata.messages`` (also listed in ``errors`` for convenience).
"""

from __future__ import annotations

from typing import Any

from bot.sandbox.api_chat import Handler
from bot.sandbox.blockkit import check_view
from bot.sandbox.core import SandboxCore
from bot.sandbox.messages import ApiError, fill_ids
from bot.sandbox.state import OpenView
from bot.sandbox.views import build_view, push_view, replace_view

MAX_STACK = 3


def checked_view(args: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
    """The `view` argument, validated, with block and action ids filled in as Slack does."""
    view = args.get("view")
    if not isinstance(view, dict):
        raise ApiError("invalid_arguments", response_metadata={"messages": ["view is required"]})
    view = {"type": kind, **view} if kind and "type" not in view else view
    errors = check_view(view)
    if kind and view.get("type") != kind:
        errors.append(f"must be {kind} [json-pointer:/view/type]")
    if errors:
        raise ApiError(
            "invalid_arguments",
            errors=errors,
            response_metadata={"messages": [f"[ERROR] {e}" for e in errors]},
        )
    return {**view, "blocks": fill_ids(view.get("blocks"))}


def _trigger_user(sb: SandboxCore, args: dict[str, Any]) -> str:
    """The person whose click made the call's trigger_id (used up by this call)."""
    user, error = sb.use_trigger(args.get("trigger_id"))
    if error:
        raise ApiError(error)
    assert user is not None
    return user


def open_view(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    view = checked_view(args, "modal")
    user = _trigger_user(sb, args)
    sb.ws.close_views(user, list(sb.ws.stacks.get(user, [])))  # a new modal replaces any open
    stored = push_view(sb.ws, user, view)
    return {"ok": True, "view": stored.view}


def push(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    view = checked_view(args, "modal")
    user = _trigger_user(sb, args)
    depth = len(sb.ws.stacks.get(user, []))
    if depth == 0:
        raise ApiError("not_found", detail="views.push needs an open modal")
    if depth >= MAX_STACK:
        raise ApiError("push_limit_reached")
    stored = push_view(sb.ws, user, view)
    return {"ok": True, "view": stored.view}


def find_view(sb: SandboxCore, args: dict[str, Any]) -> OpenView:
    stored: OpenView | None = None
    if args.get("view_id"):
        stored = sb.ws.views.get(args["view_id"])
    elif args.get("external_id"):
        stored = sb.ws.view_by_external_id(args["external_id"])
    else:
        raise ApiError("invalid_arguments", detail="view_id or external_id is required")
    if stored is None or stored.closed:
        raise ApiError("not_found")
    return stored


def update(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    stored = find_view(sb, args)
    view = checked_view(args, stored.view["type"])
    if args.get("hash") and args["hash"] != stored.view["hash"]:
        raise ApiError("hash_conflict")
    return {"ok": True, "view": replace_view(stored, view)}


def publish(sb: SandboxCore, args: dict[str, Any]) -> dict[str, Any]:
    user = args.get("user_id")
    if user not in sb.ws.people:
        raise ApiError("user_not_found")
    view = checked_view(args, "home")
    home_id = sb.ws.homes.get(user)
    if home_id is None:
        stored = OpenView(view=build_view(view), user=user)
        sb.ws.views[stored.view["id"]] = stored
        sb.ws.homes[user] = stored.view["id"]
        return {"ok": True, "view": stored.view}
    stored = sb.ws.views[home_id]
    if args.get("hash") and args["hash"] != stored.view["hash"]:
        raise ApiError("hash_conflict")
    return {"ok": True, "view": replace_view(stored, view)}


METHODS: dict[str, Handler] = {
    "views.open": open_view,
    "views.push": push,
    "views.update": update,
    "views.publish": publish,
}

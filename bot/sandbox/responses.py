"""response_url posts and slash-command ack bodies: how an app answers without the Web API."""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import web

from bot.sandbox.core import ResponseUrl, SandboxCore
from bot.sandbox.messages import (
    ApiError,
    bot_message,
    check_message,
    decode_json_fields,
    fill_ids,
    truthy,
)

log = logging.getLogger("sayso.sandbox")


def apply_response(sb: SandboxCore, target: ResponseUrl, body: dict[str, Any]) -> None:
    """Apply a message response: delete/replace the original, post in channel, or ephemeral.

    Raises ApiError for what Slack refuses (invalid blocks, nothing to say).
    """
    body = decode_json_fields(body)
    if truthy(body.get("delete_original")):
        _delete_original(sb, target)
        return
    check_message(body)
    if truthy(body.get("replace_original")) and target.message_ts:
        _replace_original(sb, target, body)
        return
    thread_ts = body.get("thread_ts") or target.thread_ts
    args = {**body, "thread_ts": thread_ts} if thread_ts else dict(body)
    if body.get("response_type") == "in_channel":
        try:
            sb.ws.add_message(target.channel, bot_message(args))
        except LookupError as exc:
            raise ApiError("thread_not_found") from exc
    else:
        message = bot_message(args)
        message.pop("metadata", None)
        sb.ws.add_ephemeral(target.channel, target.user, message)


def _delete_original(sb: SandboxCore, target: ResponseUrl) -> None:
    if not target.message_ts:
        raise ApiError("message_not_found")
    if target.is_ephemeral:
        eph = sb.ws.find_ephemeral(target.user, target.message_ts)
        if eph is not None:
            sb.ws.ephemerals.remove(eph)
        return
    sb.ws.delete(target.channel, target.message_ts)


def _replace_original(sb: SandboxCore, target: ResponseUrl, body: dict[str, Any]) -> None:
    if target.is_ephemeral:
        eph = sb.ws.find_ephemeral(target.user, target.message_ts or "")
        message = eph.message if eph else None
    else:
        message = sb.ws.find(target.channel, target.message_ts or "")
    if message is None:
        raise ApiError("message_not_found")
    message["text"] = body.get("text") or ""
    message["blocks"] = fill_ids(body.get("blocks") or [])


async def handle_response_url(sb: SandboxCore, request: web.Request) -> web.Response:
    """POST /sandbox/response/{key}: answers "ok" like Slack's response_url endpoint."""
    target, error = sb.response_target(request.match_info["key"])
    if error:
        log.warning("event=response_url_refused error=%s", error)
        return web.Response(status=404, text=error)
    assert target is not None
    try:
        body = json.loads(await request.text() or "{}")
        if not isinstance(body, dict):
            raise ValueError("not an object")
    except ValueError:
        return web.Response(status=400, text="invalid_payload")
    try:
        apply_response(sb, target, body)
    except ApiError as exc:
        log.warning("event=response_url_refused error=%s", exc.code)
        return web.Response(status=400, text=exc.code)
    finally:
        sb.changed()
    log.info("event=response_url_used channel=%s uses=%d", target.channel, target.uses)
    return web.Response(text="ok")

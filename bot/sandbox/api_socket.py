"""`POST /api/apps.connections.open` (app-level token) and `GET /sandbox/socket` (the socket).

apps.connections.open answers `{"ok": true, "url": "ws://…/sandbox/socket?ticket=…"}` for
the sandbox's `app_token`: `not_authed` without a token, `not_allowed_token_type` for the bot
token, `invalid_auth` for anything else. See socket_mode.py for the protocol.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from bot.sandbox.core import ApiCall, SandboxCore
from bot.sandbox.messages import ApiError
from bot.sandbox.webapi import read_args

log = logging.getLogger("sayso.sandbox")

METHOD = "apps.connections.open"


def add_routes(app: web.Application, sb: SandboxCore) -> None:
    """Register before the generic `/api/{method}` route so this one wins."""

    async def connections_open(request: web.Request) -> web.Response:
        return await open_connection(sb, request)

    app.router.add_route("*", f"/api/{METHOD}", connections_open)
    app.router.add_get("/sandbox/socket", sb.socket.serve)


async def open_connection(sb: SandboxCore, request: web.Request) -> web.Response:
    args: dict[str, Any] = {}
    headers: dict[str, str] = {}
    status = 200
    try:
        args, token = await read_args(request)
        if not token:
            raise ApiError("not_authed")
        if token == sb.bot_token:
            raise ApiError("not_allowed_token_type")
        if not sb.socket.app_token or token != sb.socket.app_token:
            raise ApiError("invalid_auth")
        failure = sb.take_failure(METHOD)
        if failure is not None:
            status = failure.status
            if failure.retry_after is not None:
                headers["Retry-After"] = str(failure.retry_after)
            raise ApiError(failure.error)
        answer: dict[str, Any] = {"ok": True, "url": sb.socket.issue_url(sb.url)}
    except ApiError as exc:
        answer = exc.answer()
    sb.calls.append(ApiCall(method=METHOD, args=args, response=answer))
    log.info("event=api_call method=%s ok=%s error=%s", METHOD, answer["ok"], answer.get("error"))
    sb.changed()
    return web.json_response(answer, status=status, headers=headers)

"""The Web API endpoint `POST /api/<method>`, answering as Slack answers.

Arguments are read from the query string, a form body or a JSON body (slack_sdk uses all
three), the token from `Authorization: Bearer` (or a `token` argument). Every call is recorded
in `sandbox.calls` with the token removed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from aiohttp import web

from bot.sandbox import api_assistant, api_chat, api_directory, api_stream, api_views
from bot.sandbox.api_chat import Handler
from bot.sandbox.core import ApiCall, SandboxCore
from bot.sandbox.messages import ApiError, decode_json_fields

log = logging.getLogger("sayso.sandbox")

METHODS: dict[str, Handler] = {
    **api_chat.METHODS,
    **api_stream.METHODS,
    **api_assistant.METHODS,
    **api_views.METHODS,
    **api_directory.METHODS,
}


async def read_args(request: web.Request) -> tuple[dict[str, Any], str | None]:
    """(arguments, token) from query, form or JSON body."""
    args: dict[str, Any] = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError as exc:
                raise ApiError("invalid_json") from exc
            if not isinstance(body, dict):
                raise ApiError("invalid_json")
            args.update(body)
        else:
            form = await request.post()
            args.update({k: v for k, v in form.items() if isinstance(v, str)})
    token = args.pop("token", None)
    auth = request.headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        token = auth[7:].strip()
    return args, token


class WebApi:
    """aiohttp handler bound to one sandbox."""

    def __init__(self, sandbox: SandboxCore) -> None:
        self.sb = sandbox

    async def handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        if self.sb.down.active():
            return self._unavailable(request, method)
        args: dict[str, Any] = {}
        headers: dict[str, str] = {}
        status = 200
        try:
            args, token = await read_args(request)
            args = decode_json_fields(args)
            if not token:
                raise ApiError("not_authed")
            if token != self.sb.bot_token:
                raise ApiError("invalid_auth")
            self.sb.limits.calls[method] += 1
            retry_after = self.sb.limits.retry_after(method, args.get("channel"))
            if retry_after is not None:
                status, headers["Retry-After"] = 429, str(retry_after)
                raise ApiError("ratelimited")
            failure = self.sb.take_failure(method)
            if failure is not None:
                status = failure.status
                if failure.retry_after is not None:
                    headers["Retry-After"] = str(failure.retry_after)
                raise ApiError(failure.error)
            handler = METHODS.get(method)
            if handler is None:
                raise ApiError("unknown_method")
            answer = handler(self.sb, args)
            if method == "auth.test":  # as Slack does: the token's scopes in a header
                headers["x-oauth-scopes"] = ",".join(self.sb.scopes)
        except ApiError as exc:
            answer = exc.answer()
        answer = json.loads(json.dumps(answer))  # detach from the stored state
        peer = request.transport.get_extra_info("peername") if request.transport else None
        connection = f"{peer[0]}:{peer[1]}" if peer else ""
        self.sb.calls.append(ApiCall(method, args, answer, connection))
        log.info(
            "event=api_call method=%s ok=%s error=%s",
            method,
            answer.get("ok"),
            answer.get("error", "-"),
        )
        self.sb.changed()
        slow = self.sb.take_slowness(method)
        if slow:
            await asyncio.sleep(slow)
        return web.json_response(answer, status=status, headers=headers)

    def _unavailable(self, request: web.Request, method: str) -> web.Response:
        """Slack is down: 503, or (mode "refuse") a connection that was kept alive breaks
        (new connections are refused: the server does not listen meanwhile)."""
        self.sb.limits.unavailable[method] += 1
        if self.sb.down.mode == "refuse" and request.transport is not None:
            request.transport.abort()
        answer = {"ok": False, "error": "service_unavailable"}
        return web.json_response(answer, status=503)

"""The sandbox web page: static files, state snapshot, live updates (SSE), UI actions.

The UI endpoints call the same Python methods tests use (slash_command, click, ...), so the
page and the tests exercise one code path.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from bot.sandbox.server import SlackSandbox

log = logging.getLogger("sayso.sandbox")

STATIC = Path(__file__).parent / "static"
DEFAULT_USER = "U_REQUESTER"
_CLOSING = "_page_streams_closing"


def add_routes(app: web.Application, sb: SlackSandbox) -> None:
    ui = _Ui(sb)
    app.router.add_get("/", ui.index)
    app.router.add_get("/favicon.ico", ui.favicon)
    app.router.add_static("/static/", STATIC)
    app.router.add_get("/sandbox/state", ui.state)
    app.router.add_get("/sandbox/events", ui.events)
    app.router.add_get("/archives/{channel}/{p}", ui.archive)
    for name in ("command", "message", "click", "submit", "close", "home", "assistant"):
        app.router.add_post(f"/sandbox/ui/{name}", getattr(ui, f"ui_{name}"))


def stop_streams(sb: SlackSandbox) -> None:
    """End open SSE streams so the server can shut down at once."""
    setattr(sb, _CLOSING, True)
    sb.changed()


class _Ui:
    def __init__(self, sb: SlackSandbox) -> None:
        self.sb = sb

    async def index(self, request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html")

    async def favicon(self, request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def archive(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(f"/?channel={request.match_info['channel']}")

    def _user(self, request: web.Request) -> str:
        return request.query.get("user") or DEFAULT_USER

    async def state(self, request: web.Request) -> web.Response:
        return web.json_response(self.sb.state(self._user(request)))

    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-Sent Events: the user's state, sent again after every change."""
        user = self._user(request)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        version = -1
        try:
            while not getattr(self.sb, _CLOSING, False):
                if version != self.sb._version:
                    version = self.sb._version
                    data = json.dumps(self.sb.state(user), default=str)
                    await response.write(f"event: state\ndata: {data}\n\n".encode())
                else:
                    await response.write(b": keep-alive\n\n")
                await self.sb.wait_changed(version, 15.0)
        except (ConnectionResetError, RuntimeError):
            pass  # the page went away
        return response

    async def _run(self, request: web.Request, action: Any) -> web.Response:
        try:
            body = await request.json()
            result = await action(body)
        except (LookupError, ValueError, TypeError) as exc:
            message = exc.args[0] if exc.args else str(exc)
            log.info("event=ui_action_refused path=%s error=%s", request.path, message)
            return web.json_response({"ok": False, "error": str(message)}, status=400)
        delivery = result.summary() if result is not None else None
        return web.json_response({"ok": True, "delivery": delivery}, dumps=_dumps)

    async def ui_command(self, request: web.Request) -> web.Response:
        async def act(b: dict[str, Any]) -> Any:
            command, _, text = str(b.get("text", "")).strip().partition(" ")
            if not command.startswith("/"):
                raise ValueError("a command starts with /, e.g. /sayso help")
            return await self.sb.slash_command(
                b["user"], text.strip(), b.get("channel") or "C_GENERAL", command
            )

        return await self._run(request, act)

    async def ui_message(self, request: web.Request) -> web.Response:
        async def act(b: dict[str, Any]) -> Any:
            text = str(b.get("text", ""))
            if not text.strip():
                raise ValueError("type a message first")
            channel = b.get("channel") or "C_GENERAL"
            return await self.sb.post_message(b["user"], text, channel, b.get("thread_ts"))

        return await self._run(request, act)

    async def ui_click(self, request: web.Request) -> web.Response:
        async def act(b: dict[str, Any]) -> Any:
            opts = {"value": b.get("value"), "block_id": b.get("block_id")}
            if b.get("home"):
                return await self.sb.click_home(b["user"], b["action_id"], **opts)
            if b.get("view_id"):
                return await self.sb.click_in_view(
                    b["user"], b["view_id"], b["action_id"], values=b.get("values"), **opts
                )
            return await self.sb.click(
                b["user"], b["channel"], b["message_ts"], b["action_id"], **opts
            )

        return await self._run(request, act)

    async def ui_submit(self, request: web.Request) -> web.Response:
        async def act(b: dict[str, Any]) -> Any:
            return await self.sb.submit_view(b["user"], b["view_id"], b.get("values") or {})

        return await self._run(request, act)

    async def ui_close(self, request: web.Request) -> web.Response:
        async def act(b: dict[str, Any]) -> Any:
            return await self.sb.close_view(b["user"], b["view_id"])

        return await self._run(request, act)

    async def ui_home(self, request: web.Request) -> web.Response:
        async def act(b: dict[str, Any]) -> Any:
            return await self.sb.open_home(b["user"])

        return await self._run(request, act)

    async def ui_assistant(self, request: web.Request) -> web.Response:
        async def act(b: dict[str, Any]) -> Any:
            return await self.sb.open_assistant(b["user"], b.get("channel") or "C_GENERAL")

        return await self._run(request, act)


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)

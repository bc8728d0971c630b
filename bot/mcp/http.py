"""Streamable HTTP at /mcp on the bot's aiohttp app: the SDK's own transport (its session
manager, an ASGI app) bridged to aiohttp, behind the same bearer-key check as /v1."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from bot.api.routes import refused
from bot.mcp.tools import SaysoTools, build_server
from bot.service.api_requests import ApiRefusal, ApiRequests
from store.api import ApiKey

log = logging.getLogger("sayso.mcp")

PATH = "/mcp"


def _bearer(headers: Mapping[str, str] | None) -> str | None:
    """The key of an `Authorization: Bearer <key>` header (header names in any case)."""
    scheme, _, token = str((headers or {}).get("authorization", "")).partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class McpHttp:
    """The MCP endpoint of one front. Stateless: any replica answers any call, and a tool
    call's answer is its JSON response."""

    def __init__(self, api: ApiRequests) -> None:
        self.api = api

        async def key_of(ctx: Context) -> ApiKey:
            return await api.authenticate(_bearer(ctx.headers))

        self.server = build_server(SaysoTools(api, key_of))
        self._manager: StreamableHTTPSessionManager | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def add_to(self, app: web.Application) -> None:
        app.router.add_route("*", PATH, self.handle)

    async def start(self) -> None:
        # one manager per start (its run() is once only), run by a task of its own: the
        # SDK's task group must be entered and left by the same task
        self.server.streamable_http_app(
            json_response=True,
            stateless_http=True,
            # the bearer key guards /mcp, on whatever host name the bot is reached by
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = self.server.session_manager
        ready = asyncio.Event()
        self._stop = asyncio.Event()

        async def run() -> None:
            async with manager.run():
                self._manager = manager
                ready.set()
                await self._stop.wait()
            self._manager = None

        self._task = asyncio.create_task(run(), name="sayso-mcp")
        started = asyncio.create_task(ready.wait())
        done, _ = await asyncio.wait([self._task, started], return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if self._task in done:
            self._task.result()  # raises what stopped it

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await self._task
            except Exception:
                log.exception("event=mcp_stop_failed")
            self._task = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            await self.api.authenticate(_bearer(request.headers))
        except ApiRefusal as exc:
            return refused(exc)
        if self._manager is None:
            return web.json_response({"error": "MCP is not started"}, status=503)
        return await bridge(self._manager.handle_request, request)


async def bridge(asgi: Any, request: web.Request) -> web.StreamResponse:
    """Serve an aiohttp request with an ASGI HTTP app (streamed responses included)."""
    body = await request.read()
    finished = asyncio.Event()
    sent_body = False
    response: web.StreamResponse | None = None

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            chunk = message.get("body", b"")
            if chunk:
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()
                finished.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.encode(),
        "root_path": "",
        "query_string": request.query_string.encode(),
        "headers": [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.items()
        ],
        "client": (request.remote or "", 0),
        "server": (request.host, 0),
    }
    try:
        await asgi(scope, receive, send)
    finally:
        finished.set()
    if response is None:
        return web.Response(status=500, text="The MCP transport sent no response.")
    return response

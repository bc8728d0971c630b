"""ApiFront: the approval API on the bot's aiohttp app (its /v1 routes, webhooks, /mcp)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from bot.api.present import configured_signer
from bot.api.routes import ApiRoutes
from bot.api.webhooks import WebhookSender
from bot.service.api_requests import ApiRequests

if TYPE_CHECKING:
    from bot.mcp.http import McpHttp

log = logging.getLogger("sayso.api")


def _mcp_front(api: ApiRequests) -> McpHttp | None:
    """/mcp, when the optional `mcp` SDK is installed (`pip install 'sayso[mcp]'`)."""
    try:
        from bot.mcp.http import McpHttp
    except ImportError:
        log.info("event=mcp_unavailable: install sayso[mcp] to serve /mcp")
        return None
    return McpHttp(api)


class ApiFront:
    def __init__(self, api: ApiRequests, *, retry_interval: float = 1.0) -> None:
        self.api = api
        signer = configured_signer()  # SAYSO_SIGNING_KEY: receipts in GET and webhooks
        self.routes = ApiRoutes(api, signer)
        self.webhooks = WebhookSender(api, interval=retry_interval, signer=signer)
        self.mcp = _mcp_front(api)

    def add_routes(self, app: web.Application) -> None:
        self.routes.add_to(app)
        if self.mcp is not None:
            self.mcp.add_to(app)  # /mcp: the MCP server over streamable HTTP

    async def start(self) -> None:
        await self.api.start()
        await self.webhooks.start()
        if self.mcp is not None:
            await self.mcp.start()

    async def stop(self) -> None:
        if self.mcp is not None:
            await self.mcp.stop()
        await self.webhooks.stop()
        await self.api.stop()


__all__ = ["ApiFront"]

"""The approval API front: `/v1` routes on the bot's aiohttp app, webhook delivery and /mcp."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal, Protocol

from aiohttp import web

from bot.api.present import configured_signer
from bot.api.routes import ApiRoutes
from bot.api.webhooks import WebhookSender
from bot.service.api_requests import ApiRequests

if TYPE_CHECKING:
    from bot.receipts import ReceiptSigner


class Mounted(Protocol):
    """Another front served on the same aiohttp app (the MCP server's /mcp)."""

    def add_to(self, app: web.Application) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


log = logging.getLogger("sayso.api")


class ApiFront:
    def __init__(
        self,
        api: ApiRequests,
        *,
        retry_interval: float = 1.0,
        mcp: Mounted | None = None,
        signer: ReceiptSigner | Literal["settings"] | None = "settings",
    ) -> None:
        self.api = api
        if signer == "settings":  # SAYSO_SIGNING_KEY: receipts in GET and webhooks
            signer = configured_signer()
        self.routes = ApiRoutes(api, signer)
        self.webhooks = WebhookSender(api, interval=retry_interval, signer=signer)
        self.mcp = mcp
        """/mcp (bot/mcp/http.py), when the composition root mounts it."""

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

"""The approval API front: `/v1` routes on the bot's aiohttp app, and webhook delivery.

Callers that are not sayso agents (scripts, CI, other agent frameworks) create approval
requests over HTTP; they are decided in Slack through the same decide path as sayso's own.
"""

from __future__ import annotations

from aiohttp import web

from bot.api.routes import ApiRoutes
from bot.api.webhooks import WebhookSender
from bot.service.api_requests import ApiRequests


class ApiFront:
    def __init__(self, api: ApiRequests, *, retry_interval: float = 1.0) -> None:
        self.api = api
        self.routes = ApiRoutes(api)
        self.webhooks = WebhookSender(api, interval=retry_interval)

    def add_routes(self, app: web.Application) -> None:
        self.routes.add_to(app)

    async def start(self) -> None:
        await self.api.start()
        await self.webhooks.start()

    async def stop(self) -> None:
        await self.webhooks.stop()
        await self.api.stop()


__all__ = ["ApiFront"]

"""`sayso mcp`: the MCP server over stdio, for clients that start their servers as processes
(Claude Desktop, Cursor). It reaches the engine with `sayso run`'s settings (database, Slack):
it posts the cards itself and needs no running front; clicks on them are handled by the bot."""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context

from bot.config import ConfigError, Settings, require_bot_token
from bot.mcp.tools import build_server
from bot.service.api_requests import ApiRefusal
from store.api import ApiKey

KEY_ENV = "SAYSO_KEY"


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdin/stdout with the key in SAYSO_KEY until the client closes stdin."""
    from bot.compose import build_service, build_store, web_client
    from bot.serve import load_agents

    token = os.environ.get(KEY_ENV, "").strip()
    if not token:
        raise ConfigError(f"{KEY_ENV} is not set: create a key with `sayso keys create NAME`")
    require_bot_token(settings)
    store = build_store(settings)
    service = build_service(
        settings, load_agents(settings.sayso_agents), store, web_client(settings)
    )
    api = service.api
    try:
        await store.upgrade()
        try:
            await api.authenticate(token)
        except ApiRefusal as exc:
            raise ConfigError(f"{KEY_ENV}: {exc.message}") from None

        async def key_of(ctx: Context) -> ApiKey:
            return await api.authenticate(token)  # each call: a revoked key stops working

        await api.start()
        try:
            await build_server(api, key_of).run_stdio_async()
        finally:
            await api.stop()
    finally:
        await service.close()
        await store.close()

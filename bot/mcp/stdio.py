"""`sayso mcp`: the MCP server over stdio, for clients that start their servers as processes
(Claude Desktop, Cursor, Claude Code). A thin client of a running sayso's approval API: it
needs only `SAYSO_URL` and `SAYSO_KEY`. It never reads a database URL or a Slack token, so the
agent it gates, which can read its environment, finds nothing there that decides anything."""

from __future__ import annotations

from bot.config import ConfigError, Settings
from bot.mcp.remote import RemoteTools
from bot.mcp.tools import build_server

KEY_ENV = "SAYSO_KEY"
URL_ENV = "SAYSO_URL"


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdin/stdout for the key in SAYSO_KEY, against the sayso at SAYSO_URL,
    until the client closes stdin. The key is checked at once (a clear error, not a dead
    server)."""
    import httpx

    from bot.client import AsyncSaysoClient, SaysoAPIError

    token = (settings.secret("sayso_key") or "").strip()
    url = (settings.sayso_url or "").strip()
    if not token:
        raise ConfigError(f"{KEY_ENV} is not set: create a key with `sayso keys create NAME`")
    if not url:
        raise ConfigError(f"{URL_ENV} is not set: the URL of a running sayso (sayso run)")
    client = AsyncSaysoClient(url, token)
    try:
        await client.get("0" * 32)
    except SaysoAPIError as exc:
        if exc.code == "unauthorized":
            raise ConfigError(f"{KEY_ENV}: {exc.message}") from None
    except (OSError, httpx.HTTPError) as exc:
        raise ConfigError(f"{URL_ENV}: sayso does not answer at {url} ({exc})") from None
    await build_server(RemoteTools(client)).run_stdio_async()

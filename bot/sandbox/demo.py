"""`sayso demo`: the sandbox Slack and the real bot (HTTP mode) on this machine, no tokens."""

from __future__ import annotations

import logging
import secrets
import socket

from aiohttp import web
from pydantic import SecretStr

from bot.config import Settings
from bot.sandbox.server import SlackSandbox

log = logging.getLogger("sayso.demo")

DEMO_TOKEN = "xoxb-sandbox-demo"
DEFAULT_DB = "sqlite+aiosqlite:///sayso.db"
DEMO_DB = "sqlite+aiosqlite:///sayso-demo.db"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def run_demo(
    settings: Settings, *, port: int = 3000, agents_spec: str | None = None, host: str = "127.0.0.1"
) -> None:
    """Start both, print the page's URL, and stop cleanly on Ctrl-C."""
    from bot.cli import load_agents, wait_for_stop
    from bot.slack.app import build_bot

    secret = secrets.token_hex(16)
    sandbox = SlackSandbox(
        signing_secret=secret, bot_url="http://127.0.0.1:1/", bot_token=DEMO_TOKEN
    )
    await sandbox.start(host=host, port=port)
    bot_port = _free_port()
    demo_settings = settings.model_copy(
        update={
            "slack_bot_token": SecretStr(DEMO_TOKEN),
            "slack_signing_secret": SecretStr(secret),
            "slack_app_token": None,
            "slack_api_url": sandbox.api_url,
            "database_url": DEMO_DB
            if settings.database_url == DEFAULT_DB
            else settings.database_url,
            "sayso_sweep_interval": min(settings.sayso_sweep_interval, 2.0),
        }
    )
    agents = load_agents(agents_spec or settings.sayso_agents)
    bot = build_bot(demo_settings, agents)
    await bot.start()
    runner = web.AppRunner(bot.web_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", bot_port).start()
    sandbox.bot_url = f"http://127.0.0.1:{bot_port}/slack/events"
    print(
        f"\n  sayso demo is running: open {sandbox.url}/ in your browser\n"
        f"  Try: /sayso deploy v2 to staging   (switch 'Acting as' to Avery to approve)\n"
        f"  Press Ctrl-C to stop.\n",
        flush=True,
    )
    try:
        await wait_for_stop()
    finally:
        print("\n  stopping sayso demo…", flush=True)
        await runner.cleanup()
        await bot.stop()
        await sandbox.stop()

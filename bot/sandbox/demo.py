"""`sayso demo`: the sandbox Slack and the real bot (HTTP mode) on this machine, no tokens."""

from __future__ import annotations

import logging
import secrets

from pydantic import SecretStr

from bot.config import Settings
from bot.sandbox.server import SlackSandbox
from bot.serve import free_port, http_front, load_agents, started, wait_for_stop

log = logging.getLogger("sayso.demo")

DEMO_TOKEN = "xoxb-sandbox-demo"
DEFAULT_DB = "sqlite+aiosqlite:///sayso.db"
DEMO_DB = "sqlite+aiosqlite:///sayso-demo.db"


def demo_settings(settings: Settings, sandbox: SlackSandbox, secret: str) -> Settings:
    """The settings with Slack replaced by the sandbox (and a database of the demo's own)."""
    return settings.model_copy(
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


async def run_demo(
    settings: Settings,
    *,
    port: int = 3000,
    agents_spec: str | None = None,
    host: str = "127.0.0.1",
    slack_limits: bool = False,
) -> None:
    """Start both, print the page's URL, and stop cleanly on Ctrl-C. `slack_limits`: the
    sandbox answers 429 past Slack's published rate limits, as Slack does."""
    from bot.compose import build_bot

    secret = secrets.token_hex(16)
    sandbox = SlackSandbox(
        signing_secret=secret,
        bot_url="http://127.0.0.1:1/",
        bot_token=DEMO_TOKEN,
        rate_limits=slack_limits,
    )
    await sandbox.start(host=host, port=port)
    try:
        bot_port = free_port()
        agents = load_agents(agents_spec or settings.sayso_agents)
        bot = build_bot(demo_settings(settings, sandbox, secret), agents)
        async with started(bot), http_front(bot, "127.0.0.1", bot_port):
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
    finally:
        await sandbox.stop()

"""Building and serving the fronts: the bot over HTTP or Socket Mode, until a signal stops it.

Shared by `sayso run` (bot/cli.py) and `sayso demo` (bot/sandbox/demo.py).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

from bot.config import ConfigError, Settings

if TYPE_CHECKING:
    from bot.service.registry import AgentRegistry
    from bot.slack.app import Bot

log = logging.getLogger("sayso")

Mode = Literal["socket", "http"]


def load_agents(spec: str) -> AgentRegistry:
    """The agents named by `SAYSO_AGENTS` / `--agents` (`module:attribute`)."""
    from bot.service.registry import AgentRegistry

    try:
        return AgentRegistry.load(spec)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"SAYSO_AGENTS / --agents {spec!r}: {exc}") from None


async def wait_for_stop() -> None:
    """Return on SIGINT or SIGTERM (Ctrl-C, or a process manager stopping the process)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except NotImplementedError:  # pragma: no cover (Windows)
            pass
    await stop.wait()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at the moment."""
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


@asynccontextmanager
async def started(bot: Bot) -> AsyncIterator[Bot]:
    """The bot started (database ready, sweeper running), stopped when the block ends."""
    await bot.start()
    try:
        yield bot
    finally:
        await bot.stop()


@asynccontextmanager
async def http_front(
    bot: Bot, host: str, port: int, *, slack_events: bool = True
) -> AsyncIterator[None]:
    """The bot's HTTP endpoints (`/slack/events`, `/healthz`, `/v1`) listening on host:port."""
    from aiohttp import web

    runner = web.AppRunner(bot.web_app(slack_events=slack_events), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        yield
    finally:
        await runner.cleanup()


@asynccontextmanager
async def socket_front(bot: Bot) -> AsyncIterator[None]:
    """The bot connected to Slack over Socket Mode (needs the app-level token)."""
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(
        bot.app, bot.settings.secret("slack_app_token"), web_client=bot.client
    )
    await handler.connect_async()
    try:
        yield
    finally:
        await handler.close_async()


async def serve(
    settings: Settings, agents: AgentRegistry, mode: Mode, host: str, port: int
) -> None:
    """`sayso run`: build the bot, serve it in `mode` until a signal, then stop cleanly."""
    from bot.slack.app import build_bot

    async with started(build_bot(settings, agents)) as bot:
        if mode == "socket":
            # The port still serves /healthz and the approval API (never /slack/events).
            async with socket_front(bot), http_front(bot, host, port, slack_events=False):
                log.info("event=listening mode=socket api=http://%s:%d/v1", host, port)
                await wait_for_stop()
        else:
            async with http_front(bot, host, port):
                log.info("event=listening mode=http url=http://%s:%d/slack/events", host, port)
                await wait_for_stop()

"""A real sayso (service, SQLite store, Slack client) between the sandbox Slack and the fake
model, serving whichever Bolt app a test builds: the full one, or one holding a single
listener under test."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from slack_bolt.async_app import AsyncApp

from bot.agent import Agent, tool
from bot.agent.models import ModelSettings, OpenAIChatModel
from bot.compose import build_bot
from bot.config import Settings
from bot.front import Bot
from bot.sandbox import GENERAL, Person, SlackSandbox
from bot.service import Service
from bot.service.registry import AgentRegistry
from bot.slack.middleware import ProvideService
from bot.slack.request_at_hand import ProvideRequest
from bot.testing import FakeModelServer

SECRET = "listener-signing-secret"
TOKEN = "xoxb-listeners"


@dataclasses.dataclass
class DeletedPerson(Person):
    """A deactivated account: users.info says `deleted: true`."""

    def to_slack(self) -> dict[str, Any]:
        return {**super().to_slack(), "deleted": True}


def make_agent(base_url: str, deploys: list[str]) -> Agent:
    """One agent with one tool that any full member may approve."""

    @tool(require_approval=True)
    def deploy(version: str) -> str:
        """Deploy a version."""
        deploys.append(version)
        return f"deployed {version}"

    model = OpenAIChatModel("fake", base_url=base_url, api_key="test-key")
    settings = ModelSettings(timeout=5, max_retries=1, backoff_base=0.01, backoff_max=0.05)
    return Agent(
        id="ops", model=model, instructions="Run ops.", tools=[deploy], model_settings=settings
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclasses.dataclass
class World:
    sandbox: SlackSandbox
    model: FakeModelServer
    bot: Bot
    deploys: list[str]
    runners: list[web.AppRunner] = dataclasses.field(default_factory=list)

    @property
    def service(self) -> Service:
        return self.bot.service

    def app_with_service(self) -> AsyncApp:
        """A Bolt app with no listener yet, whose listeners reach the real service."""
        app = AsyncApp(client=self.bot.client, signing_secret=SECRET)
        app.use(ProvideService(self.service, self.bot.homes))
        app.use(ProvideRequest())
        return app

    async def serve(self, app: AsyncApp) -> None:
        """Serve `app` over HTTP (as `sayso run` does) and make it the sandbox's bot."""
        runner = web.AppRunner(dataclasses.replace(self.bot, app=app).web_app(), access_log=None)
        await runner.setup()
        port = _free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        self.runners.append(runner)
        self.sandbox.bot_url = f"http://127.0.0.1:{port}/slack/events"

    async def start_deploy(self, requester: str = "U_REQUESTER") -> dict[str, Any]:
        """Start a run whose model asks to deploy v2; return its card once posted."""
        self.model.reply(tool_calls=[("deploy", {"version": "v2"})])
        command = self.service.parse("ops deploy v2")
        await self.service.start(command, requester=requester, team_id=None, channel_id=GENERAL)
        await self.sandbox.wait_for(lambda sb: len(self.cards()) == 1)
        await self.bot.service.idle()
        return self.cards()[0]

    def thread(self) -> list[dict[str, Any]]:
        """The messages of the latest run's thread in #general (its root first)."""
        roots = self.sandbox.messages(GENERAL)
        return self.sandbox.thread(GENERAL, roots[-1]["ts"]) if roots else []

    def cards(self) -> list[dict[str, Any]]:
        """Messages with buttons in the thread, but its root (whose button is Cancel)."""
        thread = self.thread()
        return [m for m in thread[1:] if any(b.get("type") == "actions" for b in m["blocks"])]


@asynccontextmanager
async def world(tmp_path: Path, people: list[Person] | None = None) -> AsyncIterator[World]:
    model = FakeModelServer()
    await model.start()
    sandbox = SlackSandbox(
        signing_secret=SECRET, bot_url="http://127.0.0.1:1/", bot_token=TOKEN, people=people
    )
    await sandbox.start(host="127.0.0.1", port=0)
    values: dict[str, Any] = {
        "slack_bot_token": TOKEN,
        "slack_signing_secret": SECRET,
        "slack_api_url": sandbox.api_url,
        "database_url": f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}",
        "sayso_sweep_interval": 0.2,
    }
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg]
    deploys: list[str] = []
    bot = build_bot(settings, AgentRegistry([make_agent(model.base_url, deploys)]))
    await bot.start()
    w = World(sandbox, model, bot, deploys)
    try:
        yield w
    finally:
        for runner in w.runners:
            await runner.cleanup()
        await bot.stop()
        await sandbox.stop()
        await model.stop()

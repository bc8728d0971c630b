"""The real bot over HTTP on 127.0.0.1, the sandbox as Slack, the fake model as the provider:
the `Harness` that starts, stops and restarts it, and readers of what the sandbox shows."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.agent import Agent
from bot.compose import build_bot
from bot.config import Settings
from bot.front import Bot
from bot.sandbox import SlackSandbox
from bot.serve import free_port
from bot.service import Service
from bot.service.registry import AgentRegistry
from bot.testing import FakeModelServer
from bot.worker import EmbeddedWorker
from tests.e2e.agents import SideEffects, make_agents
from tests.helpers.waiting import eventually

SECRET = "e2e-signing-secret"
TOKEN = "xoxb-sandbox"


class Harness:
    """Starts, stops and restarts the bot between a sandbox Slack and a fake model."""

    def __init__(
        self,
        tmp_path: Path,
        sandbox: SlackSandbox,
        model: FakeModelServer,
        db_url: str | None = None,
    ) -> None:
        self.tmp_path = tmp_path
        self.sandbox = sandbox
        self.model = model
        self.effects = SideEffects()
        self.db_url = db_url or f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}"
        self.port = free_port()
        self.bot: Bot | None = None
        self._runner: web.AppRunner | None = None
        self.settings_overrides: dict[str, Any] = {}
        self.extra_agents: list[Agent] = []  # beside make_agents' (e.g. on another provider)
        self.make_agents = make_agents
        """What agents the bot serves (a test may swap in its own before `start_bot`)."""
        self.split = os.environ.get("SAYSO_TEST_SPLIT") == "1"
        """Front and worker split as `sayso run` does (the worker on its own thread and loop);
        else the in-process mode, one event loop driving the runs it starts."""
        self.worker: EmbeddedWorker | None = None

    @property
    def driver(self) -> Service:
        """The service that drives the runs and sweeps: the worker's in split mode, else the
        bot's. Split, its store is bound to the worker's event loop: read through `bot.store`."""
        service = self.worker.service if self.worker is not None else None
        if service is None:
            assert self.bot is not None, "the bot is not running"
            service = self.bot.service
        return service

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def settings(self) -> Settings:
        values: dict[str, Any] = {
            "slack_bot_token": TOKEN,
            "slack_signing_secret": SECRET,
            "slack_api_url": self.sandbox.api_url,
            "database_url": self.db_url,
            "sayso_sweep_interval": 0.2,
            "sayso_lease_seconds": 3,
        }
        values.update(self.settings_overrides)
        return Settings(_env_file=None, **values)  # type: ignore[call-arg]

    async def start_bot(self, agents: list[Agent] | None = None) -> Bot:
        """Start the bot with the e2e agents (or `agents`) and any extra agents."""
        agents = agents or self.make_agents(self.model.base_url, self.effects)
        registry = AgentRegistry([*agents, *self.extra_agents])
        self.bot = build_bot(self.settings(), registry)
        if self.split:
            self.worker = EmbeddedWorker(self.settings(), registry)
            self.worker.attach(self.bot)  # as `sayso run` does
        await self.bot.start()
        if self.worker is not None:
            await self.worker.start()
        self._runner = web.AppRunner(self.bot.web_app(), access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self.sandbox.bot_url = f"{self.url}/slack/events"
        dispatcher = self.bot.dispatcher
        if dispatcher is not None:  # a restarted bot sends once it holds the sender lease
            await eventually(lambda: dispatcher.leading, timeout=30, what="the outbox sender")
        return self.bot

    async def stop_bot(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.worker is not None:
            await self.worker.stop()
            self.worker = None
        if self.bot is not None:
            await self.bot.stop()
            self.bot = None

    async def idle(self) -> None:
        if self.bot is not None:
            await self.bot.service.idle()
        if self.worker is not None:
            worker = self.worker
            await eventually(lambda: not worker.busy, timeout=30, what="the worker to be idle")
        if self.bot is not None and self.bot.dispatcher is not None:
            await self.bot.dispatcher.drain(timeout=30)  # Slack shows what the outbox holds

    # -- reading the sandbox ---------------------------------------------------------------

    def root(self, channel: str = "C_GENERAL") -> dict[str, Any]:
        return self.sandbox.messages(channel)[-1]

    def thread(self, channel: str = "C_GENERAL") -> list[dict[str, Any]]:
        if not self.sandbox.messages(channel):
            return []
        return self.sandbox.thread(channel, self.root(channel)["ts"])

    def cards(self, channel: str = "C_GENERAL") -> list[dict[str, Any]]:
        """Messages with buttons in the run's thread, but its root (whose button is Cancel)."""
        root = self.root(channel)["ts"] if self.sandbox.messages(channel) else None
        return [m for m in self.thread(channel) if has_button(m) and m["ts"] != root]

    def thread_text(self, channel: str = "C_GENERAL") -> str:
        """The thread's text, without streamed text not (yet) replaced by a final message."""
        return "\n".join(message_text(m) for m in self.thread(channel) if "markdown_text" not in m)


@asynccontextmanager
async def running_harness(tmp_path: Path, db_url: str | None = None) -> AsyncIterator[Harness]:
    """The fake model, the sandbox and the bot started on them (on a SQLite file in
    `tmp_path`, or on `db_url`); all stopped afterwards."""
    model = FakeModelServer()
    await model.start()
    sandbox = SlackSandbox(signing_secret=SECRET, bot_url="http://127.0.0.1:1/", bot_token=TOKEN)
    await sandbox.start(host="127.0.0.1", port=0)
    h = Harness(tmp_path, sandbox, model, db_url)
    try:
        await h.start_bot()
        yield h
    finally:
        await h.stop_bot()
        await sandbox.stop()
        await model.stop()


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        el
        for block in message.get("blocks", [])
        if block.get("type") == "actions"
        for el in block.get("elements", [])
    ]


def has_button(message: dict[str, Any], action_id: str | None = None) -> bool:
    return any(action_id in (None, b.get("action_id")) for b in buttons(message))


def message_text(message: dict[str, Any]) -> str:
    parts = [message.get("text") or ""]
    for block in message.get("blocks", []):
        if isinstance(block.get("text"), str):  # markdown blocks
            parts.append(block["text"])
        for row in block.get("rows", []) or []:  # table blocks
            parts.append(" | ".join(cell.get("text", "") for cell in row))
        for key in ("text",):
            t = block.get(key)
            if isinstance(t, dict):
                parts.append(t.get("text", ""))
        for el in block.get("elements", []) or []:
            if isinstance(el, dict) and isinstance(el.get("text"), str):
                parts.append(el["text"])
            elif isinstance(el, dict) and isinstance(el.get("text"), dict):
                parts.append(el["text"].get("text", ""))
        for f in block.get("fields", []) or []:
            parts.append(f.get("text", ""))
    return "\n".join(parts)

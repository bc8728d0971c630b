"""A front process: the Bolt app, the service and the /v1 API behind one aiohttp server.

Built by `bot.compose.build_bot`; `sayso run` serves it (bot/serve.py)."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.api.front import ApiFront
from bot.config import Settings
from bot.service import Service
from bot.service.runs.handoff import LocalWorker
from bot.slack.home_refresh import HomeRefresher
from bot.slack.http import MAX_BODY_BYTES, bolt_request
from bot.slack.intake import close_intake
from bot.slack.intake_replay import IntakeReplayer
from bot.slack.middleware import ReplayGuard
from bot.slack.outbox import OutboxDispatcher
from bot.slack.startup import NOT_CONNECTED, WorkspaceIdentity
from store import Store

log = logging.getLogger("sayso.slack")


@dataclass
class Bot:
    """One sayso front process: Bolt app + service + store."""

    settings: Settings
    app: AsyncApp
    service: Service
    store: Store
    client: AsyncWebClient
    replay_guard: ReplayGuard
    identity: WorkspaceIdentity
    api: ApiFront | None = None
    homes: HomeRefresher | None = None
    """App Home refreshes (the presenter's), for listeners."""
    dispatcher: OutboxDispatcher | None = None
    """Sends the outbox's rows to Slack (started and stopped with the bot)."""
    drives_runs: bool = True
    """False on a front whose runs are driven by workers (`sayso run` with its embedded
    worker, `--no-worker`): it hands runs off and leaves sweeping to the workers."""
    intake_replayer: IntakeReplayer | None = None
    """Processes recorded interactions whose process died after the ack (started with the bot)."""

    def reload_policy(self) -> None:
        """SIGHUP: read SAYSO_POLICY again; services subscribed to `PolicyReloaded` follow."""
        self.service.reload_policy()

    def hand_runs_to_workers(
        self, wake: Callable[[str], None], local: LocalWorker | None = None
    ) -> None:
        """Make this a front: runs are handed to workers; `wake` wakes a local one, and
        `local` (that worker) takes the runs this front claims directly."""
        self.drives_runs = False
        self.service.hand_runs_to_workers(wake, local)

    async def start(self) -> None:
        """Prepare the database, learn the workspace, start the sweeper (expiry, recovery)
        and the intake replayer."""
        await self.store.upgrade()
        if self.dispatcher is not None:
            await self.dispatcher.start()
        await self.identity.start()  # the process starts even when Slack does not answer
        if not self.service.settings.default_approvers and not self.service.agents.names_approvers:
            log.warning(
                "event=no_approvers_configured: any full member of the workspace may decide; "
                "set SAYSO_APPROVERS or approvers= on agents and tools"
            )
        if self.settings.sayso_policy:
            try:
                asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.reload_policy)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                log.warning("event=no_sighup: reload the policy file by restarting")
        if self.drives_runs:
            self.service.start_sweeper(self.settings.sayso_sweep_interval)
        self.intake_replayer = IntakeReplayer(
            self.store.intake(),
            self.app,
            owner=self.store.replica_id,
            lease=self.settings.sayso_lease_seconds,
            interval=min(self.settings.sayso_sweep_interval, 2.0),
            ready=lambda: self.identity.known,
        )
        self.intake_replayer.start()
        if self.api is not None:
            await self.api.start()

    async def stop(self) -> None:
        if self.intake_replayer is not None:
            await self.intake_replayer.stop()
        await close_intake(self.app)
        if self.api is not None:
            await self.api.stop()
        await self.identity.stop()
        if self.settings.sayso_policy:
            try:
                asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        await self.service.close()
        if self.dispatcher is not None:
            await self.dispatcher.stop()
        await self.store.close()

    def web_app(self, *, slack_events: bool = True) -> web.Application:
        """POST /slack/events (signature always checked), GET /healthz and the /v1 API.

        In Socket Mode (`slack_events=False`) Slack's events come over the socket: the HTTP
        port serves /healthz and /v1 only."""
        webapp = web.Application(client_max_size=MAX_BODY_BYTES)

        async def events(request: web.Request) -> web.Response:
            parsed = await bolt_request(request)
            if parsed is None:
                return web.Response(status=400, text="Malformed Slack request.")
            bolt_response = await self.app.async_dispatch(parsed)
            return await to_aiohttp_response(bolt_response)

        async def healthz(request: web.Request) -> web.Response:
            database = await self.store.ping()
            slack = self.identity.known
            ok = database and slack
            return web.json_response(
                {
                    "ok": ok,
                    "database": "reachable" if database else "unreachable",
                    "slack": "connected" if slack else NOT_CONNECTED,
                },
                status=200 if ok else 503,
            )

        if slack_events:
            webapp.router.add_post("/slack/events", events)
        webapp.router.add_get("/healthz", healthz)
        if self.api is not None:
            self.api.add_routes(webapp)  # /v1: the approval API
        return webapp

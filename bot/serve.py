"""Building and serving the fronts: the bot over HTTP or Socket Mode, until a signal stops it.

Shared by `sayso run` (bot/cli.py) and `sayso demo` (bot/sandbox/demo.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

from bot import event_loop
from bot.config import ConfigError, Settings

if TYPE_CHECKING:
    from aiohttp import web

    from bot.front import Bot
    from bot.service.registry import AgentRegistry

log = logging.getLogger("sayso")

Mode = Literal["socket", "http"]


def load_agents(spec: str) -> AgentRegistry:
    """The agents named by `SAYSO_AGENTS` / `--agents` (`module:attribute`)."""
    from bot.loading import load_registry

    try:
        return load_registry(spec)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"SAYSO_AGENTS / --agents {spec!r}: {exc}") from None


def stop_on_signals() -> asyncio.Event:
    """An event set on SIGINT or SIGTERM (Ctrl-C, or a process manager stopping the process)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except NotImplementedError:  # pragma: no cover (Windows)
            pass
    return stop


async def wait_for_stop() -> None:
    """Return on SIGINT or SIGTERM (Ctrl-C, or a process manager stopping the process)."""
    await stop_on_signals().wait()


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
    """The bot's HTTP endpoints (`/slack/events`, `/healthz`, `/readyz`, `/metrics`, `/v1`)
    listening on host:port."""
    from aiohttp import web

    from bot.ops import metrics_http

    webapp = bot.web_app(slack_events=slack_events)
    webapp.middlewares.append(metrics_http.ack_middleware)
    webapp.router.add_get("/readyz", readyz(bot))
    metrics_http.add_routes(webapp)
    runner = web.AppRunner(webapp, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        yield
    finally:
        await runner.cleanup()


def readyz(bot: Bot) -> Callable[[web.Request], Awaitable[web.Response]]:
    """GET /readyz: 200 when the database answers and Slack's `auth.test` has told sayso its
    workspace (a load balancer or Kubernetes sends traffic only then), else 503 saying why."""
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        database = await bot.store.ping()
        workspace = bot.identity.known
        ready = database and workspace
        body = {
            "ready": ready,
            "database": "reachable" if database else "unreachable",
            "workspace": "known" if workspace else "unknown (auth.test has not answered yet)",
        }
        return web.json_response(body, status=200 if ready else 503)

    return handler


def observe(bot: Bot) -> None:
    """Metrics for this process (decisions, model requests, Slack errors, pending requests)
    and, with `sayso[otel]` and an OTLP endpoint, traces."""
    from bot.ops import metrics, metrics_http, tracing

    metrics.install()
    metrics.watch_store(bot.store, replace=True)
    clients = [bot.client] + ([bot.dispatcher.client] if bot.dispatcher is not None else [])
    traced = tracing.setup(bot.settings)  # `sayso[otel]` and an OTLP endpoint
    for client in clients:  # the process's own calls, and the outbox's sends
        metrics_http.count_slack_errors(client)
        if traced:
            tracing.trace_slack_calls(client)


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
    settings: Settings,
    agents: AgentRegistry,
    mode: Mode,
    host: str,
    port: int,
    *,
    worker: bool = True,
) -> None:
    """`sayso run`: a front (HTTP or Socket Mode) on this event loop and, unless `worker` is
    False (`--no-worker`), a worker on its own thread and event loop. On a signal the front
    stops accepting and drains in-flight acks, then the worker stops gracefully."""
    from bot.compose import build_bot
    from bot.ops.audit_webhook import AuditTasks
    from bot.worker import EmbeddedWorker

    bot = build_bot(settings, agents)
    embedded = EmbeddedWorker(settings, agents) if worker else None
    if embedded is not None:
        embedded.attach(bot)
    else:
        bot.hand_runs_to_workers(_remote_workers)
    observe(bot)
    audit_tasks = AuditTasks(settings, owner=bot.store.replica_id)
    async with started(bot):
        if embedded is not None:
            await embedded.start()
        await audit_tasks.start()
        try:
            if mode == "socket":
                # The port still serves /healthz and the approval API (never /slack/events).
                async with socket_front(bot), http_front(bot, host, port, slack_events=False):
                    log.info(
                        "event=listening mode=socket api=http://%s:%d/v1 worker=%s loop=%s",
                        host,
                        port,
                        worker,
                        event_loop.running(),
                    )
                    await wait_for_stop()
            else:
                async with http_front(bot, host, port):
                    log.info(
                        "event=listening mode=http url=http://%s:%d/slack/events worker=%s loop=%s",
                        host,
                        port,
                        worker,
                        event_loop.running(),
                    )
                    await wait_for_stop()
        finally:
            await audit_tasks.stop()
            if embedded is not None:
                await embedded.stop()


def _remote_workers(run_id: str) -> None:
    """A front without a worker: the store's hand-off (PostgreSQL NOTIFY) wakes the workers."""


async def serve_worker(
    settings: Settings,
    agents: AgentRegistry,
    *,
    metrics_port: int | None = None,
    metrics_host: str = "0.0.0.0",
) -> None:
    """`sayso worker`: claim and drive runs until a signal, then stop gracefully. With
    `metrics_port`, GET /metrics answers on that port meanwhile."""
    from bot.ops import metrics, metrics_http
    from bot.ops.audit_webhook import AuditTasks
    from bot.worker import Worker, run_worker
    from store.store import default_replica_id

    def reload_on_sighup(worker: Worker) -> None:
        if settings.sayso_policy:  # new requests use the file as it is now
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().add_signal_handler(
                    signal.SIGHUP, worker.service.reload_policy
                )

    metrics.install()
    runner = await metrics_http.serve_metrics(metrics_host, metrics_port) if metrics_port else None
    audit_tasks = AuditTasks(settings, owner=settings.sayso_replica_id or default_replica_id())
    await audit_tasks.start()
    try:
        await run_worker(settings, agents, stop_on_signals(), on_started=reload_on_sighup)
    finally:
        await audit_tasks.stop()
        if runner is not None:
            await runner.cleanup()

"""The real bot in HTTP mode for the benchmark, in one of the roles a deployment runs.

    python bench/bot_server.py --port 8102 --database-url sqlite+aiosqlite:///bench.db \
        --slack-api-url http://127.0.0.1:8101/api/ --model-url http://127.0.0.1:8100/v1 \
        --udp-port 8103 [--role both|front|worker|inprocess] [--concurrency N]

Roles, built from the bot's own entry points (bot/compose.py, bot/worker.py):

- `both` (default), as `sayso run`: the front (POST /slack/events, GET /healthz) on the main
  event loop and an `EmbeddedWorker` on its own thread and event loop;
- `front`, as `sayso run --no-worker`: hands every run to workers (PostgreSQL NOTIFY);
- `worker`, as `sayso worker [--concurrency N]`: claims and drives runs, serves no Slack
  events; `--port` serves only GET /healthz and the bench route below;
- `inprocess`: `build_bot` alone, one event loop that acks and drives runs (the mode of the
  e2e fixtures, and of this script before issue 13).

Every role adds one bench-only route, GET /bench/rss: collects garbage (unless ?gc=0), then
answers this process's VmRSS (KiB) and how much background work is going on (so the benchmark
can tell when work is done). Logs go to stderr at the default level (INFO), as in production.
`--profile FILE` writes a cProfile of the main thread's event loop when the process stops (the
embedded worker's thread of `both` is not in it: profile `front` and `worker` instead).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
from collections.abc import Callable

from agents import make_agents
from aiohttp import web
from common import SECRET, TOKEN, rss_kb

from bot.cli import setup_logging
from bot.compose import build_bot
from bot.config import Settings
from bot.serve import stop_on_signals
from bot.service.registry import AgentRegistry
from bot.worker import EmbeddedWorker, Worker, run_worker

ROLES = ("both", "front", "worker", "inprocess")


def bench_routes(app: web.Application, background: Callable[[], int]) -> None:
    async def rss(request: web.Request) -> web.Response:
        if request.query.get("gc", "1") == "1":
            for _ in range(3):
                gc.collect()
                await asyncio.sleep(0.05)
        return web.json_response({"rss_kb": rss_kb(os.getpid()), "background_tasks": background()})

    app.router.add_get("/bench/rss", rss)


async def listen(app: web.Application, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print(f"listening http://127.0.0.1:{port}", flush=True)
    return runner


async def serve_worker_role(settings: Settings, agents: AgentRegistry, port: int) -> None:
    """`sayso worker` (bot.worker.run_worker) plus a port answering /healthz and /bench/rss."""
    stop = stop_on_signals()
    app = web.Application()
    holder: list[Worker] = []

    def busy() -> int:
        if not holder:
            return 1
        worker = holder[0]
        return worker.runs_in_flight + len(worker.service.runner._tasks)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": bool(holder)}, status=200 if holder else 503)

    app.router.add_get("/healthz", healthz)
    bench_routes(app, busy)
    runner: web.AppRunner | None = None
    ready = asyncio.Event()

    def started(worker: Worker) -> None:
        holder.append(worker)
        ready.set()

    task = asyncio.create_task(run_worker(settings, agents, stop, on_started=started))
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if task.done():
        await task  # failed before it started: raise why
        return
    runner = await listen(app, port)
    try:
        await task
    finally:
        await runner.cleanup()


def share_slack_sessions() -> None:
    """Experiment (--shared-slack-session): give every Slack Web API client one aiohttp
    session, so calls reuse connections. The bot's own `web_client` passes none, and
    slack-sdk then opens (and closes) a new session and connection for every call."""
    import aiohttp

    import bot.compose as slack_app

    plain = slack_app.web_client

    def with_session(settings: Settings) -> object:
        client = plain(settings)
        client.session = aiohttp.ClientSession()  # on the loop that calls web_client
        return client

    slack_app.web_client = with_session  # type: ignore[assignment]


async def main(args: argparse.Namespace) -> None:
    if args.shared_slack_session:
        share_slack_sessions()
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        slack_bot_token=TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=args.slack_api_url,
        database_url=args.database_url,
        sayso_sweep_interval=args.sweep_interval,
        sayso_log_level=args.log_level,
        sayso_rate_limit="off",  # one requester starts hundreds of runs on purpose
        sayso_worker_concurrency=args.concurrency,
        sayso_shutdown_grace=args.shutdown_grace,
    )
    setup_logging(settings.sayso_log_level)
    agents = AgentRegistry(make_agents(args.model_url, args.udp_port))
    if args.role == "worker":
        await serve_worker_role(settings, agents, args.port)
        return
    bot = build_bot(settings, agents)
    embedded = EmbeddedWorker(settings, agents) if args.role == "both" else None
    if embedded is not None:  # as bot.serve.serve (`sayso run`): one outbox dispatcher
        embedded.attach(bot)
    elif args.role == "front":  # as `sayso run --no-worker`: NOTIFY wakes the workers
        bot.hand_runs_to_workers(lambda run_id: None)
    stop = stop_on_signals()
    await bot.start()
    if embedded is not None:
        await embedded.start()

    def busy() -> int:  # the outbox's last rows go out within the App Home window after it
        return len(bot.service.tasks) + int(embedded is not None and embedded.busy)

    app = bot.web_app()
    bench_routes(app, busy)
    runner = await listen(app, args.port)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        if embedded is not None:
            await embedded.stop()
        await bot.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--slack-api-url", required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--udp-port", type=int, required=True)
    parser.add_argument("--role", choices=ROLES, default="both")
    parser.add_argument("--concurrency", type=int, default=None, help="runs in flight per worker")
    parser.add_argument("--shutdown-grace", type=float, default=20.0)
    parser.add_argument("--sweep-interval", type=float, default=10.0)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--shared-slack-session", action="store_true", help="an experiment")
    parser.add_argument("--profile", help="write a cProfile of the main thread to this file")
    args = parser.parse_args()
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
        try:
            profile.runcall(asyncio.run, main(args))
        finally:
            profile.dump_stats(args.profile)
    else:
        asyncio.run(main(args))

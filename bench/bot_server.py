"""The real bot (build_bot + Bot.web_app) in HTTP mode, for the benchmark.

    python bench/bot_server.py --port 8102 --database-url sqlite+aiosqlite:///bench.db \
        --slack-api-url http://127.0.0.1:8101/api/ --model-url http://127.0.0.1:8100/v1 \
        --udp-port 8103

Serves POST /slack/events and GET /healthz exactly as `sayso run --mode http`, plus one
bench-only route, GET /bench/rss: collects garbage (unless ?gc=0), then answers this process's
VmRSS (KiB) and how many runs are being driven (so the benchmark can tell when work is done).
Logs go to stderr at the default level (INFO), as in production.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal

from agents import make_agents
from aiohttp import web
from common import SECRET, TOKEN, rss_kb

from bot.cli import setup_logging
from bot.config import Settings
from bot.service.registry import AgentRegistry
from bot.slack.app import build_bot


async def main(args: argparse.Namespace) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        slack_bot_token=TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=args.slack_api_url,
        database_url=args.database_url,
        sayso_sweep_interval=args.sweep_interval,
        sayso_log_level=args.log_level,
        sayso_rate_limit="off",  # one requester starts hundreds of runs on purpose
    )
    setup_logging(settings.sayso_log_level)
    agents = AgentRegistry(make_agents(args.model_url, args.udp_port))
    bot = build_bot(settings, agents)
    await bot.start()
    app = bot.web_app()

    async def rss(request: web.Request) -> web.Response:
        if request.query.get("gc", "1") == "1":
            for _ in range(3):
                gc.collect()
                await asyncio.sleep(0.05)
        busy = len(bot.service.runner._tasks)
        return web.json_response({"rss_kb": rss_kb(os.getpid()), "background_tasks": busy})

    app.router.add_get("/bench/rss", rss)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port).start()
    print(f"listening http://127.0.0.1:{args.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    await runner.cleanup()
    await bot.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--slack-api-url", required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--udp-port", type=int, required=True)
    parser.add_argument("--sweep-interval", type=float, default=10.0)
    parser.add_argument("--log-level", default="INFO")
    asyncio.run(main(parser.parse_args()))

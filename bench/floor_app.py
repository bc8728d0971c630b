"""The floor: a bare slack-bolt AsyncApp whose listeners only ack, served like the bot.

    python bench/floor_app.py --port 8104 --slack-api-url http://127.0.0.1:8101/api/

Same token, signing secret, Web API client, request verification and aiohttp adapter
(to_bolt_request / async_dispatch / to_aiohttp_response) as Bot.web_app; nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from typing import Any

from aiohttp import web
from common import SECRET, TOKEN
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient


def build(slack_api_url: str) -> web.Application:
    client = AsyncWebClient(token=TOKEN, base_url=slack_api_url)
    app = AsyncApp(client=client, signing_secret=SECRET, request_verification_enabled=True)

    @app.command("/sayso")
    async def on_command(ack: Any) -> None:
        await ack()

    @app.action("approve")
    async def on_approve(ack: Any) -> None:
        await ack()

    webapp = web.Application(client_max_size=1024 * 1024)

    async def events(request: web.Request) -> web.Response:
        bolt_request = await to_bolt_request(request)
        bolt_response = await app.async_dispatch(bolt_request)
        return await to_aiohttp_response(bolt_response)

    webapp.router.add_post("/slack/events", events)
    return webapp


async def main(args: argparse.Namespace) -> None:
    runner = web.AppRunner(build(args.slack_api_url), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port).start()
    print(f"listening http://127.0.0.1:{args.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slack-api-url", required=True)
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(parser.parse_args()))

"""The floor: a bare slack-bolt AsyncApp whose listeners only ack, served like the bot.

    python bench/floor_app.py --port 8104 --slack-api-url http://127.0.0.1:8101/api/

Same token, signing secret, Web API client, request verification and aiohttp adapter
(to_bolt_request / async_dispatch / to_aiohttp_response) as Bot.web_app; nothing else.

    python bench/floor_app.py --port 8105 --slack-api-url ... --intake-url DATABASE_URL

adds the durable intake exactly as the bot has it (bot/slack/intake.py: `RecordIntake` before
the listeners, which are `recorded`): every command and Approve click is one insert before its
ack and closed after it (bench/intake_ack.py measures what that costs the ack).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from aiohttp import web
from common import SECRET, TOKEN, loop_choice
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

ROOT = str(Path(__file__).resolve().parent.parent)


def build(slack_api_url: str, intake: Any = None) -> web.Application:
    client = AsyncWebClient(token=TOKEN, base_url=slack_api_url)
    app = AsyncApp(client=client, signing_secret=SECRET, request_verification_enabled=True)
    wrap: Any = lambda listener: listener  # noqa: E731
    if intake is not None:
        from bot.slack.intake import RecordIntake, recorded

        app.use(RecordIntake(intake, "floor", 30.0))
        wrap = recorded

    async def on_command(ack: Any, context: Any) -> None:
        await ack()

    async def on_approve(ack: Any, context: Any) -> None:
        await ack()

    app.command("/sayso")(wrap(on_command))
    app.action("approve")(wrap(on_approve))

    webapp = web.Application(client_max_size=1024 * 1024)

    async def events(request: web.Request) -> web.Response:
        bolt_request = await to_bolt_request(request)
        bolt_response = await app.async_dispatch(bolt_request)
        return await to_aiohttp_response(bolt_response)

    webapp.router.add_post("/slack/events", events)
    return webapp


async def with_intake(url: str) -> Any:
    """The intake repository on a migrated database (this tree's store)."""
    sys.path.insert(0, ROOT)
    from store import Store

    store = Store(url, replica_id="floor")
    await store.upgrade()
    return store.intake()


async def main(args: argparse.Namespace) -> None:
    intake = await with_intake(args.intake_url) if args.intake_url else None
    runner = web.AppRunner(build(args.slack_api_url, intake), access_log=None)
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
    parser.add_argument("--intake-url", default=None)
    logging.basicConfig(level=logging.WARNING)
    # the loop the bot runs on (SAYSO_EVENT_LOOP, uvloop where installed): the floor measures
    # Bolt, not the choice of loop
    sys.path.insert(0, ROOT)
    from bot import event_loop

    event_loop.run(main(parser.parse_args()), loop_choice())

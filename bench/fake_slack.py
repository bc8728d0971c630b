"""The SlackSandbox in its own process, as the bot's Slack Web API.

    python bench/fake_slack.py --port 8101

Prints `listening <url>` once it serves. The benchmark sends the bot's requests itself (it
signs them as Slack does), so the sandbox only answers the bot's Web API calls.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal

from common import SECRET, TOKEN

from bot.sandbox import SlackSandbox


async def main(port: int) -> None:
    sandbox = SlackSandbox(signing_secret=SECRET, bot_url=None, bot_token=TOKEN)
    await sandbox.start(host="127.0.0.1", port=port)
    print(f"listening {sandbox.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    await sandbox.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(parser.parse_args().port))

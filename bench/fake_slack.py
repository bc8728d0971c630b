"""The SlackSandbox in its own process, as the bot's Slack Web API.

    python bench/fake_slack.py --port 8101

Prints `listening <url>` once it serves. The benchmark sends the bot's requests itself (it
signs them as Slack does), so the sandbox only answers the bot's Web API calls. Its workspace
has the sandbox's default people plus PEOPLE (U_PERSON00..U_PERSON39), so that forty people
can start runs at once.

Bench-only routes: GET /bench/calls, how many Web API calls the bot made so far, by method;
GET /bench/messages: every message posted so far, in every channel,
as `{channel, ts, thread_ts, answer}` (`answer`: a final answer's first message). A message's
ts is the sandbox's clock when it was posted (`time.time()`, strictly increasing), so the load
generator on the same machine reads when each root message, card and answer appeared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
from collections import Counter
from typing import Any

from aiohttp import web
from common import PEOPLE, SECRET, TOKEN

from bot.sandbox import SlackSandbox
from bot.sandbox.state import Person, default_people
from bot.slack.ids import BlockId


def _is_answer(message: dict[str, Any]) -> bool:
    return any(
        str(b.get("block_id", "")).startswith(BlockId.ANSWER_PREFIX)
        for b in message.get("blocks") or []
    )


def _kind(args: dict[str, Any], method: str, by_block: bool) -> str:
    if not by_block or method != "chat.update":
        return method
    blocks = args.get("blocks")
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    first = str((blocks or [{}])[0].get("block_id", "")).split(":")[0] if blocks else "(text)"
    return f"{method} [{first}]"


class BenchSandbox(SlackSandbox):
    def build_app(self) -> web.Application:
        app = super().build_app()
        app.router.add_get("/bench/messages", self._bench_messages)
        app.router.add_get("/bench/calls", self._bench_calls)
        return app

    async def _bench_calls(self, request: web.Request) -> web.Response:
        """Calls by method; with ?by=block, chat.update calls also by their first block id."""
        by_block = request.query.get("by") == "block"
        return web.json_response(
            dict(Counter(_kind(c.args, c.method, by_block) for c in self.calls))
        )

    async def _bench_messages(self, request: web.Request) -> web.Response:
        out = [
            {
                "channel": channel,
                "ts": m["ts"],
                "thread_ts": m.get("thread_ts"),
                "answer": _is_answer(m),
            }
            for channel, history in self.ws.history.items()
            for m in history
        ]
        return web.json_response(out)


async def main(port: int) -> None:
    people = default_people() + [Person(p, p.lower(), f"Person {p[-2:]}") for p in PEOPLE]
    sandbox = BenchSandbox(signing_secret=SECRET, bot_url=None, bot_token=TOKEN, people=people)
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

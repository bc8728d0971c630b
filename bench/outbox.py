"""The outbox against a SlackSandbox with Slack's limits: 429s per 100 decisions, and the time
to converge after an outage with 100 decisions pending.

    PYTHONPATH=. python bench/outbox.py [--decisions 30] [--outage 60] [--replicas 2]
    PYTHONPATH=. python bench/outbox.py --smoke --out out.json   # a check that it runs

A decision here is what the presenter will put for it (issue 22's target of at most 4 calls):
the card's update, the root message's status (three changes, coalesced), and the answer in the
thread. The roots and cards exist beforehand (posted through the outbox too). `--replicas 2`
runs two dispatchers on PostgreSQL (SAYSO_TEST_POSTGRES_URL): one sends, the other stands by.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bot.sandbox import SlackSandbox
from bot.slack.outbox import OutboxDispatcher
from store import Store
from store.outbox import Outbox

TOKEN = "xoxb-bench"
CHANNELS = [f"C_BENCH{i}" for i in range(5)]


async def _database(replicas: int) -> tuple[str, Any]:
    if replicas == 1:
        path = os.path.join(tempfile.mkdtemp(), "outbox.db")
        return f"sqlite+aiosqlite:///{path}", None
    base = os.environ.get("SAYSO_TEST_POSTGRES_URL")
    if not base:
        sys.exit("--replicas > 1 needs SAYSO_TEST_POSTGRES_URL")
    name = f"sayso_b_{uuid.uuid4().hex[:10]}"
    admin = create_async_engine(base, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    return make_url(base).set(database=name).render_as_string(hide_password=False), (admin, name)


async def _drop(admin_name: Any) -> None:
    if admin_name is None:
        return
    admin, name = admin_name
    async with admin.connect() as conn:
        await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    await admin.dispose()


async def _drained(boxes: list[Outbox], limit: float) -> float:
    started = time.monotonic()
    while await boxes[0].pending_count():
        if time.monotonic() - started > limit:
            raise SystemExit(f"not converged within {limit}s")
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def _prepare(box: Outbox, n: int) -> None:
    for i in range(n):
        channel = CHANNELS[i % len(CHANNELS)]
        await box.put(f"root:{i}", channel=channel, text=f"run {i}: working")
        await box.put(f"card:{i}", channel=channel, thread_key=f"root:{i}", text="approve?")


async def _decide(box: Outbox, i: int) -> None:
    channel = CHANNELS[i % len(CHANNELS)]
    await box.put(f"card:{i}", text=f"card {i}: approved")
    for step in ("running deploy", "deploy done", "answering"):
        await box.put(f"root:{i}", text=f"run {i}: {step}")
    await box.put(f"answer:{i}:0", channel=channel, thread_key=f"root:{i}", text="done")


def _duplicates(sandbox: SlackSandbox) -> int:
    seen: dict[str, int] = {}
    for messages in sandbox.ws.history.values():
        for m in messages:
            key = ((m.get("metadata") or {}).get("event_payload") or {}).get("key")
            if key:
                seen[key] = seen.get(key, 0) + 1
    return sum(count - 1 for count in seen.values())


async def run(decisions: int, outage: float, replicas: int) -> dict[str, Any]:
    url, admin = await _database(replicas)
    sandbox = SlackSandbox(signing_secret="bench", bot_url=None, bot_token=TOKEN, rate_limits=True)
    await sandbox.start("127.0.0.1", 0)
    stores = [Store(url) for _ in range(replicas)]
    await stores[0].upgrade()
    boxes = [store.outbox() for store in stores]
    dispatchers = [
        OutboxDispatcher(
            box,
            AsyncWebClient(base_url=sandbox.api_url, token=TOKEN),
            owner=f"replica{i}",
            call_timeout=5.0,
            lease_seconds=30.0,
        )
        for i, box in enumerate(boxes)
    ]
    result: dict[str, Any] = {"decisions": decisions, "replicas": replicas}
    try:
        for d in dispatchers:
            await d.start()
        await _prepare(boxes[0], decisions)
        result["setup_seconds"] = round(await _drained(boxes, 600), 1)
        before = dict(sandbox.limits.calls)
        ratelimited_before = sandbox.limits.ratelimited_total
        for i in range(decisions):  # all decided within a few seconds, by any replica
            await _decide(boxes[i % replicas], i)
        result["burst_converged_seconds"] = round(await _drained(boxes, 600), 1)
        calls = {
            m: n - before.get(m, 0) for m, n in sandbox.limits.calls.items() if n > before.get(m, 0)
        }
        result["burst_calls"] = calls
        result["burst_calls_per_decision"] = round(sum(calls.values()) / decisions, 2)
        burst_429 = sandbox.limits.ratelimited_total - ratelimited_before
        result["burst_429s_per_100_decisions"] = round(100 * burst_429 / decisions, 1)
        if outage > 0:
            await _prepare(boxes[0], 0)
            await sandbox.outage(outage, mode="refuse")
            for i in range(decisions):
                await boxes[i % replicas].put(f"card:{i}", text=f"card {i}: reverted")
                await boxes[i % replicas].put(
                    f"answer:{i}:1",
                    channel=CHANNELS[i % len(CHANNELS)],
                    thread_key=f"root:{i}",
                    text="after the outage",
                )
            await asyncio.sleep(outage)
            result["outage_seconds"] = outage
            result["outage_converged_seconds_after"] = round(await _drained(boxes, 600), 1)
        result["duplicates"] = _duplicates(sandbox)
        result["429s_total"] = sandbox.limits.ratelimited_total
        result["adopted"] = sum(d.stats.adopted for d in dispatchers)
    finally:
        for d in dispatchers:
            await d.stop(grace=1)
        for store in stores:
            await store.close()
        await sandbox.stop()
        await _drop(admin)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=30)
    parser.add_argument("--outage", type=float, default=10.0)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a check that it runs: SQLite, one replica, 3 decisions, a 1 s outage",
    )
    parser.add_argument("--out", help="also write the results here (JSON)")
    args = parser.parse_args()
    if args.smoke:
        args.decisions, args.outage, args.replicas = 3, 1.0, 1
    result = asyncio.run(run(args.decisions, args.outage, args.replicas))
    result["mode"] = "smoke" if args.smoke else "full"
    if args.out:
        with open(args.out, "w") as f:
            f.write(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""The durable intake's cost on the ack (issue 22): ack p99 at 50 concurrent, against the floor.

    python bench/intake_ack.py [--quick] [--no-bot | --bot-only] [--out FILE]

1. *The intake alone*: the bare Bolt floor (`bench/floor_app.py`) against the same floor with
   the bot's intake middleware (`--intake-url`: one insert before each ack, the row closed
   after it) on a SQLite file and on PostgreSQL. Approve clicks with distinct trigger ids (each
   a new row) at concurrency 50; the floors are measured in turns, `rounds` times, so the
   shared machine's noise falls on all of them alike; the p99 reported is the median round's.
2. *The bot* (`sayso run`: front + embedded worker, `bench/bot_server.py`) on SQLite and on
   PostgreSQL: `scenarios.ack_levels` at concurrency 50 (slash commands that start runs, then
   Approve clicks on their real cards, each decided after its ack), against the floor measured
   in the same run: the ack while the intake and the decisions work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's bot/ and store/

import scenarios
from common import approve_body
from load import Proc, drive
from run import PG_URL, Bench, machine, pg_admin, postgres_available

HERE = Path(__file__).resolve().parent
FULL = {"clicks": 1000, "rounds": 3, "levels": {50: 600}, "isolated_clicks": 10}
QUICK = {"clicks": 300, "rounds": 2, "levels": {50: 150}, "isolated_clicks": 5}
CONCURRENCY = 50


def floor_proc(bench: Bench, name: str, port: int, intake_url: str | None) -> Proc:
    args = [str(HERE / "floor_app.py"), "--port", str(port)]
    args += ["--slack-api-url", f"{bench.slack_url}/api/"]
    if intake_url:
        args += ["--intake-url", intake_url]
    return Proc(name, args, bench.workdir, {"PYTHONUNBUFFERED": "1"})


def click(i: int) -> str:
    return approve_body(f"r{i}", "C_BENCH00", "1.000001", "http://127.0.0.1:9/respond")


async def intake_alone(bench: Bench, config: dict[str, Any], pg: str | None) -> dict[str, Any]:
    """The floor, and the floor with the intake on SQLite (and PostgreSQL), in turns."""
    from bot.serve import free_port

    urls: dict[str, str | None] = {
        "floor": None,
        "intake_sqlite": f"sqlite+aiosqlite:///{bench.workdir / 'intake.db'}",
    }
    if pg:
        urls["intake_postgres"] = pg
    ports = {name: free_port() for name in urls}
    procs = {n: floor_proc(bench, n, ports[n], u) for n, u in urls.items()}
    await asyncio.gather(*(p.start() for p in procs.values()))
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in urls}
    try:
        for name in urls:  # warm: imports, connections, the first inserts
            url = f"http://127.0.0.1:{ports[name]}/slack/events"
            await drive(url, click, 200, CONCURRENCY, 60.0, CONCURRENCY)
        for _ in range(config["rounds"]):
            for name in urls:
                url = f"http://127.0.0.1:{ports[name]}/slack/events"
                total = config["clicks"] + CONCURRENCY
                result = await drive(url, click, total, CONCURRENCY, 120.0, CONCURRENCY)
                runs[name].append(result.summary())
                print(f"{name}: {runs[name][-1]}", flush=True)
    finally:
        await asyncio.gather(*(p.stop() for p in procs.values()))
    out: dict[str, Any] = {}
    for name, rounds in runs.items():
        out[name] = {
            "p50_ms": statistics.median(r["p50_ms"] for r in rounds),
            "p99_ms": statistics.median(r["p99_ms"] for r in rounds),
            "rounds": rounds,
        }
    for name in urls:
        if name != "floor":
            out[name]["p99_ratio"] = round(out[name]["p99_ms"] / out["floor"]["p99_ms"], 2)
            out[name]["p50_ratio"] = round(out[name]["p50_ms"] / out["floor"]["p50_ms"], 2)
    return out


async def bot_acks(bench: Bench, config: dict[str, Any], database_url: str) -> dict[str, Any]:
    async with bench.bot("bot", database_url) as bot:
        levels = await scenarios.ack_levels(bot, bench.floor_url, config)
    return dict(levels["50"])


async def main(args: argparse.Namespace) -> dict[str, Any]:
    config = {**(QUICK if args.quick else FULL), "time_limit": 120.0}
    workdir = Path(tempfile.mkdtemp(prefix="sayso-bench-intake-"))
    results: dict[str, Any] = {"mode": "quick" if args.quick else "full", "machine": machine()}
    pg_version = await postgres_available()
    results["machine"]["postgresql"] = pg_version
    bench = Bench(workdir, config)
    started = time.monotonic()
    await bench.start()
    db = f"sayso_bench_intake_{int(time.time())}"
    if pg_version:
        await pg_admin(f'CREATE DATABASE "{db}"')
    try:
        pg = PG_URL.format(db=db) if pg_version else None
        if not args.bot_only:
            results["intake_alone"] = await intake_alone(bench, config, pg)
        if not args.no_bot:
            sqlite_url = f"sqlite+aiosqlite:///{workdir / 'bot.db'}"
            results["bot_sqlite"] = await bot_acks(bench, config, sqlite_url)
            if pg_version:
                await pg_admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
                await pg_admin(f'CREATE DATABASE "{db}"')
                results["bot_postgres"] = await bot_acks(bench, config, PG_URL.format(db=db))
    finally:
        await bench.stop()
        if pg_version:
            await pg_admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    results["duration_s"] = round(time.monotonic() - started, 1)
    results["logs"] = str(workdir)
    return results


def table(results: dict[str, Any]) -> str:
    rows = ["| setup | ack p50 ms | ack p99 ms | p99 / floor |", "| --- | --- | --- | --- |"]
    alone = results.get("intake_alone", {})
    for name, r in alone.items():
        rows.append(f"| {name} | {r['p50_ms']} | {r['p99_ms']} | {r.get('p99_ratio', 1.0)} |")
    for db in ("bot_sqlite", "bot_postgres"):
        level = results.get(db)
        if not level:
            continue
        for kind in ("slash", "approve"):
            b, f = level[kind]["bot"], level[kind]["floor"]
            rows.append(
                f"| {db} {kind} (floor {f['p99_ms']}) | {b['p50_ms']} | {b['p99_ms']} "
                f"| {level[kind]['p99_ratio']} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-bot", action="store_true")
    parser.add_argument(
        "--bot-only", action="store_true", help="only the bot (e.g. copied into a tree before)"
    )
    parser.add_argument("--out", default=str(HERE / "results-intake.json"))
    parsed = parser.parse_args()
    res = asyncio.run(main(parsed))
    Path(parsed.out).write_text(json.dumps(res, indent=2))
    print(table(res))

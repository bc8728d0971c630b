"""sayso benchmarks: `python bench/run.py [--quick]`.

Starts, as subprocesses, the fake model, the fake Slack (the SlackSandbox), the floor (a bare
Bolt app that only acks) and the real bot in HTTP mode; this process is the load generator.
Prints markdown tables and writes bench/results.json. Only 127.0.0.1 is used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's bot/ and store/

import scenarios
from load import Proc, SideEffects
from report import markdown

from bot.serve import free_port

HERE = Path(__file__).resolve().parent
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/{db}"

FULL = {
    "levels": {1: 200, 10: 500, 50: 1000, 200: 2000},
    "decisions": 1000,
    "paused_runs": 10_000,
    "inbox_requests": 100_000,
    "inbox_sqlite": [0.01, 0.1, 1.0],
    "inbox_postgres": [0.01, 0.1],
    "isolated_clicks": 50,
    "warm": 50,
    "time_limit": 120.0,
}
QUICK = {
    "levels": {1: 30, 10: 60, 50: 150, 200: 400},
    "decisions": 150,
    "paused_runs": 10_000,
    "inbox_requests": 100_000,
    "inbox_sqlite": [0.1],
    "inbox_postgres": [],
    "isolated_clicks": 15,
    "warm": 10,
    "time_limit": 30.0,
}


class Bench:
    def __init__(self, workdir: Path, config: dict[str, Any]) -> None:
        self.workdir = workdir
        self.config = config
        self.model_port, self.slack_port, self.floor_port, self.udp_port = (
            free_port() for _ in range(4)
        )
        self.model_url = f"http://127.0.0.1:{self.model_port}/v1"
        self.slack_url = f"http://127.0.0.1:{self.slack_port}"
        self.floor_url = f"http://127.0.0.1:{self.floor_port}/slack/events"
        env = {"PYTHONUNBUFFERED": "1"}
        self.model = Proc(
            "fake_model",
            [
                "-m",
                "bot.testing.fake_model",
                "--port",
                str(self.model_port),
                "--script",
                "tool-then-text",
                "--tool",
                "deploy",
            ],
            workdir,
            env,
        )
        slack_args = [str(HERE / "fake_slack.py"), "--port", str(self.slack_port)]
        self.slack = Proc("fake_slack", slack_args, workdir, env)
        self.floor = Proc(
            "floor",
            [
                str(HERE / "floor_app.py"),
                "--port",
                str(self.floor_port),
                "--slack-api-url",
                f"{self.slack_url}/api/",
            ],
            workdir,
            env,
        )
        self.effects: SideEffects | None = None

    async def start(self) -> None:
        self.effects = await SideEffects.listen(self.udp_port)
        await asyncio.gather(self.model.start(), self.slack.start(), self.floor.start())

    async def stop(self) -> None:
        await asyncio.gather(self.model.stop(), self.slack.stop(), self.floor.stop())
        if self.effects is not None:
            self.effects.close()

    def bot(self, name: str, database_url: str) -> scenarios.BotUnderTest:
        port = free_port()
        proc = Proc(
            name,
            [
                str(HERE / "bot_server.py"),
                "--port",
                str(port),
                "--database-url",
                database_url,
                "--slack-api-url",
                f"{self.slack_url}/api/",
                "--model-url",
                self.model_url,
                "--udp-port",
                str(self.udp_port),
            ],
            self.workdir,
            {"PYTHONUNBUFFERED": "1"},
        )
        assert self.effects is not None
        return scenarios.BotUnderTest(
            proc, f"http://127.0.0.1:{port}", database_url, self.effects, self.slack_url
        )


async def pg_admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def postgres_available() -> str | None:
    try:
        import asyncpg

        conn = await asyncpg.connect(PG_ADMIN, timeout=3)
        version = await conn.fetchval("SHOW server_version")
        await conn.close()
        return str(version)
    except Exception:
        return None


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "loadavg_at_start": os.getloadavg()[0],
    }


async def main(quick: bool, skip_postgres: bool) -> dict[str, Any]:
    config = QUICK if quick else FULL
    workdir = Path(tempfile.mkdtemp(prefix="sayso-bench-"))
    results: dict[str, Any] = {"mode": "quick" if quick else "full", "machine": machine()}
    pg_version = None if skip_postgres else await postgres_available()
    results["machine"]["postgresql"] = pg_version
    bench = Bench(workdir, config)
    started = time.monotonic()
    await bench.start()
    try:
        sqlite_url = f"sqlite+aiosqlite:///{workdir / 'ack.db'}"
        async with bench.bot("bot_sqlite", sqlite_url) as bot:
            results["ack"] = await scenarios.ack_levels(bot, bench.floor_url, config)
            results["decisions_sqlite"] = await scenarios.decisions(bot, config)
        if pg_version:
            db = f"sayso_bench_{os.getpid()}"
            await pg_admin(f'CREATE DATABASE "{db}"')
            try:
                async with bench.bot("bot_postgres", PG_URL.format(db=db)) as bot:
                    results["decisions_postgres"] = await scenarios.decisions(bot, config)
            finally:
                await pg_admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        memory_url = f"sqlite+aiosqlite:///{workdir / 'memory.db'}"
        async with bench.bot("bot_memory", memory_url) as bot:
            results["memory"] = await scenarios.memory(bot, config)
    finally:
        await bench.stop()
    results["inbox"] = {}
    for share in config["inbox_sqlite"]:
        url = f"sqlite+aiosqlite:///{workdir / f'inbox-{share}.db'}"
        results["inbox"][f"sqlite, {share:.0%} pending"] = await scenarios.inbox(url, config, share)
    for share in config["inbox_postgres"] if pg_version else []:
        db = f"sayso_bench_inbox_{os.getpid()}"
        await pg_admin(f'CREATE DATABASE "{db}"')
        try:
            result = await scenarios.inbox(PG_URL.format(db=db), config, share)
            results["inbox"][f"postgres, {share:.0%} pending"] = result
        finally:
            await pg_admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    results["duration_s"] = round(time.monotonic() - started, 1)
    results["machine"]["loadavg_at_end"] = os.getloadavg()[0]
    results["logs"] = str(workdir)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller counts, under 2 minutes")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, dbs)")
    parser.add_argument("--output", default=str(HERE / "results.json"))
    args = parser.parse_args()
    out = asyncio.run(main(args.quick, args.skip_postgres))
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    print(markdown(out))
    if not args.keep:
        shutil.rmtree(out["logs"], ignore_errors=True)

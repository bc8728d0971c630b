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
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's bot/ and store/

import issue13
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
ISSUE13_FULL = {
    "people": 40,
    "many": 500,
    "model_latency": 2.0,
    "slow_latency": 25.0,  # under the bench agent's 30 s model timeout: no retries
    "burst": 1000,
    "probes": 10,
    "ack_requests": 1000,
    "decisions": 1000,
    "worker_counts": [1, 2, 4],
    "isolated_clicks": 50,
    "sqlite": True,
    "time_limit": 120.0,
}
ISSUE13_QUICK = {
    **ISSUE13_FULL,
    "many": 200,
    "burst": 300,
    "probes": 5,
    "ack_requests": 200,
    "decisions": 100,
    "isolated_clicks": 15,
    "sqlite": False,
    "time_limit": 60.0,
}


class Bench:
    def __init__(self, workdir: Path, config: dict[str, Any], profile: bool = False) -> None:
        self.workdir = workdir
        self.config = config
        self.profile = profile
        self.model_port, self.slack_port, self.floor_port, self.udp_port = (
            free_port() for _ in range(4)
        )
        self.model_url = f"http://127.0.0.1:{self.model_port}/v1"
        self.slack_url = f"http://127.0.0.1:{self.slack_port}"
        self.floor_url = f"http://127.0.0.1:{self.floor_port}/slack/events"
        env = {"PYTHONUNBUFFERED": "1"}
        self.model = self.fake_model("fake_model", self.model_port)
        self.extra_models: dict[float, tuple[Proc, str]] = {}
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

    def fake_model(self, name: str, port: int, latency: float = 0.0) -> Proc:
        args = ["-m", "bot.testing.fake_model", "--port", str(port), "--script", "tool-then-text"]
        args += ["--tool", "deploy", "--latency", str(latency)]
        return Proc(name, args, self.workdir, {"PYTHONUNBUFFERED": "1"})

    async def start(self, latencies: tuple[float, ...] = ()) -> None:
        """The fake model, the fake Slack, the floor; plus a fake model per extra latency."""
        self.effects = await SideEffects.listen(self.udp_port)
        for latency in latencies:
            port = free_port()
            proc = self.fake_model(f"fake_model_{latency:g}s", port, latency)
            self.extra_models[latency] = (proc, f"http://127.0.0.1:{port}/v1")
        extra = [proc.start() for proc, _ in self.extra_models.values()]
        await asyncio.gather(self.model.start(), self.slack.start(), self.floor.start(), *extra)

    def model_url_for(self, latency: float) -> str:
        return self.extra_models[latency][1] if latency else self.model_url

    async def stop(self) -> None:
        extra = [proc.stop() for proc, _ in self.extra_models.values()]
        await asyncio.gather(self.model.stop(), self.slack.stop(), self.floor.stop(), *extra)
        if self.effects is not None:
            self.effects.close()

    def _bot_proc(
        self, name: str, port: int, database_url: str, model_url: str, role: str, extra: list[str]
    ) -> Proc:
        args = [str(HERE / "bot_server.py"), "--port", str(port), "--role", role]
        args += ["--database-url", database_url, "--slack-api-url", f"{self.slack_url}/api/"]
        args += ["--model-url", model_url, "--udp-port", str(self.udp_port), *extra]
        if self.profile:
            args += ["--profile", str(self.workdir / f"{name}.prof")]
        if self.config.get("shared_slack_session"):
            args += ["--shared-slack-session"]
        return Proc(name, args, self.workdir, {"PYTHONUNBUFFERED": "1"})

    def bot(
        self,
        name: str,
        database_url: str,
        *,
        role: str = "both",
        workers: int = 0,
        model_latency: float = 0.0,
        concurrency: int | None = None,
    ) -> scenarios.BotUnderTest:
        """The bot: one process in `role`; with `workers`, a front and that many `sayso
        worker` processes on the same database."""
        model_url = self.model_url_for(model_latency)
        extra = ["--shutdown-grace", "1"]
        if concurrency is not None:
            extra += ["--concurrency", str(concurrency)]
        port = free_port()
        front_role = "front" if workers else role
        proc = self._bot_proc(name, port, database_url, model_url, front_role, extra)
        worker_procs = []
        for n in range(workers):
            wport = free_port()
            wproc = self._bot_proc(f"{name}_w{n}", wport, database_url, model_url, "worker", extra)
            worker_procs.append((wproc, f"http://127.0.0.1:{wport}"))
        assert self.effects is not None
        return scenarios.BotUnderTest(
            proc,
            f"http://127.0.0.1:{port}",
            database_url,
            self.effects,
            self.slack_url,
            worker_procs,
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


@asynccontextmanager
async def pg_database(name: str) -> AsyncIterator[str]:
    """A fresh PostgreSQL database for one measurement, dropped afterwards."""
    db = f"sayso_bench_{name}_{os.getpid()}"
    await pg_admin(f'CREATE DATABASE "{db}"')
    try:
        yield PG_URL.format(db=db)
    finally:
        await pg_admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


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
        "loadavg_at_start": os.getloadavg(),
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
    results["machine"]["loadavg_at_end"] = os.getloadavg()
    results["logs"] = str(workdir)
    return results


SECTIONS = ("latency", "backlog", "decisions")


async def main_issue13(
    quick: bool, sections: tuple[str, ...] = SECTIONS, profile: bool = False
) -> dict[str, Any]:
    """Issue 13's scenarios, side by side: `sayso run` (front + embedded worker, SQLite) and
    fronts and `sayso worker` processes on PostgreSQL."""
    config = ISSUE13_QUICK if quick else ISSUE13_FULL
    workdir = Path(tempfile.mkdtemp(prefix="sayso-bench13-"))
    results: dict[str, Any] = {"mode": "quick" if quick else "full", "machine": machine()}
    pg_version = await postgres_available()
    if pg_version is None:
        raise SystemExit("issue 13's scenarios need PostgreSQL at postgres@127.0.0.1:5432")
    results["machine"]["postgresql"] = pg_version
    latency, slow, limit = config["model_latency"], config["slow_latency"], config["time_limit"]
    bench = Bench(workdir, config, profile)
    started = time.monotonic()
    await bench.start(latencies=(latency, slow))
    out: dict[str, Any] = results.setdefault("issue13", {})
    try:
        # model latency 2 s: forty people at once, then 500 runs at once
        topologies = [("postgres, front + 1 worker", 1)] if "latency" in sections else []
        if config["sqlite"] and topologies:
            topologies.insert(0, ("sqlite, sayso run", 0))
        for label, workers in topologies:
            async with AsyncExitStack() as stack:
                url = f"sqlite+aiosqlite:///{workdir / 'latency.db'}"
                if workers:
                    url = await stack.enter_async_context(pg_database("latency"))
                bot = bench.bot(
                    f"bot_latency_{workers}w", url, workers=workers, model_latency=latency
                )
                await stack.enter_async_context(bot)
                people = await issue13.many_at_once(
                    bot, "people", config["people"], 40, latency, limit
                )
                many = await issue13.many_at_once(bot, "many", config["many"], 100, latency, limit)
                out[f"model latency: {label}"] = {"people": people, "many": many}
        # backlog: a burst of runs kept in flight by a slow model
        topologies = [("postgres, front + 1 worker", 1), ("sqlite, sayso run", 0)]
        for label, workers in topologies if "backlog" in sections else []:
            async with AsyncExitStack() as stack:
                url = f"sqlite+aiosqlite:///{workdir / 'backlog.db'}"
                if workers:
                    url = await stack.enter_async_context(pg_database("backlog"))
                bot = bench.bot(f"bot_backlog_{workers}w", url, workers=workers, model_latency=slow)
                await stack.enter_async_context(bot)
                out[f"backlog: {label}"] = await issue13.backlog(
                    bot, bench.floor_url, "burst", config
                )
        # decisions/s: a front and 1, 2, 4 workers on PostgreSQL
        for workers in config["worker_counts"] if "decisions" in sections else []:
            async with pg_database(f"decisions{workers}") as url:
                async with bench.bot(f"bot_decisions_{workers}w", url, workers=workers) as bot:
                    if workers == config["worker_counts"][0]:
                        out[
                            "isolated click, postgres, front + 1 worker"
                        ] = await scenarios.isolated_clicks(bot, config["isolated_clicks"], limit)
                    label = f"front + {workers} worker" + ("s" if workers > 1 else "")
                    out[f"decisions: postgres, {label}"] = await scenarios.decisions(
                        bot, {**config, "time_limit": limit}
                    )
    finally:
        await bench.stop()
    results["duration_s"] = round(time.monotonic() - started, 1)
    results["machine"]["loadavg_at_end"] = os.getloadavg()
    results["logs"] = str(workdir)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller counts, under 2 minutes")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, dbs)")
    parser.add_argument(
        "--issue13", action="store_true", help="only issue 13's scenarios (workers, backlog)"
    )
    parser.add_argument(
        "--only", help=f"with --issue13: some of {','.join(SECTIONS)} (comma-separated)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="with --issue13: cProfile every bot process (--keep)"
    )
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    if args.issue13:
        sections = tuple(args.only.split(",")) if args.only else SECTIONS
        out = asyncio.run(main_issue13(args.quick, sections, args.profile))
        output = args.output or str(HERE / "results-issue13.json")
    else:
        out = asyncio.run(main(args.quick, args.skip_postgres))
        output = args.output or str(HERE / "results.json")
    Path(output).write_text(json.dumps(out, indent=2) + "\n")
    print(markdown(out))
    if not args.keep and not args.profile:
        shutil.rmtree(out["logs"], ignore_errors=True)

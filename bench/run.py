"""sayso benchmarks, one entry point: `python bench/run.py [--all] [--quick | --smoke]`.

- no flag: the main tables (ack latency against a bare Bolt app, click → tool, decisions/s,
  memory, inbox query);
- `--issue13`: issue 13's scenarios only (workers, backlog; PostgreSQL);
- `--all`: every scenario: the main tables, issue 13's, then `bench/decision_cpu.py`,
  `bench/api.py` (against its targets), `bench/memory.py` and `bench/outbox.py` as
  subprocesses;
- `--quick`: smaller counts; `--smoke`: tiny counts on SQLite only, a check that everything
  runs (CI runs `--all --smoke`: tests/bench/test_bench_smoke.py).

Starts, as subprocesses, the fake model, the fake Slack (the SlackSandbox), the floor (a bare
Bolt app that only acks) and the real bot in HTTP mode; this process is the load generator.
Prints markdown tables and writes one JSON file (`bench/results.json` unless `--out`) with the
command, the commit, the machine (cores, CPU model, load average at start and end), Python,
SQLite and PostgreSQL versions, and each scenario's results and duration. Only 127.0.0.1 is
used.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
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
SMOKE = {
    "levels": {1: 3, 10: 10},
    "decisions": 10,
    "paused_runs": 100,
    "inbox_requests": 1000,
    "inbox_sqlite": [0.1],
    "inbox_postgres": [],
    "isolated_clicks": 2,
    "warm": 2,
    "time_limit": 20.0,
    "memory_on_first_bot": True,
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
ISSUE13_SMOKE = {
    **ISSUE13_FULL,
    "people": 3,
    "many": 5,
    "model_latency": 0.5,
    "slow_latency": 0.5,  # the same fake model: one process fewer
    "burst": 5,
    "probes": 1,
    "ack_requests": 5,
    "decisions": 5,
    "isolated_clicks": 2,
    "time_limit": 20.0,
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

    async def start(self, latencies: tuple[float, ...] = (), floor: bool = True) -> None:
        """The fake model, the fake Slack, the floor (unless not `floor`); plus a fake model
        per extra latency."""
        self.effects = await SideEffects.listen(self.udp_port)
        for latency in dict.fromkeys(latencies):  # one fake model per distinct latency
            port = free_port()
            proc = self.fake_model(f"fake_model_{latency:g}s", port, latency)
            self.extra_models[latency] = (proc, f"http://127.0.0.1:{port}/v1")
        extra = [proc.start() for proc, _ in self.extra_models.values()]
        procs = [self.model, self.slack, *([self.floor] if floor else [])]
        await asyncio.gather(*(proc.start() for proc in procs), *extra)

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
        extra_args: tuple[str, ...] = (),
    ) -> scenarios.BotUnderTest:
        """The bot: one process in `role`; with `workers`, a front and that many `sayso
        worker` processes on the same database."""
        model_url = self.model_url_for(model_latency)
        extra = ["--shutdown-grace", "1", *extra_args]
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
        "loadavg_at_start": list(os.getloadavg()),
    }


def commit() -> str:
    """This tree's commit, `+dirty` when files differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(HERE.parent), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


async def main_tables(
    config: dict[str, Any], pg_version: str | None, workdir: Path
) -> dict[str, Any]:
    """The main tables: ack latency against the floor, decisions/s, memory, inbox."""
    results: dict[str, Any] = {}
    bench = Bench(workdir, config)
    await bench.start()
    try:
        sqlite_url = f"sqlite+aiosqlite:///{workdir / 'ack.db'}"
        async with bench.bot("bot_sqlite", sqlite_url) as bot:
            results["ack"] = await scenarios.ack_levels(bot, bench.floor_url, config)
            results["decisions_sqlite"] = await scenarios.decisions(bot, config)
            if config.get("memory_on_first_bot"):  # smoke: one bot process fewer
                results["memory"] = await scenarios.memory(bot, config)
        if pg_version:
            async with pg_database("decisions") as url:
                async with bench.bot("bot_postgres", url) as bot:
                    results["decisions_postgres"] = await scenarios.decisions(bot, config)
        if "memory" not in results:
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
        async with pg_database("inbox") as url:
            result = await scenarios.inbox(url, config, share)
            results["inbox"][f"postgres, {share:.0%} pending"] = result
    return results


SECTIONS = ("latency", "backlog", "decisions")


async def main_issue13(
    config: dict[str, Any],
    pg_version: str | None,
    workdir: Path,
    sections: tuple[str, ...] = SECTIONS,
    profile: bool = False,
) -> dict[str, Any]:
    """Issue 13's scenarios, side by side: `sayso run` (front + embedded worker, SQLite) and
    fronts and `sayso worker` processes on PostgreSQL. Without PostgreSQL only the `sayso run`
    rows (and its decisions and isolated click)."""
    latency, slow, limit = config["model_latency"], config["slow_latency"], config["time_limit"]
    bench = Bench(workdir, config, profile)
    await bench.start(latencies=(latency, slow))
    out: dict[str, Any] = {}
    sqlite_first = config["sqlite"] or not pg_version
    try:
        # model latency: forty people at once, then many runs at once
        topologies = [("postgres, front + 1 worker", 1)] if pg_version else []
        if sqlite_first:
            topologies.insert(0, ("sqlite, sayso run", 0))
        for label, workers in topologies if "latency" in sections else []:
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
        topologies = [("postgres, front + 1 worker", 1)] if pg_version else []
        topologies.append(("sqlite, sayso run", 0))
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
        # decisions/s: a front and 1, 2, 4 workers on PostgreSQL (`sayso run` on SQLite without)
        counts = config["worker_counts"] if pg_version else [0]
        for workers in counts if "decisions" in sections else []:
            async with AsyncExitStack() as stack:
                url = f"sqlite+aiosqlite:///{workdir / 'decisions.db'}"
                label = "sqlite, sayso run"
                if workers:
                    url = await stack.enter_async_context(pg_database(f"decisions{workers}"))
                    label = f"postgres, front + {workers} worker" + ("s" if workers > 1 else "")
                bot = bench.bot(f"bot_decisions_{workers}w", url, workers=workers)
                await stack.enter_async_context(bot)
                if workers == counts[0]:
                    out[f"isolated click, {label}"] = await scenarios.isolated_clicks(
                        bot, config["isolated_clicks"], limit
                    )
                out[f"decisions: {label}"] = await scenarios.decisions(
                    bot, {**config, "time_limit": limit}
                )
    finally:
        await bench.stop()
    return out


_RUNS = itertools.count(1)


async def script(workdir: Path, name: str, argv: list[str]) -> dict[str, Any]:
    """Run another bench script as a person would (`python bench/NAME ARGV --out FILE`) and
    read its JSON. Its output goes to a log in the work directory, quoted if it fails."""
    out = workdir / f"{Path(name).stem}-{next(_RUNS)}.json"
    log_path = out.with_suffix(".log")
    command = [sys.executable, str(HERE / name), *argv, "--out", str(out)]
    print(f"running {' '.join(command[1:])}", flush=True)
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=HERE.parent,
            env={**os.environ, "PYTHONPATH": str(HERE.parent)},
        )
        code = await proc.wait()
    if code != 0 or not out.exists():
        tail = log_path.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"{' '.join(command)} exited {code}; its output ends:\n{tail}")
    return dict(json.loads(out.read_text()))


async def decision_cpu_scenario(workdir: Path, mode: str, pg: str | None) -> dict[str, Any]:
    """`bench/decision_cpu.py`: PostgreSQL (when up) and SQLite."""
    sizes = {
        "full": [],
        "quick": ["--decisions", "30", "--concurrent", "100", "--no-profile"],
        "smoke": ["--smoke"],
    }[mode]
    out: dict[str, Any] = {}
    for database in (["postgresql"] if pg and mode != "smoke" else []) + ["sqlite"]:
        argv = [*sizes, *(["--sqlite"] if database == "sqlite" else [])]
        out[database] = await script(workdir, "decision_cpu.py", argv)
    return out


async def api_scenario(workdir: Path, mode: str, pg: str | None) -> dict[str, Any]:
    """`bench/api.py` against its targets: SQLite and PostgreSQL (when up)."""
    sizes = {"full": [], "quick": ["--tasks", "100"], "smoke": ["--smoke"]}[mode]
    out: dict[str, Any] = {}
    for database in ["sqlite"] + (["postgresql"] if pg and mode != "smoke" else []):
        argv = [*sizes, *(["--postgres"] if database == "postgresql" else [])]
        out[database] = await script(workdir, "api.py", argv)
    return out


async def memory_scenario(workdir: Path, mode: str) -> dict[str, Any]:
    """`bench/memory.py`: what the RSS growth with paused runs is made of."""
    argv = {"full": ["--paused", "0,2000,10000", "--tracemalloc"], "quick": ["--paused", "0,10000"]}
    return await script(workdir, "memory.py", argv.get(mode, ["--smoke"]))


async def outbox_scenario(workdir: Path, mode: str) -> dict[str, Any]:
    """`bench/outbox.py`: 429s per 100 decisions and convergence after an outage (SQLite, one
    dispatcher; its `--replicas 2` needs SAYSO_TEST_POSTGRES_URL and is not run here)."""
    argv = {"full": ["--decisions", "100", "--outage", "60"], "quick": [], "smoke": ["--smoke"]}
    return await script(workdir, "outbox.py", argv[mode])


async def main(args: argparse.Namespace) -> dict[str, Any]:
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    workdir = Path(tempfile.mkdtemp(prefix="sayso-bench-"))
    results: dict[str, Any] = {
        "command": "python bench/run.py " + " ".join(sys.argv[1:]),
        "mode": mode,
        "commit": commit(),
        "machine": machine(),
    }
    pg_version = None if args.skip_postgres or args.smoke else await postgres_available()
    results["machine"]["postgresql"] = pg_version
    if args.issue13 and not args.all and pg_version is None and not args.smoke:
        raise SystemExit(
            "issue 13's scenarios compare with PostgreSQL at postgres@127.0.0.1:5432 "
            "(--skip-postgres is for --all and the main tables)"
        )
    started = time.monotonic()
    out: dict[str, Any] = results.setdefault("scenarios", {})
    took: dict[str, float] = results.setdefault("durations_s", {})
    todo: list[tuple[str, Any]] = []
    if args.all or not args.issue13:
        config = {"full": FULL, "quick": QUICK, "smoke": SMOKE}[mode]
        todo.append(("main", lambda: main_tables(config, pg_version, workdir)))
    if args.all or args.issue13:
        config13 = {"full": ISSUE13_FULL, "quick": ISSUE13_QUICK, "smoke": ISSUE13_SMOKE}[mode]
        sections = tuple(args.only.split(",")) if args.only else SECTIONS
        todo.append(
            ("issue13", lambda: main_issue13(config13, pg_version, workdir, sections, args.profile))
        )
    if args.all:
        todo.append(("decision_cpu", lambda: decision_cpu_scenario(workdir, mode, pg_version)))
        todo.append(("api", lambda: api_scenario(workdir, mode, pg_version)))
        todo.append(("memory", lambda: memory_scenario(workdir, mode)))
        todo.append(("outbox", lambda: outbox_scenario(workdir, mode)))
    for name, scenario in todo:
        t0 = time.monotonic()
        try:
            out[name] = await scenario()
        except Exception as exc:  # keep the other scenarios' results; exit 1 at the end
            traceback.print_exc()
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:4000]}
            results.setdefault("failed", []).append(name)
        took[name] = round(time.monotonic() - t0, 1)
    results["duration_s"] = round(time.monotonic() - started, 1)
    results["machine"]["loadavg_at_end"] = list(os.getloadavg())
    results["logs"] = str(workdir)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--all",
        action="store_true",
        help="every scenario: main tables, issue 13's, decision CPU, the API, memory, outbox",
    )
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a check that it runs: tiny counts, SQLite only; the numbers mean nothing",
    )
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
    parser.add_argument(
        "--out", "--output", dest="out", default=None, help="default: bench/results.json"
    )
    args = parser.parse_args()
    out = asyncio.run(main(args))
    output = args.out or str(HERE / "results.json")
    Path(output).write_text(json.dumps(out, indent=2) + "\n")
    print(markdown(out))
    if out.get("failed"):  # the work directory (logs) is kept: it says why
        raise SystemExit(f"failed: {', '.join(out['failed'])}; logs in {out['logs']}")
    if not args.keep and not args.profile:
        shutil.rmtree(out["logs"], ignore_errors=True)

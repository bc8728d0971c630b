"""The real bot in HTTP mode for the benchmark, in one of the roles a deployment runs.

    python bench/bot_server.py --port 8102 --database-url sqlite+aiosqlite:///bench.db \
        --slack-api-url http://127.0.0.1:8101/api/ --model-url http://127.0.0.1:8100/v1 \
        --udp-port 8103 [--role both|front|worker|inprocess] [--concurrency N]

Roles, built from the bot's own entry points (bot/compose.py, bot/worker.py):

- `both` (default), as `sayso run`: the front (POST /slack/events, GET /healthz) on the main
  event loop and an `EmbeddedWorker` on its own thread and event loop;
- `front`, as `sayso run --no-worker`: hands every run to workers (PostgreSQL NOTIFY);
- `worker`, as `sayso worker [--concurrency N]`: claims and drives runs, serves no Slack
  events; `--port` serves only GET /healthz and the bench route below;
- `inprocess`: `build_bot` alone, one event loop that acks and drives runs (the mode of the
  e2e fixtures, and of this script before issue 13).

Every role adds one bench-only route, GET /bench/rss: collects garbage (unless ?gc=0), then
answers this process's VmRSS (KiB) and how much background work is going on (so the benchmark
can tell when work is done). Logs go to stderr at the default level (INFO), as in production.
`--profile FILE` writes a cProfile of the main thread's event loop when the process stops (the
embedded worker's thread of `both` is not in it: profile `front` and `worker` instead).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tracemalloc
from collections.abc import Callable
from typing import Any

from agents import make_agents
from aiohttp import web
from common import SECRET, TOKEN, loop_choice, rss_kb

from bot import event_loop
from bot.cli import setup_logging
from bot.compose import build_bot
from bot.config import Settings
from bot.serve import stop_on_signals
from bot.service.registry import AgentRegistry
from bot.worker import EmbeddedWorker, Worker, run_worker

ROLES = ("both", "front", "worker", "inprocess")


def _sqlite_lib() -> Any:
    import ctypes
    import ctypes.util
    import sqlite3  # noqa: F401  (loads libsqlite3 into the process)

    name = ctypes.util.find_library("sqlite3")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    lib.sqlite3_memory_highwater.restype = ctypes.c_int64
    return lib


def memory_kb() -> dict[str, int | None]:
    """This process's memory, KiB: VmRSS and its parts (anonymous, file-backed, shared) from
    /proc; SQLite's allocator now and at its peak (`sqlite3_memory_used()` and
    `sqlite3_memory_highwater()` of the libsqlite3 Python's sqlite3 module loaded; None when
    unreachable); Python's traced allocations (with tracemalloc on)."""
    out: dict[str, int | None] = {}
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads"):
                out[key] = int(line.split()[1])
    lib = _sqlite_lib()
    out["sqlite_kb"] = int(lib.sqlite3_memory_used()) // 1024 if lib else None
    out["sqlite_peak_kb"] = int(lib.sqlite3_memory_highwater(0)) // 1024 if lib else None
    traced = tracemalloc.get_traced_memory() if tracemalloc.is_tracing() else None
    out["python_traced_kb"] = traced[0] // 1024 if traced else None
    out["python_traced_peak_kb"] = traced[1] // 1024 if traced else None
    return out


def malloc_trim() -> None:
    """Give the C heap's free memory back to the system (glibc `malloc_trim(0)`)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


ROWS: dict[str, list[int]] = {}
"""With --count-rows: SQL statement -> [executions, rows fetched, most rows at once]."""


def count_rows() -> None:
    """Count the rows each SQL statement fetches (SQLAlchemy's async adapters fetch a
    result's rows whole, right after the statement runs)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "after_cursor_execute")
    def rows(_conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        fetched = getattr(cursor, "_rows", None)
        n = len(fetched) if fetched is not None else 0
        seen = ROWS.setdefault(" ".join(statement.split())[:300], [0, 0, 0])
        seen[0] += 1
        seen[1] += n
        seen[2] = max(seen[2], n)


def sqlite_cache(kib: int) -> None:
    """Experiment (--sqlite-cache-kib): cap the page cache of every SQLite connection
    (`PRAGMA cache_size = -KiB`; SQLite's default is 2,000 KiB per connection)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def cap(dbapi_connection: Any, _record: Any) -> None:
        if type(dbapi_connection).__module__.startswith("sqlalchemy.dialects.sqlite"):
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA cache_size = -{kib}")
            cursor.close()


def bench_routes(app: web.Application, background: Callable[[], int]) -> None:
    """GET /bench/rss; POST /bench/tracemalloc (start tracing, take the baseline snapshot);
    GET /bench/tracemalloc?top=N (where Python memory grew since the baseline)."""
    baseline: list[tracemalloc.Snapshot] = []

    async def rss(request: web.Request) -> web.Response:
        if request.query.get("gc", "1") == "1":
            for _ in range(3):
                gc.collect()
                await asyncio.sleep(0.05)
        out: dict[str, Any] = {"rss_kb": rss_kb(os.getpid()), "background_tasks": background()}
        if request.query.get("detail") == "1":
            out.update(memory_kb())
            if request.query.get("trim") == "1":  # then the same after malloc_trim
                malloc_trim()
                out["after_trim"] = memory_kb()
        return web.json_response(out)

    async def start_tracing(request: web.Request) -> web.Response:
        gc.collect()
        if not tracemalloc.is_tracing():
            tracemalloc.start(int(request.query.get("frames", "25")))
        baseline[:] = [tracemalloc.take_snapshot()]
        tracemalloc.reset_peak()
        return web.json_response(
            {"ok": True, "traced_kb": tracemalloc.get_traced_memory()[0] // 1024}
        )

    async def traced(request: web.Request) -> web.Response:
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
        if not baseline:
            return web.json_response({"error": "POST /bench/tracemalloc first"}, status=409)
        ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
        before, after = baseline[0].filter_traces(ignore), snapshot.filter_traces(ignore)
        top = int(request.query.get("top", "25"))
        by = request.query.get("by", "traceback")
        stats = after.compare_to(before, by)
        total = sum(s.size_diff for s in stats)
        rows = [
            {
                "size_diff_kb": round(s.size_diff / 1024, 1),
                "count_diff": s.count_diff,
                "where": [f"{f.filename}:{f.lineno}" for f in s.traceback][-8:],
            }
            for s in stats[:top]
        ]
        current, peak = tracemalloc.get_traced_memory()
        out = {
            "total_diff_kb": round(total / 1024, 1),
            "traced_kb": current // 1024,
            "traced_peak_kb": peak // 1024,  # since the baseline
            "top": rows,
        }
        return web.json_response(out)

    async def sql_rows(request: web.Request) -> web.Response:
        top = sorted(ROWS.items(), key=lambda item: -item[1][2])[
            : int(request.query.get("top", "10"))
        ]
        if request.query.get("reset") == "1":
            ROWS.clear()
        return web.json_response(
            [{"statement": k, "executions": v[0], "rows": v[1], "max_rows": v[2]} for k, v in top]
        )

    app.router.add_get("/bench/rss", rss)
    app.router.add_get("/bench/sql-rows", sql_rows)
    app.router.add_post("/bench/tracemalloc", start_tracing)
    app.router.add_get("/bench/tracemalloc", traced)


async def listen(app: web.Application, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print(f"listening http://127.0.0.1:{port}", flush=True)
    return runner


async def serve_worker_role(settings: Settings, agents: AgentRegistry, port: int) -> None:
    """`sayso worker` (bot.worker.run_worker) plus a port answering /healthz and /bench/rss."""
    stop = stop_on_signals()
    app = web.Application()
    holder: list[Worker] = []

    def busy() -> int:
        if not holder:
            return 1
        worker = holder[0]
        return worker.runs_in_flight + len(worker.service.tasks)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": bool(holder)}, status=200 if holder else 503)

    app.router.add_get("/healthz", healthz)
    bench_routes(app, busy)
    runner: web.AppRunner | None = None
    ready = asyncio.Event()

    def started(worker: Worker) -> None:
        holder.append(worker)
        ready.set()

    task = asyncio.create_task(run_worker(settings, agents, stop, on_started=started))
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if task.done():
        await task  # failed before it started: raise why
        return
    runner = await listen(app, port)
    try:
        await task
    finally:
        await runner.cleanup()


async def main(args: argparse.Namespace) -> None:
    if args.count_rows:
        count_rows()
    if args.sqlite_cache_kib:
        sqlite_cache(args.sqlite_cache_kib)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        slack_bot_token=TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=args.slack_api_url,
        database_url=args.database_url,
        sayso_sweep_interval=args.sweep_interval,
        sayso_log_level=args.log_level,
        sayso_rate_limit="off",  # one requester starts hundreds of runs on purpose
        sayso_worker_concurrency=args.concurrency,
        sayso_shutdown_grace=args.shutdown_grace,
        # the approval API's webhooks go to the load generator on 127.0.0.1 (any port): a
        # loopback callback is refused unless named here (issue 21)
        sayso_callback_hosts="127.0.0.1",
    )
    setup_logging(settings.sayso_log_level)
    agents = AgentRegistry(make_agents(args.model_url, args.udp_port))
    if args.role == "worker":
        await serve_worker_role(settings, agents, args.port)
        return
    bot = build_bot(settings, agents)
    embedded = EmbeddedWorker(settings, agents) if args.role == "both" else None
    if embedded is not None:  # as bot.serve.serve (`sayso run`): one outbox dispatcher
        embedded.attach(bot)
    elif args.role == "front":  # as `sayso run --no-worker`: NOTIFY wakes the workers
        bot.hand_runs_to_workers(lambda run_id: None)
    stop = stop_on_signals()
    await bot.start()
    if embedded is not None:
        await embedded.start()

    def busy() -> int:  # the outbox's last rows go out within the App Home window after it
        return len(bot.service.tasks) + int(embedded is not None and embedded.busy)

    app = bot.web_app()
    bench_routes(app, busy)
    runner = await listen(app, args.port)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        if embedded is not None:
            await embedded.stop()
        await bot.stop()


def parser() -> argparse.ArgumentParser:
    """Every flag of this script, in one place: `bench/decision_cpu.py --serve` parses its
    bot's flags with it too, so a flag `main` reads is always defined."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--database-url", required=True)
    p.add_argument("--slack-api-url", required=True)
    p.add_argument("--model-url", required=True)
    p.add_argument("--udp-port", type=int, required=True)
    p.add_argument("--role", choices=ROLES, default="both")
    p.add_argument("--concurrency", type=int, default=None, help="runs in flight per worker")
    p.add_argument("--shutdown-grace", type=float, default=20.0)
    p.add_argument("--sweep-interval", type=float, default=10.0)
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--profile", help="write a cProfile of the main thread to this file")
    p.add_argument("--count-rows", action="store_true", help="count the rows of each SQL statement")
    p.add_argument("--sqlite-cache-kib", type=int, help="an experiment: PRAGMA cache_size = -KiB")
    return p


if __name__ == "__main__":
    args = parser().parse_args()
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
        try:
            profile.runcall(event_loop.run, main(args), loop_choice())
        finally:
            profile.dump_stats(args.profile)
    else:
        event_loop.run(main(args), loop_choice())

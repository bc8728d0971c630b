"""Bot CPU per approved decision, end to end, with a profile of where it goes.

    python bench/decision_cpu.py                     # PostgreSQL, 100 sequential + 200 concurrent
    python bench/decision_cpu.py --sqlite            # the same on a SQLite file
    python bench/decision_cpu.py --role inprocess    # build_bot alone (one event loop)
    python bench/decision_cpu.py --decisions 50 --concurrent 100 --top 40 --out out.json
    python bench/decision_cpu.py --smoke --out out.json   # a check that it runs (SQLite, < 30 s)
    BENCH_SQL_WHERE=1 python bench/decision_cpu.py ...   # also count statements by caller ("@ ...")
    BENCH_SQL_WHERE=6 python bench/decision_cpu.py ...   # ... by their six nearest callers
    BENCH_KEEP_PROFILE=/tmp/bot.prof python bench/decision_cpu.py ...   # keep the cProfile dump

Processes on 127.0.0.1, as in `bench/run.py`: the fake model (`tool-then-text` on `deploy`),
the fake Slack (the SlackSandbox, `bench/fake_slack.py`) and the real bot in HTTP mode
(`bench/bot_server.py`, its flags and roles, logging at INFO), started through this file's
`--serve` mode, which only adds two bench-only routes: a cProfile switch and counters of SQL
statements and Slack Web API calls. This process is Slack's side: it sends signed slash
commands and Approve clicks.

The bot's role (`--role`) is `both` by default, as in `bench/run.py`: `sayso run`, the front
on the main event loop and the embedded worker on its own thread and loop, in one process;
`inprocess` is `build_bot` alone (one loop acks and drives runs), the mode of the numbers
measured before issue 25.

Phases (each on cards prepared beforehand; preparing them is not counted):
1. *sequential*: one Approve click at a time; the next click is sent once the previous run is
   completed (its answer posted);
2. *concurrent*: every click at once, at concurrency 50 (what `bench/run.py`'s "bot CPU
   ms/decision" measures too);
3. *profile*: the concurrent phase again with cProfile on in the bot (its CPU numbers are
   inflated by the profiler and not reported as the cost), on every event loop thread (the
   front's and, with `both`, the embedded worker's), each timed by its own thread's CPU clock;
   aiosqlite's threads (SQLite's own work) are not in it. The summary is own (not
   cumulative) CPU time: SQLAlchemy's async layer runs on greenlets, which make cProfile's
   cumulative times of coroutines meaningless; own time is grouped by package and listed by
   function.

Bot CPU is user + system time of the bot process, all threads (`/proc/<pid>/stat`), from just
before the first click to the moment the bot is idle again (every run completed, no
background task, and the App Home refresher's trailing window, 2 s, passed), divided by the
clicks. The idle process's CPU per second (sweepers, pool pings) is measured first and shown
apart, not subtracted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # this tree's bot/ and store/

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/{db}"
CHECKOUTS = "(connection checkouts)"  # one per transaction (SQL counter key)
SIZES = {"home_window": 2.5, "idle_s": 3.0, "warm": 10}
"""home_window: the App Home refresher folds refreshes into one trailing refresh after 2 s;
idle_s: how long the idle bot's CPU is measured; warm: decisions of the warm-up."""
SMOKE = {"home_window": 0.3, "idle_s": 0.5, "warm": 2}
ROLES = ("both", "inprocess")


# -- the bot, with a profiler and counters ---------------------------------------------------
def _count_callers(sql: Any) -> None:
    """Count the statements compiled anew; with `BENCH_SQL_WHERE=N`, also each statement under
    "@ " and its callers (the nearest N, at least 3)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def count_compiled(*args: Any) -> None:
        """Statements SQLAlchemy compiled anew (not from its cache), by why."""
        hit = getattr(args[4], "cache_hit", None)
        if hit is not None and getattr(hit, "name", "") != "CACHE_HIT":
            sql[f"(compiled: {getattr(hit, 'name', hit)})"] += 1

    event.listen(Engine, "before_cursor_execute", count_compiled)
    if where := os.environ.get("BENCH_SQL_WHERE"):
        depth = max(3, int(where) if where.isdigit() else 3)
        event.listen(
            Engine, "before_cursor_execute", lambda *_: sql.update(["@ " + _caller(depth)])
        )


def _caller(depth: int = 3) -> str:
    """Where a statement comes from: the nearest `depth` bot/store frames of the coroutine
    that awaits it (SQLAlchemy runs statements on a greenlet: its parent holds the caller)."""
    import greenlet

    current = greenlet.getcurrent()
    frame = current.parent.gr_frame if current.parent is not None else sys._getframe(2)
    where: list[str] = []
    while frame is not None and len(where) < depth:
        name = frame.f_code.co_filename
        if ("/store/" in name or "/bot/" in name) and not name.endswith("store/db.py"):
            where.append(f"{Path(name).name}:{frame.f_code.co_name}")
        frame = frame.f_back
    return " < ".join(where)


def serve(argv: list[str]) -> None:
    """Run bench/bot_server.py's main with two more bench-only routes on its web app:
    `POST /bench/profile?on=1|0` starts cProfile (CPU time) / stops it and writes the stats to
    `$BENCH_PROFILE_OUT`; `GET /bench/counters` answers the SQL statements and Slack Web API
    calls made so far, by kind."""
    import cProfile
    from collections import Counter

    import bot_server
    from aiohttp import web
    from common import loop_choice
    from slack_sdk.web.async_client import AsyncWebClient
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    from sqlalchemy.pool import Pool

    from bot import event_loop
    from bot.front import Bot

    # CPU time of the profiled thread (not of the process: the other threads' work would be
    # charged to whatever this thread was doing, mostly epoll), not time spent waiting
    profiler = cProfile.Profile(time.thread_time)
    worker_profiler = cProfile.Profile(time.thread_time)  # the embedded worker's thread
    embedded: list[Any] = []

    class RecordedEmbeddedWorker(bot_server.EmbeddedWorker):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            embedded.append(self)

    bot_server.EmbeddedWorker = RecordedEmbeddedWorker

    async def on_worker_thread(call: Any) -> None:
        """Run `call` on the embedded worker's event loop thread (cProfile profiles only
        the thread that enables it), and wait for it."""
        loop = getattr(embedded[0], "_loop", None) if embedded else None
        if loop is None:
            return
        done = asyncio.get_running_loop().create_future()
        front = asyncio.get_running_loop()

        def run() -> None:
            call()
            front.call_soon_threadsafe(done.set_result, None)

        loop.call_soon_threadsafe(run)
        await done

    out = os.environ.get("BENCH_PROFILE_OUT", "bot.prof")
    sql: Counter[str] = Counter()
    slack: Counter[str] = Counter()
    _count_callers(sql)

    @event.listens_for(Engine, "before_cursor_execute")
    def count_sql(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        words = statement.split()
        verb = words[0].upper() if words else "?"
        table, depth = "?", 0  # the statement's own table: FROM/INTO/UPDATE outside (...)
        for i, word in enumerate(words[:-1]):
            if depth == 0 and word.upper() in ("FROM", "INTO", "UPDATE"):
                table = words[i + 1].strip('"(')
                break
            depth += word.count("(") - word.count(")")
        sql[f"{verb} {table}"] += 1

    @event.listens_for(Pool, "checkout")
    def count_checkout(*_: Any) -> None:
        sql[CHECKOUTS] += 1

    api_call = AsyncWebClient.api_call

    async def counted_call(self: AsyncWebClient, api_method: str, **kwargs: Any) -> Any:
        slack[api_method] += 1
        return await api_call(self, api_method, **kwargs)

    AsyncWebClient.api_call = counted_call  # type: ignore[method-assign]
    web_app = Bot.web_app

    def bench_web_app(self: Bot, **kwargs: Any) -> web.Application:
        app = web_app(self, **kwargs)

        async def profile(request: web.Request) -> web.Response:
            if request.query.get("on") == "1":
                profiler.enable()
                await on_worker_thread(worker_profiler.enable)
            else:
                profiler.disable()
                await on_worker_thread(worker_profiler.disable)
                stats = pstats.Stats(profiler)
                if embedded:
                    stats.add(worker_profiler)
                stats.dump_stats(out)
                profiler.clear()
                worker_profiler.clear()
            return web.json_response({"ok": True})

        async def counters(request: web.Request) -> web.Response:
            return web.json_response({"sql": dict(sql), "slack": dict(slack)})

        app.router.add_post("/bench/profile", profile)
        app.router.add_get("/bench/counters", counters)
        return app

    Bot.web_app = bench_web_app  # type: ignore[method-assign]
    event_loop.run(bot_server.main(bot_server.parser().parse_args(argv)), loop_choice())


# -- Slack's side ----------------------------------------------------------------------------
async def settle(bot: Any) -> None:
    """Wait until the bot has nothing left to do for the decisions sent so far."""
    await bot.idle()
    await asyncio.sleep(SIZES["home_window"])  # the trailing App Home refresh (its CPU is counted)
    await bot.idle()


async def prepare(bot: Any, count: int) -> list[Any]:
    before = {c.request_id for c in await bot.cards()}
    for batch in range(0, count, 100):
        await bot.start_runs(min(100, count - batch), 10, 120.0)
    cards = [c for c in await bot.cards() if c.request_id not in before][:count]
    await settle(bot)
    return cards


async def counters(bot: Any) -> dict[str, dict[str, int]]:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.get(f"{bot.url}/bench/counters") as resp:
            return dict(await resp.json())


def _per_decision(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], decisions: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("sql", "slack"):
        diff = {k: v - before[kind].get(k, 0) for k, v in after[kind].items()}
        if kind == "sql":
            out["transactions_per_decision"] = round(diff.pop(CHECKOUTS, 0) / decisions, 2)
        per = {
            k: round(v / decisions, 2) for k, v in sorted(diff.items(), key=lambda i: -i[1]) if v
        }
        out[f"{kind}_per_decision"] = round(sum(diff.values()) / decisions, 2)
        out[f"{kind}_by_kind"] = per
    return out


async def sequential(bot: Any, cards: list[Any]) -> dict[str, Any]:
    from common import cpu_seconds

    done = await bot.count_runs("completed")
    counted = await counters(bot)
    wall0, cpu0 = time.monotonic(), cpu_seconds(bot.proc.pid)
    for i, card in enumerate(cards, start=1):
        await bot.approve([card], 1, 60.0)

        async def completed(target: int = done + i) -> bool:
            return bool(await bot.count_runs("completed") >= target)

        await bot.wait("run completed", completed, 30.0)
    await settle(bot)
    cost = _cost("sequential", bot, cards, wall0, cpu0)
    return {**cost, **_per_decision(counted, await counters(bot), len(cards))}


async def concurrent(bot: Any, cards: list[Any], concurrency: int) -> dict[str, Any]:
    from common import cpu_seconds

    done = await bot.count_runs("completed")
    counted = await counters(bot)
    wall0, cpu0 = time.monotonic(), cpu_seconds(bot.proc.pid)
    await bot.approve(cards, concurrency, 120.0)

    async def completed() -> bool:
        return bool(await bot.count_runs("completed") >= done + len(cards))

    await bot.wait("every run completed", completed, 300.0)
    await settle(bot)
    cost = _cost(f"concurrent ({concurrency})", bot, cards, wall0, cpu0)
    return {**cost, **_per_decision(counted, await counters(bot), len(cards))}


def _cost(phase: str, bot: Any, cards: list[Any], wall0: float, cpu0: float) -> dict[str, Any]:
    from common import cpu_seconds

    cpu = cpu_seconds(bot.proc.pid) - cpu0
    wall = time.monotonic() - wall0
    out = {
        "phase": phase,
        "decisions": len(cards),
        "wall_s": round(wall, 2),
        "bot_cpu_s": round(cpu, 2),
        "bot_cpu_ms_per_decision": round(cpu / len(cards) * 1000, 1),
    }
    print(out, flush=True)
    return out


async def idle_cpu(bot: Any, seconds: float) -> float:
    """The idle bot's CPU per second (sweeper, pool pings, health polls of this script)."""
    from common import cpu_seconds

    await settle(bot)
    before = await counters(bot)
    cpu0 = cpu_seconds(bot.proc.pid)
    await asyncio.sleep(seconds)
    cpu = (cpu_seconds(bot.proc.pid) - cpu0) / seconds
    after = await counters(bot)
    sql = {k: round((v - before["sql"].get(k, 0)) / seconds, 2) for k, v in after["sql"].items()}
    print("idle SQL per second:", {k: v for k, v in sorted(sql.items(), key=lambda i: -i[1]) if v})
    return cpu


async def profiled(
    bot: Any, cards: list[Any], concurrency: int, out: Path, top: int
) -> dict[str, Any]:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        await session.post(f"{bot.url}/bench/profile", params={"on": "1"})
        result = await concurrent(bot, cards, concurrency)
        await session.post(f"{bot.url}/bench/profile", params={"on": "0"})
    stats = pstats.Stats(str(out))
    total = stats.total_tt  # type: ignore[attr-defined]
    decisions = len(cards)
    rows = []
    packages: dict[str, float] = {}
    for func, (_cc, nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        filename, line, name = func
        where = _short(filename)
        rows.append((tt, nc, f"{where}:{line}({name})"))
        package = _package(where, name)
        packages[package] = packages.get(package, 0.0) + tt
    rows.sort(reverse=True)
    by_package = [
        {
            "package": package,
            "own_ms_per_decision": round(tt / decisions * 1000, 2),
            "own_share": round(tt / total, 3) if total else 0.0,
        }
        for package, tt in sorted(packages.items(), key=lambda i: -i[1])
    ][:top]
    table_own = [
        {
            "function": where,
            "own_ms_per_decision": round(tt / decisions * 1000, 2),
            "own_share": round(tt / total, 3) if total else 0.0,
            "calls_per_decision": round(nc / decisions, 1),
        }
        for tt, nc, where in rows[:top]
    ]
    return {
        "profiled_run": result,
        "profile_total_s": round(total, 2),
        "by_package": by_package,
        "top_own": table_own,
    }


def _package(where: str, name: str) -> str:
    """Who a function's own time belongs to: `bot.service`, `sqlalchemy`, `asyncio`, ..."""
    if where == "~":  # C functions
        return "C builtins: " + name.split("'")[1] if "'" in name else "C builtins"
    parts = where.split("/")
    if parts[0] in ("bot", "store", "bench"):
        return ".".join(p.removesuffix(".py") for p in parts[:2])
    return parts[0].removesuffix(".py")


def _short(filename: str) -> str:
    for marker in ("/site-packages/", "/lib/python3.11/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    root = str(HERE.parent) + "/"
    return filename.removeprefix(root)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    apply_smoke(args)
    from load import Proc, SideEffects
    from scenarios import BotUnderTest

    from bot.serve import free_port

    workdir = Path(tempfile.mkdtemp(prefix="sayso-decision-cpu-"))
    model_port, slack_port, udp_port, bot_port = (free_port() for _ in range(4))
    env = {"PYTHONUNBUFFERED": "1"}
    model = Proc(
        "fake_model",
        [
            *("-m", "bot.testing.fake_model", "--port", str(model_port)),
            *("--script", "tool-then-text", "--tool", "deploy"),
        ],
        workdir,
        env,
    )
    slack = Proc(
        "fake_slack", [str(HERE / "fake_slack.py"), "--port", str(slack_port)], workdir, env
    )
    effects = await SideEffects.listen(udp_port)
    await asyncio.gather(model.start(), slack.start())
    database = f"sayso_cpu_{os.getpid()}"
    if args.sqlite:
        database_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
    else:
        await _pg(f'CREATE DATABASE "{database}"')
        database_url = PG_URL.format(db=database)
    prof = Path(os.environ.get("BENCH_KEEP_PROFILE", str(workdir / "bot.prof")))
    bot_args = [str(HERE / "decision_cpu.py"), "--serve", "--port", str(bot_port)]
    bot_args += [
        "--database-url",
        database_url,
        "--slack-api-url",
        f"http://127.0.0.1:{slack_port}/api/",
    ]
    bot_args += ["--model-url", f"http://127.0.0.1:{model_port}/v1", "--udp-port", str(udp_port)]
    bot_args += ["--role", args.role]
    proc = Proc("bot", bot_args, workdir, {**env, "BENCH_PROFILE_OUT": str(prof)})
    url = f"http://127.0.0.1:{bot_port}"
    result: dict[str, Any] = {
        "database": "sqlite" if args.sqlite else "postgresql",
        "role": args.role,
        "mode": "smoke" if args.smoke else "full",
        "loadavg_at_start": os.getloadavg()[0],
        "commit": _commit(),
    }
    try:
        async with BotUnderTest(
            proc, url, database_url, effects, f"http://127.0.0.1:{slack_port}"
        ) as bot:
            # warm up: imports, first auth.test, pools, statement caches
            await concurrent(bot, await prepare(bot, SIZES["warm"]), 5)
            idle = await idle_cpu(bot, SIZES["idle_s"])
            result["idle_cpu_ms_per_s"] = round(idle * 1000, 2)
            cards = await prepare(bot, args.decisions + 2 * args.concurrent)
            seq, conc, prof_cards = (
                cards[: args.decisions],
                cards[args.decisions : args.decisions + args.concurrent],
                cards[args.decisions + args.concurrent :],
            )
            result["sequential"] = await sequential(bot, seq)
            result["concurrent"] = await concurrent(bot, conc, args.concurrency)
            if not args.no_profile:
                result["profile"] = await profiled(
                    bot, prof_cards, args.concurrency, prof, args.top
                )
    finally:
        await asyncio.gather(model.stop(), slack.stop())
        effects.close()
        if not args.sqlite:
            await _pg(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    result["loadavg_at_end"] = os.getloadavg()[0]
    result["workdir"] = str(workdir)
    if args.smoke and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


async def _pg(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _commit() -> str:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def report(r: dict[str, Any]) -> str:
    lines = [
        f"decision CPU ({r['database']}, commit {r['commit']}, load average "
        f"{r['loadavg_at_start']:.2f} → {r['loadavg_at_end']:.2f}); idle bot: "
        f"{r['idle_cpu_ms_per_s']} ms CPU per s",
        "",
        "| phase | decisions | wall s | bot CPU s | bot CPU ms/decision | SQL/decision "
        "| Slack/decision |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key in ("sequential", "concurrent"):
        p = r[key]
        lines.append(
            f"| {p['phase']} | {p['decisions']} | {p['wall_s']} | {p['bot_cpu_s']} | "
            f"{p['bot_cpu_ms_per_decision']} | {p['sql_per_decision']} | "
            f"{p['slack_per_decision']} |"
        )
    for key in ("sequential", "concurrent"):
        p = r[key]
        lines += ["", f"{p['phase']}: SQL statements per decision: {p['sql_by_kind']}"]
        lines += [f"{p['phase']}: transactions per decision: {p['transactions_per_decision']}"]
        lines += [f"{p['phase']}: Slack calls per decision: {p['slack_by_kind']}"]
    if "profile" in r:
        lines += [
            "",
            f"cProfile, concurrent phase (profiled CPU total {r['profile']['profile_total_s']} s, "
            "inflated by the profiler), own CPU time by package:",
            "",
            "| package | own ms/decision | share |",
            "| --- | --- | --- |",
        ]
        for row in r["profile"]["by_package"]:
            lines.append(
                f"| `{row['package']}` | {row['own_ms_per_decision']} | {row['own_share']:.0%} |"
            )
        lines += [
            "",
            "top own time:",
            "",
            "| function | own ms/decision | share | calls/decision |",
            "| --- | --- | --- | --- |",
        ]
        for row in r["profile"]["top_own"]:
            lines.append(
                f"| `{row['function']}` | {row['own_ms_per_decision']} | {row['own_share']:.0%} "
                f"| {row['calls_per_decision']} |"
            )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2:])
        return
    args = parser().parse_args()
    result = asyncio.run(run(args))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--decisions", type=int, default=100, help="sequential decisions")
    p.add_argument("--concurrent", type=int, default=200, help="concurrent decisions")
    p.add_argument("--concurrency", type=int, default=50)
    p.add_argument("--sqlite", action="store_true", help="a SQLite file, not PostgreSQL")
    p.add_argument(
        "--role",
        choices=ROLES,
        default="both",
        help="the bot process: both (default) is `sayso run`, the front plus its embedded "
        "worker thread, as bench/run.py; inprocess is build_bot alone, one event loop",
    )
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--top", type=int, default=30, help="rows of the profile")
    p.add_argument("--out", "--json", dest="out", help="also write the results here (JSON)")
    p.add_argument("--keep", action="store_true", help="with --smoke: keep the work directory")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="a check that it runs: SQLite, 3 + 5 decisions, short waits (under 30 s)",
    )
    return p


def apply_smoke(args: argparse.Namespace) -> None:
    """--smoke: SQLite, tiny counts and short waits; the numbers mean nothing."""
    if args.smoke:
        args.sqlite, args.decisions, args.concurrent, args.concurrency = True, 3, 5, 5
        args.top = min(args.top, 10)
        SIZES.update(SMOKE)


if __name__ == "__main__":
    main()

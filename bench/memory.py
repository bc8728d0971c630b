"""Memory per paused run, and where it goes: `python bench/memory.py [--paused 2000,10000]`.

The same exercise as `bench/run.py`'s memory row (the bot as `sayso run` on a SQLite file; 10
runs started and approved, twice, to warm it; N paused runs cloned into the database; the
exercise again), read three ways in the bot process after `gc.collect()`:

- `rss`: VmRSS, what `bench/run.py` reports;
- `sqlite`: `sqlite3_memory_used()`, memory held by SQLite's own allocator (page caches of the
  pooled connections, schemas, prepared statements), which `tracemalloc` does not see;
- `python`: with `--tracemalloc`, a second bot on a fresh database traces Python allocations
  from the warm-up on (25 frames), and the top growth by traceback is listed. Tracing costs
  memory itself, so the RSS numbers are from the first, untraced bot.

`--smoke`: only the traced bot, 200 paused runs and 2 runs of exercise (a check that it runs;
the numbers mean nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # this tree's bot/ and store/

import aiohttp  # noqa: E402
from data import clone_paused_runs  # noqa: E402
from scenarios import BotUnderTest, exercise  # noqa: E402


async def _reading(bot: BotUnderTest, trim: bool = False) -> dict[str, Any]:
    params = {"detail": "1", "trim": "1" if trim else "0"}
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{bot.url}/bench/rss", params=params) as resp:
            return dict(await resp.json())


async def _post(bot: BotUnderTest, path: str) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{bot.url}{path}") as resp:
            assert resp.status == 200, await resp.text()


async def _traced(bot: BotUnderTest, top: int) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{bot.url}/bench/tracemalloc", params={"top": str(top)}) as r:
            return dict(await r.json())


async def _sql_rows(bot: BotUnderTest, reset: bool = False) -> list[dict[str, Any]]:
    """The bot's SQL statements that fetched the most rows at once (since the last reset)."""
    params = {"top": "6", "reset": "1" if reset else "0"}
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{bot.url}/bench/sql-rows", params=params) as resp:
            return list(await resp.json())


def _mb(kb: int | None) -> float | None:
    return None if kb is None else round(kb / 1024, 2)


async def one(
    bench: Any,
    name: str,
    paused: int,
    warm: int,
    trace: bool,
    top: int,
    bot_args: tuple[str, ...] = (),
    frames: int = 25,
) -> dict[str, Any]:
    """One bot on a fresh SQLite file: readings before and after `paused` cloned runs."""
    url = f"sqlite+aiosqlite:///{bench.workdir / f'{name}.db'}"
    async with bench.bot(name, url, extra_args=("--count-rows", *bot_args)) as bot:
        await bot.start_runs(1, 1, 60.0)  # the template: it stays paused
        template = (await bot.cards())[0]
        await exercise(bot, warm, 60.0)
        await exercise(bot, warm, 60.0)
        if trace:
            await _post(bot, f"/bench/tracemalloc?frames={frames}")
        before = await _reading(bot)
        await _sql_rows(bot, reset=True)
        started = time.perf_counter()
        await clone_paused_runs(bot.database_url, template.run_id, paused)
        inserted = time.perf_counter() - started
        await exercise(bot, warm, 60.0)
        after = await _reading(bot, trim=True)
        biggest = await _sql_rows(bot)
        trimmed = after.pop("after_trim")
        out: dict[str, Any] = {
            "paused_runs": paused,
            "bulk_insert_s": round(inserted, 2),
            "rss_growth_mb": _mb(after["rss_kb"] - before["rss_kb"]),
            "rss_before_mb": _mb(before["rss_kb"]),
            "rss_after_mb": _mb(after["rss_kb"]),
            "rss_growth_after_malloc_trim_mb": _mb(trimmed["VmRSS"] - before["rss_kb"]),
            "before": before,
            "after": after,
            "after_malloc_trim": trimmed,
            "largest_results": biggest,
        }
        out["threads"] = [before.get("Threads"), after.get("Threads")]
        out["sqlite_peak_mb"] = _mb(after.get("sqlite_peak_kb"))
        for key, part in (("RssAnon", "anon"), ("RssFile", "file"), ("sqlite_kb", "sqlite")):
            if before.get(key) is not None and after.get(key) is not None:
                out[f"{part}_growth_mb"] = _mb(after[key] - before[key])
        if trace:
            traced = await _traced(bot, top)
            out["python_growth_mb"] = round(traced["total_diff_kb"] / 1024, 2)
            out["python_peak_above_baseline_mb"] = _mb(
                traced["traced_peak_kb"] - traced["traced_kb"] + int(traced["total_diff_kb"])
            )
            out["python_top"] = traced["top"]
        brief = {k: v for k, v in out.items() if not isinstance(v, dict | list)}
        print(f"memory {name}: {brief}", flush=True)
        return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from run import Bench, machine

    counts = [int(n) for n in str(args.paused).split(",")]
    bot_args = tuple(args.bot_args.split()) if args.bot_args else ()
    warm = 1 if args.smoke else args.warm
    if args.smoke:
        counts = [200]
    workdir = Path(tempfile.mkdtemp(prefix="sayso-bench-memory-"))
    result: dict[str, Any] = {
        "mode": "smoke" if args.smoke else "full",
        "machine": machine(),
        "bot_args": list(bot_args),
    }
    bench = Bench(workdir, {})
    await bench.start(floor=False)
    try:
        result["untraced"] = [
            await one(bench, f"bot_memory_{n}", n, warm, False, args.top, bot_args)
            for n in ([] if args.smoke else counts)
        ]
        if args.tracemalloc or args.smoke:  # smoke: only the traced bot (one process fewer)
            n = counts[0]
            frames = 3 if args.smoke else 25  # tracing 25 frames deep is slow
            result["traced"] = await one(
                bench, f"bot_traced_{n}", n, warm, True, args.top, bot_args, frames
            )
    finally:
        await bench.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    result["machine"]["loadavg_at_end"] = list(__import__("os").getloadavg())
    return result


def report(r: dict[str, Any]) -> str:
    lines = [
        "| paused runs | RSS growth MB | of which anonymous | file-backed | SQLite allocator "
        "| RSS growth after malloc_trim MB | RSS before → after MB |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in r["untraced"]:
        lines.append(
            f"| {row['paused_runs']} | {row['rss_growth_mb']} | {row.get('anon_growth_mb')} "
            f"| {row.get('file_growth_mb')} | {row.get('sqlite_growth_mb')} "
            f"| {row['rss_growth_after_malloc_trim_mb']} "
            f"| {row['rss_before_mb']} → {row['rss_after_mb']} |"
        )
    traced = r.get("traced")
    if traced:
        lines += [
            "",
            f"traced bot, {traced['paused_runs']} paused runs: Python allocations grew "
            f"{traced['python_growth_mb']} MB (RSS {traced['rss_growth_mb']} MB, SQLite "
            f"{traced.get('sqlite_growth_mb')} MB); top growth by traceback:",
            "",
        ]
        for row in traced["python_top"][:15]:
            lines.append(f"- {row['size_diff_kb']} KiB, {row['count_diff']} blocks: ")
            lines += [f"    {frame}" for frame in row["where"][-4:]]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--paused", default="2000", help="paused runs, comma-separated counts")
    p.add_argument("--warm", type=int, default=10, help="runs per exercise")
    p.add_argument("--tracemalloc", action="store_true", help="also a traced bot (first count)")
    p.add_argument("--top", type=int, default=25)
    p.add_argument(
        "--bot-args", help='more flags for bench/bot_server.py, e.g. "--sqlite-cache-kib 512"'
    )
    p.add_argument("--smoke", action="store_true", help="tiny counts: a check that it runs")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--out", help="write the results as JSON here")
    return p


def main() -> None:
    args = parser().parse_args()
    result = asyncio.run(run(args))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))


if __name__ == "__main__":
    main()

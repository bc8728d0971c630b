"""`sayso audit export` of 100,000 events: in order, and in a fixed amount of memory (the peak
of what the exporting process allocates grows by less than a bound from 1,000 events to
100,000, and stays under an absolute bound)."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from store import Store
from store.schema import audit_events
from tests.ops.helpers import ROOT, cli_env

N = 100_000
BASE = datetime(2026, 3, 1, tzinfo=UTC)
BOUND_MB = 16

_PROBE = """
import resource, sys, tracemalloc
import aiosqlite, asyncpg, sqlalchemy.dialects.sqlite.aiosqlite, sqlalchemy.dialects.postgresql
import bot.ops.audit_cli
from bot.cli import main
tracemalloc.start()
try:
    main(sys.argv[1:])
finally:
    peak = tracemalloc.get_traced_memory()[1]
    print("peak_kb=%d" % (peak // 1024), file=sys.stderr)
"""


async def _fill(store: Store) -> None:
    rows = [
        {
            "at": BASE + timedelta(seconds=i),
            "actor": f"U{i % 50}",
            "action": "decide",
            "run_id": f"run-{i // 3}",
            "request_id": f"req-{i}",
            "tool_name": "deploy",
            "outcome": "won",
            "detail": "wanted=approved reason=" + "x" * 80,
            "agent_id": "ops",
            "prev_hash": "0" * 64,
            "hash": f"{i:064x}",
        }
        for i in range(N)
    ]
    async with store.db.write() as conn:
        for i in range(0, N, 10_000):
            await conn.execute(audit_events.insert(), rows[i : i + 10_000])


async def _export(db_url: str, out: Path, *args: str) -> int:
    """Export to `out`; returns the peak of memory allocated while exporting (tracemalloc,
    after the imports), in kB."""
    with out.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _PROBE,
            "audit",
            "export",
            "--since",
            "2026-01-01",
            *args,
            env=cli_env(db_url),
            cwd=str(ROOT),
            stdout=sink,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    line = next(x for x in err.decode().splitlines() if x.startswith("peak_kb="))
    return int(line.split("=")[1])


async def test_export_of_100k_events_is_ordered_and_memory_flat(tmp_path: Path) -> None:
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'audit.db'}"
    store = Store(db_url)
    try:
        await store.upgrade()
        await _fill(store)
    finally:
        await store.close()
    small = await _export(db_url, tmp_path / "small.jsonl", "--until", "2026-03-01T00:16:40")
    big = await _export(db_url, tmp_path / "big.jsonl")
    assert sum(1 for _ in (tmp_path / "small.jsonl").open()) == 1000
    last = 0
    count = 0
    with (tmp_path / "big.jsonl").open() as f:
        for line in f:
            event_id = json.loads(line)["id"]
            assert event_id > last
            last = event_id
            count += 1
    assert count == N
    grew_mb = (big - small) / 1024
    print(f"peak memory: 1,000 events {small / 1024:.1f} MB, {N:,} events {big / 1024:.1f} MB")
    assert grew_mb < 2, f"export memory grew by {grew_mb:.1f} MB from 1k to 100k events"
    assert big / 1024 < BOUND_MB

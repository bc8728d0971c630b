"""Every benchmark script still runs: each in its smoke mode (tiny counts, SQLite, no
PostgreSQL), as a subprocess, as a person would run it. Asserts only that it completes and
writes its JSON with the expected keys: never a speed (docs/benchmarks.md has the numbers).

`bench/run.py --all --smoke` runs every scenario: the main tables and issue 13's in its own
process, and `bench/decision_cpu.py --smoke`, `bench/api.py --smoke`, `bench/memory.py
--smoke` and `bench/outbox.py --smoke` as subprocesses, with the command lines
docs/benchmarks.md gives (their JSON is merged into run.py's). The servers these start
(`bench/bot_server.py`, `bench/fake_slack.py`, `bench/floor_app.py`, the fake model) run in
all of them. One test, because each script costs seconds of process start-ups on 2 cores:
together 1.5-2.5 minutes on a busy machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.bench_smoke, pytest.mark.slow]  # slow: `-m "not slow"` skips them

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 420  # seconds; about 100 s on a busy 2-core machine


def run_script(tmp_path: Path, script: str, *args: str) -> dict[str, Any]:
    out = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SAYSO_TEST_POSTGRES_URL", None)
    command = [sys.executable, str(ROOT / "bench" / script), *args, "--out", str(out)]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode}\n"
        f"stdout (end):\n{done.stdout[-3000:]}\nstderr (end):\n{done.stderr[-5000:]}"
    )
    assert out.exists(), f"{script} wrote no {out}"
    return dict(json.loads(out.read_text()))


def has(result: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if k not in result]
    assert not missing, f"missing {missing} in {sorted(result)}"


def test_every_bench_script_runs(tmp_path: Path) -> None:
    r = run_script(tmp_path, "run.py", "--all", "--smoke")
    has(r, "command", "mode", "commit", "machine", "duration_s", "scenarios")
    assert r["mode"] == "smoke"
    has(r["machine"], "nproc", "cpu", "python", "sqlite", "postgresql")
    has(r["machine"], "loadavg_at_start", "loadavg_at_end")
    s = r["scenarios"]
    assert not r.get("failed"), {name: s[name] for name in r["failed"]}
    has(s, "main", "issue13", "decision_cpu", "api", "memory", "outbox")
    has(s["main"], "ack", "decisions_sqlite", "memory", "inbox")
    has(s["main"]["decisions_sqlite"], "decisions_per_s", "bot_cpu_ms_per_decision")
    has(s["main"]["memory"], "growth_mb", "paused_runs")
    assert s["main"]["inbox"], "no inbox row"
    names = set(s["issue13"])
    for prefix in ("model latency", "backlog", "decisions", "isolated click"):
        assert any(n.startswith(prefix) for n in names), f"no '{prefix}' row in {names}"
    cpu = s["decision_cpu"]["sqlite"]  # bench/decision_cpu.py --smoke
    has(cpu, "database", "role", "idle_cpu_ms_per_s", "sequential", "concurrent", "profile")
    has(cpu["concurrent"], "bot_cpu_ms_per_decision", "sql_per_decision", "slack_per_decision")
    assert cpu["profile"]["by_package"], "an empty profile"
    api = s["api"]["sqlite"]  # bench/api.py --smoke
    has(api, "create_ms", "decision_to_waiter_ms", "decision_to_webhook_ms", "tasks_per_s")
    has(api, "memory_per_pending_request_kb", "targets")
    assert api["failures"] == 0, api["failure_examples"]
    memory = s["memory"]  # bench/memory.py --smoke
    has(memory, "machine", "untraced", "traced")
    has(memory["traced"], "rss_growth_mb", "sqlite_growth_mb", "python_growth_mb", "python_top")
    outbox = s["outbox"]  # bench/outbox.py --smoke
    has(outbox, "burst_calls_per_decision", "burst_429s_per_100_decisions", "duplicates")
    has(outbox, "outage_converged_seconds_after")

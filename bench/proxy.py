"""Issue 24: what sayso's gateway and hook cost on calls they let through.

    python bench/proxy.py               # 500 calls each way, 40 hook runs
    python bench/proxy.py --calls 200   # shorter

- proxy overhead: the `mcp` SDK's client calling `get_current_time` of the reference
  `mcp-server-time` over stdio, directly and through `sayso proxy -- python -m mcp_server_time`
  (read-only: it passes without sayso); p50 and p99 of each, and of the difference;
- hook latency: `sayso hook claude-code` for an ungated call (`Read` allowed by the policy),
  from process start to its JSON on stdout, beside a bare `python -c pass` started the same way
  (the interpreter's own start, the floor of any Python hook); the first run parses the YAML,
  the others read the cached policy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = [sys.executable, "-m", "mcp_server_time"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


async def timed_calls(params: StdioServerParameters, calls: int) -> list[float]:
    """Latency of each call, in ms, after 20 warm-up calls."""
    out: list[float] = []
    with Path(os.devnull).open("w") as errlog:  # noqa: ASYNC230 - /dev/null, at once
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            for i in range(calls + 20):
                started = time.perf_counter()
                result = await session.call_tool("get_current_time", {"timezone": "Etc/UTC"})
                elapsed = (time.perf_counter() - started) * 1000
                assert not result.is_error
                if i >= 20:
                    out.append(elapsed)
    return out


def env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SAYSO_URL": "http://127.0.0.1:9",  # never asked: every call here passes
        "SAYSO_KEY": "sk_sayso_bench",
        "SAYSO_POLICY": str(tmp / "policy.yaml"),
        "XDG_STATE_HOME": str(tmp / "state"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "SAYSO_LOG_LEVEL": "WARNING",
    }


def summary(name: str, values: list[float]) -> dict[str, Any]:
    return {
        "what": name,
        "n": len(values),
        "p50_ms": round(percentile(values, 50), 3),
        "p99_ms": round(percentile(values, 99), 3),
    }


async def proxy_overhead(tmp: Path, calls: int) -> list[dict[str, Any]]:
    environment = env(tmp)
    direct = StdioServerParameters(command=UPSTREAM[0], args=UPSTREAM[1:], env=environment)
    proxied = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bot.cli", "proxy", "--name", "time", "--", *UPSTREAM],
        env=environment,
        cwd=tmp,
    )
    rounds: dict[str, list[float]] = {"direct": [], "proxied": []}
    for _ in range(2):  # interleaved, so the shared machine's load falls on both alike
        rounds["direct"] += await timed_calls(direct, calls // 2)
        rounds["proxied"] += await timed_calls(proxied, calls // 2)
    d, p = rounds["direct"], rounds["proxied"]
    overhead = {
        "what": "proxy overhead (proxied - direct)",
        "p50_ms": round(percentile(p, 50) - percentile(d, 50), 3),
        "p99_ms": round(percentile(p, 99) - percentile(d, 99), 3),
    }
    return [summary("direct to mcp-server-time", d), summary("through sayso proxy", p), overhead]


def run_once(command: list[str], payload: bytes, environment: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, input=payload, capture_output=True, env=environment)
    elapsed = (time.perf_counter() - started) * 1000
    assert done.returncode == 0, done.stderr
    return elapsed


def hook_latency(tmp: Path, runs: int) -> list[dict[str, Any]]:
    environment = env(tmp)
    payload = json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "README.md"},
            "tool_use_id": "toolu_bench",
            "session_id": "bench",
            "cwd": str(tmp),
            "transcript_path": str(tmp / "t.jsonl"),
        }
    ).encode()
    hook = [sys.executable, "-m", "bot.cli", "hook", "claude-code"]
    first = run_once(hook, payload, environment)  # parses the YAML, writes the cache
    answer = subprocess.run(hook, input=payload, capture_output=True, env=environment)
    assert b'"allow"' in answer.stdout, answer.stdout
    timings: dict[str, list[float]] = {"hook": [], "bare": []}
    for _ in range(runs):
        timings["hook"].append(run_once(hook, payload, environment))
        timings["bare"].append(run_once([sys.executable, "-c", "pass"], b"", environment))
    h, b = timings["hook"], timings["bare"]
    return [
        {"what": "hook, first run (YAML parsed)", "ms": round(first, 1)},
        summary("hook, ungated call (cached policy)", h),
        summary("bare python -c pass", b),
        {
            "what": "hook's own work (hook - bare)",
            "p50_ms": round(percentile(h, 50) - percentile(b, 50), 3),
        },
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--hook-runs", type=int, default=40)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        (tmp / "policy.yaml").write_text(
            "proxy:\n  claude-code:\n    tools:\n      Read: {action: allow}\n"
            "      Bash: {approvers: [S0SRE]}\n"
        )
        rows = asyncio.run(proxy_overhead(tmp, args.calls))
        rows += hook_latency(tmp, args.hook_runs)
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()

"""Load generation (closed-loop aiohttp workers), the side-effect receiver, and subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from common import percentile, signed_headers

REQUEST_TIMEOUT = 30.0
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class LoadResult:
    """Ack latencies (seconds) of one closed-loop run, and when each request was sent."""

    latencies: list[float] = field(default_factory=list)
    sent_at: dict[int, float] = field(default_factory=dict)  # index -> time.time() at send
    errors: int = 0
    answered: int = 0  # 200 answers, warm-up included
    elapsed: float = 0.0

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0

    def summary(self) -> dict[str, Any]:
        ms = [v * 1000 for v in self.latencies]
        return {
            "requests": len(ms),
            "errors": self.errors,
            "p50_ms": round(percentile(ms, 50), 2),
            "p99_ms": round(percentile(ms, 99), 2),
            "max_ms": round(max(ms), 2) if ms else None,
            "over_3s": sum(1 for v in ms if v > 3000),
            "rps": round(self.rps, 1),
        }


async def drive(
    url: str,
    body_for: Callable[[int], str],
    count: int,
    concurrency: int,
    time_limit: float,
    warmup: int = 0,
) -> LoadResult:
    """Send `count` signed requests from `concurrency` workers, each waiting for its answer.

    The first `warmup` answers open the connections and are not counted in latencies."""
    result = LoadResult()
    next_index = 0
    counted_from: float | None = None
    deadline = time.monotonic() + time_limit
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal next_index, counted_from
        while next_index < count and time.monotonic() < deadline:
            i = next_index
            next_index += 1
            if i == warmup and warmup:
                counted_from = time.perf_counter()
            body = body_for(i)
            headers = signed_headers(body)
            result.sent_at[i] = time.time()
            started = time.perf_counter()
            try:
                async with session.post(url, data=body.encode(), headers=headers) as resp:
                    await resp.read()
                    ok = resp.status == 200
            except (aiohttp.ClientError, TimeoutError):
                ok = False
            elapsed = time.perf_counter() - started
            if not ok:
                result.errors += 1
                continue
            result.answered += 1
            if i >= warmup:
                result.latencies.append(elapsed)

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        result.elapsed = time.perf_counter() - started
        if counted_from is not None:  # requests per second over the counted requests only
            result.elapsed = time.perf_counter() - counted_from
    return result


class SideEffects(asyncio.DatagramProtocol):
    """Collects the benchmark tool's UDP packets: idempotency key -> time the body started."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.transport: asyncio.DatagramTransport | None = None

    def datagram_received(self, data: bytes, addr: Any) -> None:
        try:
            packet = json.loads(data)
            self.started.setdefault(packet["key"], float(packet["t"]))
        except (ValueError, KeyError):
            pass

    @classmethod
    async def listen(cls, port: int) -> SideEffects:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_datagram_endpoint(cls, local_addr=("127.0.0.1", port))
        return protocol

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]


class Proc:
    """A subprocess that prints a line containing `listening` once it serves."""

    def __init__(self, name: str, args: list[str], log_dir: Path, env: dict[str, str]) -> None:
        self.name = name
        self.args = args
        self.log_path = log_dir / f"{name}.log"
        self.env = env
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, within: float = 30.0) -> None:
        log = self.log_path.open("ab")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *self.args,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            env={**os.environ, "PYTHONPATH": str(ROOT), **self.env},
            cwd=ROOT,
        )
        log.close()
        assert self.proc.stdout is not None
        try:
            async with asyncio.timeout(within):
                while True:
                    line = await self.proc.stdout.readline()
                    if not line:
                        raise RuntimeError(f"{self.name} exited; see {self.log_path}")
                    if b"listening" in line:
                        return
        except TimeoutError:
            await self.stop()
            problem = f"{self.name} did not start in {within}s; see {self.log_path}"
            raise RuntimeError(problem) from None

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()

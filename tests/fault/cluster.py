"""Replicas of the real bot as subprocesses (`python -m tests.fault.replica`) on one database.

With `SAYSO_TEST_SPLIT=1` (or `Cluster(split=True)`) each replica is two processes, as a
deployment of `sayso run --no-worker` beside `sayso worker` on one machine: a front that
acknowledges Slack and hands every run off, and a worker that claims and drives the runs.
The pair is one process group, so killing the replica (or its fault injection) kills both.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bot.sandbox import SlackSandbox
from bot.serve import free_port
from bot.testing import FakeModelServer
from tests.fault.slack import SECRET, TOKEN
from tests.helpers.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
SPLIT = os.environ.get("SAYSO_TEST_SPLIT") == "1"


@dataclass
class Replica:
    """One replica: a single process, or (split) a front `proc` with its `worker` process."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    worker: subprocess.Popen[bytes] | None = None
    worker_log_path: Path | None = None

    @property
    def driver(self) -> subprocess.Popen[bytes]:
        """The process that drives this replica's runs (where its tool bodies run)."""
        return self.worker or self.proc

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL the whole process group (front and worker): no lease release, no goodbye."""
        if self.proc.poll() is None or (self.worker is not None and self.worker.poll() is None):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)
        if self.worker is not None:
            self.worker.wait(timeout=10)

    def log(self) -> str:
        """The replica's log; a split replica's front log, then its worker's."""
        return _read(self.log_path) + (
            _read(self.worker_log_path) if self.worker_log_path is not None else ""
        )


@dataclass
class Cluster:
    """Replicas of the real bot, each a `python -m tests.fault.replica` subprocess."""

    tmp_path: Path
    db_url: str
    sandbox: SlackSandbox
    model: FakeModelServer
    replicas: list[Replica] = field(default_factory=list)
    split: bool = SPLIT
    """Each replica (role "replica") is a front process plus a worker process."""

    @property
    def effects(self) -> Path:
        return self.tmp_path / "effects.jsonl"

    async def start(
        self,
        name: str,
        *,
        hang: float = 0.0,
        die_after_decision: bool = False,
        die_before: str | None = None,
        die_showing_end: str | None = None,
        lease_seconds: float = 2,
        sweep_interval: float = 0.3,
        min_approvals: int = 1,
        escalate_after: float | None = None,
        role: str = "replica",
        env: dict[str, str] | None = None,
    ) -> Replica:
        """Start a replica; `role` "front" or "worker" starts one half of one (see
        tests/fault/replica.py). A "replica" of a split cluster is both halves, started
        together; `die_after_decision` then applies to the front, which takes decisions.
        `die_before` names a `Service` method: the replica dies right after acking the first
        interaction that calls it (tests/fault/replica.py); `die_showing_end` ("put" or
        "mark"): it dies between a run's end and its showing."""
        port = free_port()
        environ = {
            **os.environ,
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": self.sandbox.api_url,
            "DATABASE_URL": self.db_url,
            "SAYSO_LEASE_SECONDS": str(lease_seconds),
            "SAYSO_SWEEP_INTERVAL": str(sweep_interval),
            "SAYSO_REPLICA_ID": name,
            "SAYSO_LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
            # one requester starts every run of a load test: no per-person rate limit here
            "SAYSO_RATE_LIMIT": "off",
            **(env or {}),
        }
        for key in ("SLACK_APP_TOKEN", "SAYSO_APPROVERS", "SAYSO_AGENTS"):
            environ.pop(key, None)
        cmd = [
            sys.executable,
            "-m",
            "tests.fault.replica",
            "--port",
            str(port),
            "--effects",
            str(self.effects),
            "--model-url",
            self.model.base_url,
            "--hang",
            str(hang),
            "--min-approvals",
            str(min_approvals),
        ]
        if escalate_after is not None:
            cmd += ["--escalate-after", str(escalate_after)]
        if die_showing_end is not None:  # the front or the worker: whichever ends the run
            cmd += ["--die-showing-end", die_showing_end]
        split = role == "replica" and self.split
        front_cmd = [*cmd, "--role", "front" if split else role]
        if die_after_decision:
            front_cmd.append("--die-after-decision")
        if die_before:
            front_cmd += ["--die-before", die_before]
        log_path = self.tmp_path / f"{name}.log"
        # a split replica's front leads a new process group in this session: its worker joins it
        proc = _spawn(front_cmd, environ, log_path, group=0 if split else None)
        replica = Replica(name, port, proc, log_path)
        self.replicas.append(replica)
        if split:
            replica.worker_log_path = self.tmp_path / f"{name}-worker.log"
            replica.worker = _spawn(
                [*cmd, "--role", "worker"], environ, replica.worker_log_path, group=proc.pid
            )
            await asyncio.gather(
                self._wait_healthy(replica),
                self._wait_listening(replica, replica.worker, replica.worker_log_path),
            )
        elif role == "worker":
            await self._wait_listening(replica, proc, log_path)
        else:
            await self._wait_healthy(replica)
        return replica

    async def _wait_listening(
        self,
        replica: Replica,
        worker: subprocess.Popen[bytes],
        log_path: Path,
        within: float = 30.0,
    ) -> None:
        """A worker is ready once it listens for ready runs (PostgreSQL NOTIFY)."""

        def listening() -> bool:
            if worker.poll() is not None:
                raise AssertionError(f"{replica.name}'s worker exited:\n{_read(log_path)}")
            return "event=listening_for_ready_runs" in _read(log_path)

        await eventually(
            listening,
            timeout=within,
            interval=0.1,
            what=f"{replica.name} to listen for ready runs",
            detail=replica.log,
        )

    async def _wait_healthy(self, replica: Replica, within: float = 30.0) -> None:
        async with aiohttp.ClientSession() as session:

            async def healthy() -> bool:
                if replica.proc.poll() is not None:
                    raise AssertionError(f"{replica.name} exited:\n{replica.log()}")
                async with session.get(f"{replica.base}/healthz") as resp:
                    return resp.status == 200

            await eventually(
                healthy,
                timeout=within,
                interval=0.1,
                what=f"{replica.name} to answer /healthz",
                detail=replica.log,
                ignoring=(aiohttp.ClientError,),
            )

    def stop_all(self) -> None:
        for replica in self.replicas:
            replica.kill()

    def logs(self) -> str:
        return "\n".join(f"--- {r.name} ---\n{r.log()[-6000:]}" for r in self.replicas)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _spawn(
    cmd: list[str], env: dict[str, str], log_path: Path, *, group: int | None = None
) -> subprocess.Popen[bytes]:
    """Start a replica in its own session and process group (so it can be killed with its
    children), or in the process group `group` (0: a new one) of this session: a process may
    join only a group of its own session, as a split replica's worker joins its front's."""
    with open(log_path, "wb") as log:
        if group is not None:
            return subprocess.Popen(
                cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, process_group=group
            )
        return subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

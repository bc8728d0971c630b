"""Replicas of the real bot as subprocesses (`python -m tests.fault.replica`) on one database."""

from __future__ import annotations

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


@dataclass
class Replica:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL the whole process group: no lease release, no goodbye."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class Cluster:
    """Replicas of the real bot, each a `python -m tests.fault.replica` subprocess."""

    tmp_path: Path
    db_url: str
    sandbox: SlackSandbox
    model: FakeModelServer
    replicas: list[Replica] = field(default_factory=list)

    @property
    def effects(self) -> Path:
        return self.tmp_path / "effects.jsonl"

    async def start(
        self,
        name: str,
        *,
        hang: float = 0.0,
        die_after_decision: bool = False,
        lease_seconds: float = 2,
        sweep_interval: float = 0.3,
        min_approvals: int = 1,
        escalate_after: float | None = None,
        role: str = "replica",
        env: dict[str, str] | None = None,
    ) -> Replica:
        """Start a replica; `role` "front" or "worker" splits it (see tests/fault/replica.py)."""
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
            "--role",
            role,
        ]
        if escalate_after is not None:
            cmd += ["--escalate-after", str(escalate_after)]
        if die_after_decision:
            cmd.append("--die-after-decision")
        log_path = self.tmp_path / f"{name}.log"
        proc = _spawn(cmd, environ, log_path)
        replica = Replica(name, port, proc, log_path)
        self.replicas.append(replica)
        if role == "worker":
            await self._wait_listening(replica)
        else:
            await self._wait_healthy(replica)
        return replica

    async def _wait_listening(self, worker: Replica, within: float = 30.0) -> None:
        """A worker is ready once it listens for ready runs (PostgreSQL NOTIFY)."""

        def listening() -> bool:
            if worker.proc.poll() is not None:
                raise AssertionError(f"{worker.name} exited:\n{worker.log()}")
            return "event=listening_for_ready_runs" in worker.log()

        await eventually(
            listening,
            timeout=within,
            interval=0.1,
            what=f"{worker.name} to listen for ready runs",
            detail=worker.log,
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


def _spawn(cmd: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start a replica in its own process group (so it can be killed with its children)."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

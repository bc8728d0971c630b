"""Fixtures for the fault suite: a sandbox Slack with many people, a fake model that answers
concurrent runs correctly, and replicas as real subprocesses on one PostgreSQL database."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.sandbox import SlackSandbox
from bot.sandbox.state import Person, default_people
from bot.testing import FakeModelServer
from bot.testing.fake_model import chat_completion

SECRET = "fault-signing-secret"
TOKEN = "xoxb-sandbox"
PEOPLE = 100  # U_P000 .. U_P099, full members who may decide
REPO = Path(__file__).resolve().parents[2]
PG_URL = os.environ.get("SAYSO_TEST_POSTGRES_URL")
REQUIRE_PG = os.environ.get("SAYSO_REQUIRE_POSTGRES") == "1"
DEPLOY_ARGS = {"environment": "staging", "version": "v2"}
ANSWER = "Deployed v2 to staging."


def clicker(i: int) -> str:
    return f"U_P{i:03d}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """The model, stateless so concurrent runs get the right answer: ask for `deploy` until
    the conversation holds a tool result, then answer with text."""
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return chat_completion(text=ANSWER, request=body)
    call = {"id": f"call_{uuid.uuid4().hex[:12]}", "name": "deploy", "arguments": DEPLOY_ARGS}
    return chat_completion(tool_calls=[call], request=body)


@pytest.fixture
async def model() -> AsyncIterator[FakeModelServer]:
    server = FakeModelServer(responder=respond)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    people = default_people() + [
        Person(clicker(i), f"p{i:03d}", f"Person {i:03d}") for i in range(PEOPLE)
    ]
    sb = SlackSandbox(signing_secret=SECRET, bot_url=None, bot_token=TOKEN, people=people)
    await sb.start(host="127.0.0.1", port=0)
    try:
        yield sb
    finally:
        await sb.stop()


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A fresh PostgreSQL database for this test (dropped afterwards)."""
    if not PG_URL:
        if REQUIRE_PG:
            pytest.fail("SAYSO_REQUIRE_POSTGRES=1 but SAYSO_TEST_POSTGRES_URL is not set")
        pytest.skip(
            "replica fault tests need PostgreSQL: set SAYSO_TEST_POSTGRES_URL="
            "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
        )
    from tests.storage.conftest import fresh_postgres

    async with fresh_postgres(PG_URL) as url:
        yield url


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
    ) -> Replica:
        port = free_port()
        env = {
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
        }
        for key in ("SLACK_APP_TOKEN", "SAYSO_APPROVERS", "SAYSO_AGENTS"):
            env.pop(key, None)
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
        ]
        if die_after_decision:
            cmd.append("--die-after-decision")
        log_path = self.tmp_path / f"{name}.log"
        proc = _spawn(cmd, env, log_path)
        replica = Replica(name, port, proc, log_path)
        self.replicas.append(replica)
        await self._wait_healthy(replica)
        return replica

    async def _wait_healthy(self, replica: Replica, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                if replica.proc.poll() is not None:
                    raise AssertionError(f"{replica.name} exited:\n{replica.log()}")
                try:
                    async with session.get(f"{replica.base}/healthz") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise AssertionError(f"{replica.name} not healthy after {within}s:\n{replica.log()}")

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


@pytest.fixture
async def cluster(
    tmp_path: Path, pg_url: str, sandbox: SlackSandbox, model: FakeModelServer
) -> AsyncIterator[Cluster]:
    c = Cluster(tmp_path, pg_url, sandbox, model)
    try:
        yield c
    finally:
        c.stop_all()

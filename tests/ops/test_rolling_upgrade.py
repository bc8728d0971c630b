"""Zero-downtime upgrade: the previous release's worker, already running, and this release's
front work together on one PostgreSQL database after this release's (additive) migration ran.

The previous release is the tree just before migration 0009 was added (`git archive`); its
worker is `python -m tests.fault.replica --role worker` from that tree.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from bot.ops.audit import verify
from bot.serve import free_port
from store import Store
from tests.fault.agents import ANSWER, executions
from tests.fault.cluster import Cluster, Replica
from tests.fault.conftest import cluster, model, pg_url, sandbox
from tests.fault.slack import SECRET, TOKEN, thread_text
from tests.fault.test_replicas import assert_clean, start_run
from tests.helpers.waiting import eventually
from tests.ops.helpers import ROOT

__all__ = ["cluster", "model", "pg_url", "sandbox"]  # the fault suite's fixtures

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

MIGRATION = "store/migrations/versions/0009_audit_chain.py"


def previous_release(into: Path) -> Path:
    """The tree before this release's migration, extracted into `into`."""

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, check=True, timeout=60
        ).stdout

    try:
        added = git("log", "--diff-filter=A", "--format=%H", "--", MIGRATION).decode().split()
        if not added:
            pytest.skip(f"{MIGRATION} is not committed: no previous release to run")
        archive = git("archive", "--format=tar", f"{added[-1]}^")
    except (subprocess.CalledProcessError, OSError) as exc:
        pytest.skip(f"no previous release in this clone's history ({exc})")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def spawn_old_worker(cluster: Cluster, old: Path, name: str) -> Replica:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(old),
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": cluster.sandbox.api_url,
        "DATABASE_URL": cluster.db_url,
        "SAYSO_LEASE_SECONDS": "2",
        "SAYSO_SWEEP_INTERVAL": "0.3",
        "SAYSO_REPLICA_ID": name,
        "SAYSO_RATE_LIMIT": "off",
        "PYTHONUNBUFFERED": "1",
    }
    for key in ("SLACK_APP_TOKEN", "SAYSO_APPROVERS", "SAYSO_AGENTS"):
        env.pop(key, None)
    log_path = cluster.tmp_path / f"{name}.log"
    cmd = [
        sys.executable,
        "-m",
        "tests.fault.replica",
        "--port",
        str(port),
        "--effects",
        str(cluster.effects),
        "--model-url",
        cluster.model.base_url,
        "--role",
        "worker",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=old, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    replica = Replica(name, port, proc, log_path)
    cluster.replicas.append(replica)
    return replica


async def test_an_old_worker_and_a_new_front_work_together(
    cluster: Cluster, tmp_path: Path
) -> None:
    old = previous_release(tmp_path / "previous")
    sb = cluster.sandbox
    # the previous release runs: its worker migrates the database to its own head
    worker = spawn_old_worker(cluster, old, "old-worker")
    await eventually(
        lambda: "event=listening_for_ready_runs" in worker.log(),
        timeout=30,
        what="the old worker to listen",
        detail=worker.log,
    )
    # the upgrade: this release's migrations (additive), then this release's front
    async with Store(cluster.db_url) as store:
        await store.upgrade()
    front = await cluster.start("new-front", role="front")
    card = await start_run(cluster, front)
    delivery = await sb.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    assert delivery.ok, delivery.summary()
    await eventually(lambda: executions(cluster.effects), timeout=20, detail=cluster.logs)
    assert [e["pid"] for e in executions(cluster.effects)] == [worker.proc.pid]
    await sb.wait_for(lambda _: ANSWER in thread_text(sb), timeout=20)
    async with Store(cluster.db_url) as store:
        runs = await store.runs.list()
        assert [r.status for r in runs] == ["completed"]
        await store.audit.record(actor="system", action="upgrade_checked", outcome="ok")
        verdict = await verify(store.audit)
    assert verdict.ok, verdict.line()  # what the old worker wrote is chained in
    assert_clean(front, worker)

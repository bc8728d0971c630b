"""The `sayso` command: clear start-up errors, db upgrade, runs list/show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest

from bot.agent import Agent, Sensitive, tool
from bot.agent.models import ScriptedModel, call
from store import RequestPolicy, Store


def sayso(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SAYSO_"))}
    clean.pop("DATABASE_URL", None)
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({}, "SLACK_BOT_TOKEN is not set"),
        ({"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_SIGNING_SECRET is not set"),
        ({"SLACK_BOT_TOKEN": "nope", "SLACK_SIGNING_SECRET": "s"}, "SLACK_BOT_TOKEN is malformed"),
        ({"SAYSO_APPROVAL_TTL": "soon"}, "SAYSO_APPROVAL_TTL is malformed"),
        ({"SAYSO_APPROVERS": "bob"}, "SAYSO_APPROVERS is malformed"),
        (
            {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "SAYSO_AGENTS": "nowhere:x"},
            "SAYSO_AGENTS",
        ),
    ],
)
def test_bad_settings_stop_the_bot_with_one_clear_line(
    tmp_path: Path, env: dict, needle: str
) -> None:
    result = sayso("run", "--mode", "http", "--port", "0", cwd=tmp_path, env=env)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_secrets_never_reach_the_error_line(tmp_path: Path) -> None:
    result = sayso(
        "run",
        "--mode",
        "socket",
        cwd=tmp_path,
        env={"SLACK_BOT_TOKEN": "xoxb-very-secret-token", "SLACK_APP_TOKEN": "bad-app-secret"},
    )
    assert result.returncode == 2
    assert "very-secret" not in result.stderr and "bad-app-secret" not in result.stderr


@tool(require_approval=True)
def deploy(env: str) -> dict:
    """Deploy."""
    return {"ok": env}


async def test_db_upgrade_and_runs_list_show(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'ops.db'}"
    for _ in range(2):
        result = sayso("db", "upgrade", cwd=tmp_path, env={"DATABASE_URL": url})
        assert result.returncode == 0, result.stderr
    store = Store(url)
    await store.upgrade()
    lease = await store.runs.create(
        run_id="run1",
        agent_id="ops",
        requester="U1",
        team_id="T1",
        channel_id="C1",
        thread_ts="1.1",
        request_text="deploy to staging",
    )
    from datetime import UTC, datetime, timedelta

    def policy(result, pending):  # type: ignore[no-untyped-def]
        return RequestPolicy(approvers=["U2"], expires_at=datetime.now(UTC) + timedelta(hours=1))

    agent = Agent(id="ops", model=ScriptedModel([call("deploy", env="staging")]), tools=[deploy])
    await agent.run("deploy to staging", state=store.runs.accessor(lease, policy), run_id="run1")
    request = (await store.requests.current("run1"))[0]
    await store.requests.decide(request.id, actor="U3", status="rejected", reason="not now")
    await store.close()

    listing = sayso("runs", "list", cwd=tmp_path, env={"DATABASE_URL": url})
    assert listing.returncode == 0 and "run1" in listing.stdout
    assert "waiting_for_human" in listing.stdout
    waiting = sayso(
        "runs", "list", "--status", "completed", cwd=tmp_path, env={"DATABASE_URL": url}
    )
    assert "run1" not in waiting.stdout
    shown = sayso("runs", "show", "run1", cwd=tmp_path, env={"DATABASE_URL": url})
    assert shown.returncode == 0
    assert "deploy" in shown.stdout and "rejected" in shown.stdout and "U3" in shown.stdout
    assert "not now" in shown.stdout and "audit trail" in shown.stdout
    assert "receipt" not in shown.stdout  # no SAYSO_SIGNING_KEY: no receipts
    from bot.receipts import ReceiptSigner, check_signature, new_signing_key

    key = new_signing_key()
    signed = sayso(
        "runs", "show", "run1", cwd=tmp_path, env={"DATABASE_URL": url, "SAYSO_SIGNING_KEY": key}
    )
    line = next(x for x in signed.stdout.splitlines() if x.strip().startswith("receipt "))
    receipt = json.loads(line.strip().removeprefix("receipt "))
    assert receipt["decision"] == "reject" and receipt["decided_by"] == "U3"
    check_signature(receipt, ReceiptSigner.from_text(key).public_key)  # signed, as GET /v1's
    missing = sayso("runs", "show", "nope", cwd=tmp_path, env={"DATABASE_URL": url})
    assert missing.returncode == 1 and "Run nope not found" in missing.stdout


async def test_runs_cancel_ends_the_run_and_closes_its_requests(tmp_path: Path) -> None:
    from tests.storage.store_helpers import paused_run

    url = f"sqlite+aiosqlite:///{tmp_path / 'ops.db'}"
    async with Store(url) as store:
        await store.upgrade()
        await paused_run(store, "run1", calls=("call_1", "call_2"))
    env = {"DATABASE_URL": url}
    result = sayso("runs", "cancel", "run1", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "cancelled; 2 open request(s) closed" in result.stdout
    async with Store(url) as store:
        run = await store.runs.get("run1")
        assert run is not None and run.status == "cancelled" and run.lease_owner is None
        requests = await store.requests.for_run("run1")
        assert {(r.state.status, r.state.decided_by) for r in requests} == {
            ("cancelled", "operator")
        }
        trail = await store.audit.trail("run1")
        assert [(e.action, e.actor) for e in trail if e.action == "cancel"] == [
            ("cancel", "operator")
        ]
        assert await store.runs.claim("run1") is None  # nothing continues it
    again = sayso("runs", "cancel", "run1", cwd=tmp_path, env=env)
    assert again.returncode == 1 and "already ended (cancelled)" in again.stdout
    missing = sayso("runs", "cancel", "nope", cwd=tmp_path, env=env)
    assert missing.returncode == 1 and "Run nope not found" in missing.stdout


async def test_db_reencrypt_and_a_clear_error_without_the_key(tmp_path: Path) -> None:
    from cryptography.fernet import Fernet

    from tests.storage.store_helpers import paused_run

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    url = f"sqlite+aiosqlite:///{tmp_path / 'ops.db'}"
    async with Store(url, encryption_keys=[old]) as store:
        await store.upgrade()
        await paused_run(store, "run1")
    base = {"DATABASE_URL": url}
    keyless = sayso("runs", "show", "run1", cwd=tmp_path, env=base)
    assert keyless.returncode == 1 and "Traceback" not in keyless.stderr
    assert "SAYSO_ENCRYPTION_KEYS is not set" in keyless.stderr
    refused = sayso("db", "reencrypt", cwd=tmp_path, env=base)
    assert refused.returncode == 2 and "SAYSO_ENCRYPTION_KEYS is not set" in refused.stderr
    bad = sayso("db", "reencrypt", cwd=tmp_path, env={**base, "SAYSO_ENCRYPTION_KEYS": "nope"})
    assert bad.returncode == 2 and "not a Fernet key" in bad.stderr and "nope" not in bad.stderr
    rotated = sayso(
        "db", "reencrypt", cwd=tmp_path, env={**base, "SAYSO_ENCRYPTION_KEYS": f"{new},{old}"}
    )
    assert rotated.returncode == 0 and "re-encrypted" in rotated.stdout, rotated.stderr
    shown = sayso("runs", "show", "run1", cwd=tmp_path, env={**base, "SAYSO_ENCRYPTION_KEYS": new})
    assert shown.returncode == 0 and "staging" in shown.stdout, shown.stderr


@tool(require_approval=True, name="deploy")
def secret_deploy(env: str, token: Annotated[str, Sensitive()]) -> dict:
    """Deploy."""
    return {"ok": env}


SECRET_AGENTS = '''
from typing import Annotated

from bot.agent import Agent, Sensitive, tool
from bot.agent.models import ScriptedModel


@tool(require_approval=True)
def deploy(env: str, token: Annotated[str, Sensitive()]) -> dict:
    """Deploy."""
    return {"ok": env}


agents = [Agent(id="ops", model=ScriptedModel([]), tools=[deploy])]
'''


async def test_runs_show_masks_sensitive_arguments(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    (tmp_path / "secret_agents.py").write_text(SECRET_AGENTS)
    url = f"sqlite+aiosqlite:///{tmp_path / 'ops.db'}"
    async with Store(url) as store:
        await store.upgrade()
        lease = await store.runs.create(
            run_id="run1",
            agent_id="ops",
            requester="U1",
            team_id="T1",
            channel_id="C1",
            thread_ts="1.1",
            request_text="deploy to staging",
        )

        def policy(result, pending):  # type: ignore[no-untyped-def]
            return RequestPolicy(approvers=[], expires_at=datetime.now(UTC) + timedelta(hours=1))

        model = ScriptedModel([call("deploy", env="staging", token="hunter2-deploy-token")])
        agent = Agent(id="ops", model=model, tools=[secret_deploy])
        await agent.run("deploy", state=store.runs.accessor(lease, policy), run_id="run1")
    env = {"DATABASE_URL": url, "SAYSO_AGENTS": "secret_agents:agents"}
    shown = sayso("runs", "show", "run1", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "hunter2-deploy-token" not in shown.stdout and "••••oken" in shown.stdout
    assert "staging" in shown.stdout
    unknown = sayso("runs", "show", "run1", cwd=tmp_path, env={**env, "SAYSO_AGENTS": "nope:x"})
    assert unknown.returncode == 0 and "hunter2-deploy-token" not in unknown.stdout
    assert "staging" not in unknown.stdout.split("approval requests")[1].split("audit")[0]

"""`sayso doctor` against the sandbox Slack: every check passes on a good configuration; a
missing scope or a wrong approver id is named with its fix (exit 1); `--json` for machines."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from bot.ops.doctor import BOT_SCOPES
from bot.sandbox import SlackSandbox
from bot.testing import FakeModelServer
from store import Store
from tests.ops.helpers import ROOT, sayso

TOKEN = "xoxb-sandbox"


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    sb = SlackSandbox(
        signing_secret="doctor-secret", bot_url="http://127.0.0.1:1/", bot_token=TOKEN
    )
    await sb.start(host="127.0.0.1", port=0)
    yield sb
    await sb.stop()


@pytest.fixture
async def model() -> AsyncIterator[FakeModelServer]:
    server = FakeModelServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def db_file(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}"
    async with Store(url) as store:
        await store.upgrade()
    return url


def _env(sandbox: SlackSandbox, model: FakeModelServer, **extra: str) -> dict[str, str]:
    values = {
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": "doctor-secret",
        "SLACK_API_URL": sandbox.api_url,
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "test",
        "SAYSO_APPROVERS": "U_APPROVER,S_APPROVERS",
        "SAYSO_ADMINS": "U_MEMBER",
    }
    values.update(extra)
    return values


def test_the_doctor_knows_the_manifest_scopes() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == sorted(BOT_SCOPES)


async def test_all_checks_pass_against_the_sandbox(
    sandbox: SlackSandbox, model: FakeModelServer, db_file: str
) -> None:
    code, out, err = await sayso(db_file, "doctor", **_env(sandbox, model))
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[-1] == "all checks pass"
    names = [line.split(":")[0] for line in lines[:-1]]
    assert all(line.startswith("ok ") for line in lines[:-1]), out
    for check in ("slack token", "slack scopes", "slack secrets", "database", "migrations"):
        assert any(check in n for n in names), (check, out)
    assert any("model openai:gpt-4o-mini" in line for line in lines)
    assert any(line.startswith("ok   approvers: 3 id(s)") for line in lines), out


async def test_a_missing_scope_and_a_wrong_approver_are_named(
    sandbox: SlackSandbox, model: FakeModelServer, db_file: str
) -> None:
    sandbox.scopes = [s for s in BOT_SCOPES if s != "usergroups:read"]
    env = _env(sandbox, model, SAYSO_APPROVERS="U_APPROVER,U_NOBODY,S_NOPE")
    code, out, _ = await sayso(db_file, "doctor", **env)
    assert code == 1
    scopes = next(line for line in out.splitlines() if "slack scopes" in line)
    assert scopes.startswith("FAIL") and "missing usergroups:read" in scopes
    assert "reinstall the app" in scopes
    approvers = next(line for line in out.splitlines() if "approvers:" in line)
    assert approvers.startswith("FAIL")
    assert "U_NOBODY (user_not_found)" in approvers and "S_NOPE (no such user group)" in approvers
    assert "U_APPROVER " not in approvers and "fix:" in approvers
    assert out.splitlines()[-1] == "2 check(s) failed"

    code, out, _ = await sayso(db_file, "doctor", "--json", **env)
    assert code == 1
    body = json.loads(out)
    assert body["ok"] is False
    failed = {c["name"]: c for c in body["checks"] if c["status"] == "fail"}
    assert set(failed) == {"slack scopes", "approvers"}
    assert failed["slack scopes"]["fix"]


async def test_a_bad_token_an_old_schema_and_a_bad_policy_are_named(
    sandbox: SlackSandbox, model: FakeModelServer, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text("agents:\n  nope:\n    tools: {}\n")
    empty = f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    env = _env(sandbox, model, SLACK_BOT_TOKEN="xoxb-wrong", SAYSO_POLICY=str(policy))
    code, out, _ = await sayso(empty, "doctor", **env)
    assert code == 1
    failed = {line.split(":")[0].removeprefix("FAIL ") for line in out.splitlines()}
    assert {"slack token", "migrations", "policy"} <= failed, out
    assert "invalid_auth" in out and "sayso db upgrade" in out

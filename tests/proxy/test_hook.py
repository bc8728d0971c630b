"""`sayso hook claude-code`: Claude Code's documented hook JSON on stdin (PreToolUse and
PermissionRequest), over a live sayso on the sandbox; the documented JSON on stdout, exit 0."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Harness, message_text
from tests.helpers.views import filled_views
from tests.proxy.conftest import Live
from tests.proxy.flows import one_card, open_cards

POLICY = """\
proxy:
  claude-code:
    tools:
      Read: {action: allow}
      "mcp__github__delete_*": {action: deny}
      Bash:
        rules:
          - name: destructive
            when: {command: {regex: "rm -rf|git push --force|terraform apply"}}
            approvers: [U_APPROVER]
      Edit: {approvers: [U_APPROVER]}
"""


def hook_input(event: str, tool: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The JSON Claude Code writes on the hook's stdin."""
    return {
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": extra.pop("tool_use_id", "toolu_01ABC"),
        "session_id": "sess-42",
        "cwd": "/home/dev/project",
        "transcript_path": "/home/dev/.claude/projects/p/sess-42.jsonl",
        "permission_mode": "default",
        **extra,
    }


def hook_env(tmp_path: Path, url: str, key: str, policy: str = POLICY) -> dict[str, str]:
    (tmp_path / "policy.yaml").write_text(policy)
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": os.environ.get("PYTHONPATH", os.getcwd()),
        "SAYSO_POLICY": str(tmp_path / "policy.yaml"),
        "SAYSO_URL": url,
        "SAYSO_KEY": key,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


HOOK = [sys.executable, "-m", "bot.cli", "hook", "claude-code"]


def run_hook(payload: dict[str, Any], env: dict[str, str], *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [*HOOK, *extra], input=json.dumps(payload), capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


async def start_hook(payload: dict[str, Any], env: dict[str, str], *extra: str) -> Any:
    process = await asyncio.create_subprocess_exec(
        *HOOK,
        *extra,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )

    async def answer() -> dict[str, Any]:
        out, err = await process.communicate(json.dumps(payload).encode())
        assert process.returncode == 0, err.decode()
        result: dict[str, Any] = json.loads(out)
        return result

    return asyncio.create_task(answer())


async def decide(h: Harness, action: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    card = await one_card(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], action)
    if fields is not None:
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        await h.sandbox.submit_view("U_APPROVER", view["id"], fields)
    return card


async def test_pretooluse_approve_allows_and_the_card_shows_command_cwd_session(
    live: Live, tmp_path: Path
) -> None:
    h = live.h
    env = hook_env(tmp_path, h.url, live.key)
    payload = hook_input("PreToolUse", "Bash", {"command": "rm -rf build/", "description": "x"})
    answer = await start_hook(payload, env)
    card = await decide(h, "approve")
    text = message_text(card)
    assert "Bash" in text and "rm -rf build/" in text
    assert "cwd: /home/dev/project" in text and "session: sess-42" in text
    out = (await asyncio.wait_for(answer, 30))["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "allow"
    assert "U_APPROVER" in out["permissionDecisionReason"] and "updatedInput" not in out


async def test_pretooluse_reject_denies_with_the_reason(live: Live, tmp_path: Path) -> None:
    h = live.h
    env = hook_env(tmp_path, h.url, live.key)
    payload = hook_input("PreToolUse", "Bash", {"command": "git push --force origin main"})
    answer = await start_hook(payload, env)
    await decide(h, "reject", {"reason": "Not on main"})
    out = (await asyncio.wait_for(answer, 30))["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "Not on main" in out["permissionDecisionReason"]


async def test_pretooluse_edit_gives_updated_input(live: Live, tmp_path: Path) -> None:
    h = live.h
    env = hook_env(tmp_path, h.url, live.key)
    edit = {"file_path": "app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = 1"}
    answer = await start_hook(hook_input("PreToolUse", "Edit", edit), env)
    fields = {**edit, "new_string": "DEBUG = False"}
    await decide(h, "edit", fields)
    out = (await asyncio.wait_for(answer, 30))["hookSpecificOutput"]
    assert out["permissionDecision"] == "allow"
    assert out["updatedInput"]["new_string"] == "DEBUG = False"
    assert out["updatedInput"]["file_path"] == "app.py"


@pytest.mark.parametrize("action", ["approve", "reject", "edit"])
async def test_permission_request_shapes(live: Live, tmp_path: Path, action: str) -> None:
    h = live.h
    env = hook_env(tmp_path, h.url, live.key)
    payload = hook_input("PermissionRequest", "Bash", {"command": "terraform apply"})
    answer = await start_hook(payload, env)
    fields = {"reject": {"reason": "Plan first"}, "edit": {"command": "terraform plan"}}
    await decide(h, action, fields.get(action))
    out = (await asyncio.wait_for(answer, 30))["hookSpecificOutput"]
    assert out["hookEventName"] == "PermissionRequest"
    if action == "approve":
        assert out["decision"] == {"behavior": "allow"}
    elif action == "reject":
        assert out["decision"]["behavior"] == "deny" and "Plan first" in out["decision"]["message"]
    else:
        assert out["decision"]["behavior"] == "allow"
        assert out["decision"]["updatedInput"]["command"] == "terraform plan"


async def test_the_same_tool_use_waits_on_the_same_card(live: Live, tmp_path: Path) -> None:
    h = live.h
    env = hook_env(tmp_path, h.url, live.key)
    payload = hook_input("PreToolUse", "Bash", {"command": "rm -rf dist"})
    first = await start_hook(payload, env, "--timeout", "1s")
    assert (await asyncio.wait_for(first, 30))["hookSpecificOutput"]["permissionDecision"] == "ask"
    # the request was cancelled when the hook stopped waiting: its card says so
    await h.sandbox.wait_for(lambda sb: not open_cards(h))
    assert "Cancelled" in message_text(h.sandbox.messages("C_GENERAL")[0])


def test_ungated_calls_answer_at_once_without_the_network(tmp_path: Path) -> None:
    # SAYSO_URL points nowhere: any network call would turn the answer into `ask`
    env = hook_env(tmp_path, "http://127.0.0.1:9", "sk_sayso_unused")
    read = hook_input("PreToolUse", "Read", {"file_path": "README.md"})
    assert run_hook(read, env)["hookSpecificOutput"]["permissionDecision"] == "allow"
    safe = hook_input("PreToolUse", "Bash", {"command": "ls -la"})
    assert run_hook(safe, env)["hookSpecificOutput"]["permissionDecision"] == "allow"
    delete = hook_input("PreToolUse", "mcp__github__delete_repo", {"repo": "x"})
    denied = run_hook(delete, env)["hookSpecificOutput"]
    assert (
        denied["permissionDecision"] == "deny" and "delete_*" in denied["permissionDecisionReason"]
    )
    assert run_hook(hook_input("PreToolUse", "Grep", {"pattern": "x"}), env) == {}
    permission = hook_input("PermissionRequest", "Read", {"file_path": "README.md"})
    assert run_hook(permission, env)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    # Process start to output, as Claude Code runs it, the best of 8 runs, beside a bare
    # interpreter started the same way. The speed targets (own work under 50 ms, the whole
    # process under 150 ms) are measured by bench/proxy.py (docs/benchmarks.md); here only a
    # loose guard that the hook imports nothing heavy (the server's imports cost far more).
    hook, bare = [], []
    for _ in range(8):
        started = time.perf_counter()
        run_hook(read, env)
        hook.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        bare.append(time.perf_counter() - started)
    assert min(hook) - min(bare) < 0.250, (sorted(hook)[:3], sorted(bare)[:3])
    # and nothing heavy is imported: no HTTP client, no engine, no YAML parser (cached policy)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *HOOK[1:]],
        input=json.dumps(read),
        capture_output=True,
        text=True,
        env=env,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    for heavy in ("httpx", "pydantic", "yaml", "bot.agent", "sqlalchemy", "aiohttp", "asyncio"):
        assert heavy not in imported, heavy


def test_sayso_down_gives_ask_never_allow(tmp_path: Path) -> None:
    env = hook_env(tmp_path, "http://127.0.0.1:9", "sk_sayso_unused")
    payload = hook_input("PreToolUse", "Bash", {"command": "rm -rf /tmp/x"})
    out = run_hook(payload, env)["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask"
    assert "unreachable" in out["permissionDecisionReason"]
    permission = hook_input("PermissionRequest", "Bash", {"command": "rm -rf /tmp/x"})
    assert run_hook(permission, env) == {}  # no decision: Claude Code's own dialog


def test_bad_input_and_a_bad_policy_never_allow(tmp_path: Path) -> None:
    env = hook_env(tmp_path, "http://127.0.0.1:9", "k", policy="proxy:\n  claude-code: [x]\n")
    out = run_hook(hook_input("PreToolUse", "Read", {}), env)["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask" and "policy.yaml:2" in out["permissionDecisionReason"]
    done = subprocess.run(HOOK, input="not json", capture_output=True, text=True, env=env)
    assert done.returncode == 0 and json.loads(done.stdout) == {}


def test_print_settings(tmp_path: Path) -> None:
    env = hook_env(tmp_path, "https://sayso.example.com", "k")
    done = subprocess.run(
        [*HOOK, "--print-settings"], capture_output=True, text=True, env=env, check=True
    )
    settings = json.loads(done.stdout)
    (entry,) = settings["hooks"]["PreToolUse"]
    assert entry["matcher"] == "*"
    assert entry["hooks"] == [
        {"type": "command", "command": "sayso hook claude-code", "timeout": 660}
    ]
    assert settings["env"]["SAYSO_URL"] == "https://sayso.example.com"

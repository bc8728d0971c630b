"""The `proxy:` section of the policy file: verdicts (names, globs, rules, annotations,
defaults), errors naming the line, the hook's cache, and `sayso policy check` / `explain
--proxy`; and the proxy's journal (which calls were forwarded)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.proxy.journal import Journal
from bot.proxy.policy import ProxyPolicyError, load_proxy_policy, parse_proxy_policy

POLICY = """\
agents:
  ops:
    tools:
      deploy: {approvers: [S0SRE]}
proxy:
  github:
    tools:
      "get_*": {action: allow}
      "delete_*": {action: deny}
      delete_branch: {approvers: [U1, U2], min_approvals: 2}
      create_pull_request:
        action: approve              # always asks; the rule changes who
        approvers: [S0LEADS]
        expires_in: 2h
        rules:
          - name: to main
            when: {base: main}
            approvers: [S0SRE]
            require_reason: true
      merge_pull_request:            # rules only: asks only when one matches
        rules:
          - when: {base: {one_of: [main, release]}}
  claude-code:
    default: approve
    timeout: 90s
    on_timeout: deny
    tools:
      Read: {action: allow}
"""


def test_verdicts() -> None:
    github = parse_proxy_policy(POLICY).server("github")
    assert github.decide("get_issue", {}).action == "allow"
    assert github.decide("delete_repo", {}).action == "deny"
    exact = github.decide("delete_branch", {})  # an exact name wins over the glob
    assert exact.action == "approve" and exact.gate.min_approvals == 2
    pr = github.decide("create_pull_request", {"base": "develop"})
    assert pr.action == "approve" and pr.gate.approvers == ("S0LEADS",) and pr.rule is None
    assert pr.gate.expires_in == 7200
    merge = github.decide("merge_pull_request", {"base": "develop"})
    assert merge.action == "allow" and "no rule matches" in merge.why
    main = github.decide("create_pull_request", {"base": "main"})
    assert (main.rule, main.gate.approvers, main.gate.require_reason) == (
        "to main",
        ("S0SRE",),
        True,
    )
    assert main.gate.expires_in == 7200  # the tool's settings under the rule's
    assert github.decide("list_commits", {}, read_only=True).action == "allow"
    assert github.decide("merge", {}, read_only=False).action == "approve"
    hook = parse_proxy_policy(POLICY).server("claude-code")
    assert hook.decide("Write", {}).action == "approve"  # the section's default
    assert (hook.timeout, hook.on_timeout) == (90, "deny")
    nothing = parse_proxy_policy("proxy:\n  x: {}\n").server("claude-code")
    assert nothing.decide("Write", {}).action == "none"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("proxy:\n  gh:\n    tools:\n      x: {action: maybe}\n", 4, "action 'maybe'"),
        ("proxy:\n  gh:\n    tool: {}\n", 3, "unknown key 'tool'"),
        ("proxy:\n  gh:\n    tools:\n      x: {approvers: [bob]}\n", 4, "not a Slack user"),
        (
            "proxy:\n  gh:\n    tools:\n      x:\n        rules:\n          - approvers: [U1]\n",
            6,
            "needs `when:`",
        ),
        (
            "proxy:\n  gh:\n    tools:\n      x: {approvers: [U1], min_approvals: 2}\n",
            4,
            "impossible quorum",
        ),
        ("proxy:\n  gh:\n    timeout: soon\n", 3, "not a duration"),
        ("proxy: [\n", 2, "not valid YAML"),
    ],
)
def test_errors_name_the_line(text: str, line: int, reason: str) -> None:
    with pytest.raises(ProxyPolicyError) as caught:
        parse_proxy_policy(text, "p.yaml")
    assert caught.value.line == line and reason in caught.value.reason, str(caught.value)


def test_the_cache_follows_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    first = load_proxy_policy(path, cache=True)
    assert list((tmp_path / "cache" / "sayso").iterdir())
    assert load_proxy_policy(path, cache=True) == first == load_proxy_policy(path)
    path.write_text(POLICY.replace("Read: {action: allow}", "Read: {action: deny}"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    changed = load_proxy_policy(path, cache=True).server("claude-code")
    assert changed.decide("Read", {}).action == "deny"


def sayso(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def test_policy_check_and_explain_proxy(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    check = sayso("policy", "check", str(path), cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert "ops    deploy" in check.stdout or "deploy" in check.stdout
    assert "github" in check.stdout and "create_pull_request" in check.stdout
    how = sayso(
        "policy", "explain", "--proxy", "github", "create_pull_request",
        "--args", '{"base": "main"}', "--file", str(path), cwd=tmp_path,
    )  # fmt: skip
    assert how.returncode == 0, how.stderr
    assert "approve" in how.stdout and "to main" in how.stdout and "S0SRE" in how.stdout
    path.write_text(POLICY.replace("{action: deny}", "{action: nope}"))
    bad = sayso("policy", "check", str(path), cwd=tmp_path)
    assert bad.returncode == 1 and "policy.yaml:9" in bad.stderr, bad.stderr


def test_the_journal_never_hands_out_a_forwarded_call_again(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    args = {"repo_path": "/r", "message": "m"}
    first = journal.claim("git", "s1", "git_commit", args)
    same_time = journal.claim("git", "s1", "git_commit", args)  # a concurrent identical call
    assert first.key != same_time.key
    journal.forwarding(first.key)
    journal.release(first.key)  # the process died mid-call (a restart forgets its claims)
    journal.release(same_time.key)
    again = Journal(tmp_path / "j.db").claim("git", "s1", "git_commit", args)
    assert (again.key, again.state) == (first.key, "forwarding")  # never sent a second time
    journal.delivered(first.key)
    journal.delivered(same_time.key)
    after = Journal(tmp_path / "j.db").claim("git", "s1", "git_commit", args)
    assert after.key not in (first.key, same_time.key) and after.state == "requested"
    other_session = journal.claim("git", "s2", "git_commit", args)
    assert other_session.key != first.key

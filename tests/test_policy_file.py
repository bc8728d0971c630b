"""The policy file: `sayso policy check` and `explain`, a bad file stopping `sayso run`, the
file overriding the code's settings (tests/e2e/test_policy_reload.py: and SIGHUP)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main

GOOD = """\
agents:
  ops:
    tools:
      deploy:
        approvers: [S_APPROVERS]
        rules:
          - name: production
            when:
              environment: {one_of: [production]}
            min_approvals: 2
            require_reason: true
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return str(path)


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        main(["policy", "check", write(tmp_path, text), "--agents", "bot.examples.ops:agents"])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (
            "agents:\n  ops:\n    tools:\n      deploy_all:\n        min_approvals: 2\n",
            4,
            "unknown tool 'deploy_all'",
        ),
        ("agents:\n  opz:\n    tools: {}\n", 2, "unknown agent 'opz'"),
        (
            "agents:\n  ops:\n    tools:\n      deploy:\n        rules:\n          - when:\n"
            "              env: production\n",
            7,
            "unknown argument 'env'",
        ),
        (
            "agents:\n  ops:\n    tools:\n      deploy:\n        approvers: [sre-team]\n",
            5,
            "'sre-team' is not a Slack user id",
        ),
        (
            "agents:\n  ops:\n    tools:\n      deploy:\n        approvers: [U1]\n"
            "        min_approvals: 2\n",
            5,
            "impossible quorum",
        ),
        (
            "agents:\n  ops:\n    tools:\n      deploy:\n        escalate_after: soon\n",
            5,
            "escalate_after",
        ),
        (
            "api:\n  keys:\n    ci:\n      tools:\n        deploy:\n"
            "          standing_approval: 1h\n",
            6,
            "unknown setting 'standing_approval' for API requests",
        ),
        ("api:\n  ci:\n    tools: {}\n", 2, "use `keys:`"),
        (
            "api:\n  keys:\n    ci:\n      tools:\n        deploy:\n          approvers: [U1]\n"
            "          min_approvals: 2\n",
            6,
            "impossible quorum",
        ),
    ],
)
def test_check_rejects_a_bad_file_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, reason: str
) -> None:
    code, out = check(tmp_path, text, capsys)
    assert code == 1
    assert f"policy.yaml:{line}:" in out and reason in out, out


def test_check_prints_each_tools_effective_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = check(tmp_path, GOOD, capsys)
    assert code == 0, out
    deploy = next(line for line in out.splitlines() if " deploy " in line)
    assert "S_APPROVERS" in deploy and "always" in deploy
    production = next(line for line in out.splitlines() if "production" in line)
    assert "S_APPROVERS" in production and " 2 " in production and "required" in production


def test_check_prints_the_api_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD + (
        "api:\n  keys:\n    ci:\n      tools:\n        deploy:\n          approvers: [S_SRE]\n"
        "          rules:\n            - name: prod\n              when: {env: prod}\n"
        "              min_approvals: 3\n"
    )
    code, out = check(tmp_path, text, capsys)
    assert code == 0, out
    row = next(line for line in out.splitlines() if line.startswith("api:ci"))
    assert " deploy " in row and "S_SRE" in row
    prod = next(line for line in out.splitlines() if line.startswith("api:ci") and "└ prod" in line)
    assert "S_SRE" in prod and " 3 " in prod


def test_explain_names_the_rule_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD)
    args = [
        "policy",
        "explain",
        "ops",
        "deploy",
        "--file",
        path,
        "--agents",
        "bot.examples.ops:agents",
    ]
    main([*args, "--args", '{"environment": "production", "version": "v2"}'])
    out = capsys.readouterr().out
    assert "rule: production" in out and "first rule whose condition holds" in out
    assert "min_approvals: 2" in out
    main([*args, "--args", '{"environment": "staging", "version": "v2"}'])
    out = capsys.readouterr().out
    assert "rule: (none" in out and "no rule matches" in out


def test_a_bad_file_stops_sayso_run_with_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = write(tmp_path, "agents:\n  ops:\n    tools:\n      nope: {}\n")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}")
    monkeypatch.setenv("SAYSO_POLICY", bad)
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["run", "--mode", "http", "--port", "0", "--agents", "bot.examples.ops:agents"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "policy.yaml:4:" in err and "unknown tool 'nope'" in err


def test_the_bot_reads_a_file_that_also_gates_proxied_tools(tmp_path: Path) -> None:
    """One SAYSO_POLICY for `sayso run` and for `sayso proxy` / `sayso hook`: the bot reads
    `agents:` and leaves `proxy:` to them."""
    from bot.loading import load_registry
    from bot.service.policy.file import load_policy

    text = GOOD + 'proxy:\n  github:\n    tools:\n      "get_*": {action: allow}\n'
    book = load_policy(write(tmp_path, text), load_registry("bot.examples.ops:agents"))
    assert ("ops", "deploy") in book.tools

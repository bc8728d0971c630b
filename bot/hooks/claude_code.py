"""`sayso hook claude-code`: a command hook for Claude Code (PreToolUse or PermissionRequest).

It reads the hook's JSON on stdin (`hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`,
`session_id`, `cwd`, `transcript_path`), decides by the `proxy: claude-code:` section of the
policy file (SAYSO_POLICY), and writes Claude Code's JSON on stdout:

- PreToolUse: `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
  "allow" | "deny" | "ask", "permissionDecisionReason": "…", "updatedInput": {…}}}`
  (`updatedInput` after an Edit in Slack);
- PermissionRequest: `{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
  "decision": {"behavior": "allow", "updatedInput": {…}} | {"behavior": "deny", "message":
  "…"}}}`; where PreToolUse would say `ask`, it says nothing (`{}`) and Claude Code shows its
  own dialog.

A tool the section does not name gets `{}` (Claude Code's own permission rules apply) unless
the section sets a `default`. Calls the policy allows or denies are answered at once, with no
network and no import of sayso's engine (a process per tool call: see bot/cli.py). A gated call
becomes a sayso approval request through /v1 (SAYSO_URL, SAYSO_KEY) and waits for the decision;
no decision in time gives `ask` (or `deny` with `on_timeout: deny`), sayso unreachable gives
`ask` with the reason, never `allow`. The hook always exits 0 with JSON on stdout: it never uses
exit 2, so the reason always reaches Claude and the person.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

NAME = "claude-code"
DEFAULT_TIMEOUT = 600.0


def emit(answer: dict[str, Any]) -> int:
    sys.stdout.write(json.dumps(answer))
    sys.stdout.write("\n")
    sys.stdout.flush()
    return 0


def answer_for(
    event: str,
    decision: str,
    reason: str,
    updated_input: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Claude Code's JSON for `decision` (allow, deny, ask, none) on `event`."""
    if decision == "none":
        return {}
    if event == "PermissionRequest":
        if decision == "ask":
            return {}  # no decision: Claude Code shows its own permission dialog
        body: dict[str, Any] = {"behavior": decision}
        if decision == "allow" and updated_input is not None:
            body["updatedInput"] = updated_input
        if decision == "deny":
            body["message"] = reason
        return {"hookSpecificOutput": {"hookEventName": event, "decision": body}}
    out: dict[str, Any] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }
    if decision == "allow" and updated_input is not None:
        out["updatedInput"] = updated_input
    return {"hookSpecificOutput": out}


def main(args: argparse.Namespace) -> int:
    """Always exit 0 with JSON on stdout."""
    try:
        payload = json.loads(sys.stdin.read() or "null")
    except ValueError as exc:
        print(f"sayso hook: stdin is not JSON ({exc})", file=sys.stderr)
        return emit({})
    if not isinstance(payload, dict):
        return emit({})
    event = str(payload.get("hook_event_name") or "PreToolUse")
    try:
        return emit(decide(payload, event, args))
    except Exception as exc:  # never a traceback instead of an answer, never allow
        reason = f"sayso hook failed ({type(exc).__name__}: {exc}); asking instead"
        return emit(answer_for(event, "ask", reason))


def decide(payload: dict[str, Any], event: str, args: argparse.Namespace) -> dict[str, Any]:
    from bot.proxy.policy import ProxyPolicyError, load_proxy_policy

    tool = str(payload.get("tool_name") or "")
    tool_input = payload.get("tool_input")
    arguments: dict[str, Any] = tool_input if isinstance(tool_input, dict) else {}
    path = args.policy or os.environ.get("SAYSO_POLICY")
    try:
        section = load_proxy_policy(path, cache=True).server(NAME)
    except ProxyPolicyError as exc:
        return answer_for(event, "ask", f"sayso: the policy file is rejected ({exc})")
    verdict = section.decide(tool, arguments)
    if verdict.action == "none":
        return {}
    if verdict.action == "allow":
        return answer_for(event, "allow", f"sayso policy: {verdict.why}")
    if verdict.action == "deny":
        return answer_for(event, "deny", f"sayso policy denies it: {verdict.why}")
    from bot.hooks.remote import ask_sayso

    timeout = section.timeout or DEFAULT_TIMEOUT
    if args.timeout:
        from bot.proxy.policy import seconds

        timeout = seconds(args.timeout)
    on_timeout = args.on_timeout or section.on_timeout
    outcome = ask_sayso(payload, arguments, verdict, section, timeout=timeout)
    if outcome.decision == "timeout":
        return answer_for(event, on_timeout, outcome.reason)
    return answer_for(event, outcome.decision, outcome.reason, outcome.updated_input)


def print_settings(args: argparse.Namespace) -> int:
    """The settings.json snippet that registers the hook (user: ~/.claude/settings.json;
    project: .claude/settings.json, or .claude/settings.local.json to keep it out of git)."""
    timeout = DEFAULT_TIMEOUT
    if args.timeout:
        from bot.proxy.policy import seconds

        timeout = seconds(args.timeout)
    env = {
        "SAYSO_URL": os.environ.get("SAYSO_URL") or "https://sayso.example.com",
        "SAYSO_POLICY": os.path.abspath(
            args.policy or os.environ.get("SAYSO_POLICY") or "sayso-policy.yaml"
        ),
    }
    hook = {
        "type": "command",
        "command": "sayso hook claude-code",
        # Claude Code stops a hook after `timeout` seconds: give the wait a minute more
        "timeout": int(timeout) + 60,
    }
    snippet = {"env": env, "hooks": {args.event: [{"matcher": "*", "hooks": [hook]}]}}
    print(json.dumps(snippet, indent=2))
    print(
        "\n# Merge into ~/.claude/settings.json (every project) or .claude/settings.json\n"
        "# (this project; .claude/settings.local.json keeps it out of git). Put SAYSO_KEY in\n"
        "# the environment Claude Code starts from, or in settings.local.json's env.",
        file=sys.stderr,
    )
    return 0

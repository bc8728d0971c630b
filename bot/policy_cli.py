"""`sayso policy check [FILE]`, `sayso policy explain AGENT TOOL --args JSON` and
`sayso policy explain --proxy SERVER TOOL --args JSON` (the file's `proxy:` section)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bot.config import Settings
from bot.proxy.policy import ProxyPolicy, ProxyPolicyError, load_proxy_policy
from bot.service.policy.effective import Policies
from bot.service.policy.file import PolicyError, PolicyFile, load_policy
from bot.service.policy.report import explain, rows, table


def _load_agents_part(path: str, agents: Any) -> PolicyFile:
    """The file's `agents:` part, read by the agents' reader; the `proxy:` section beside it
    is read by bot/proxy/policy.py (the agents' reader does not know it yet)."""
    import yaml

    from bot.service.policy import file as policy_file

    try:
        root = yaml.compose(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return load_policy(path, agents)  # its own error, with the line
    if not isinstance(root, yaml.MappingNode):
        return load_policy(path, agents)
    kept = [
        (k, v) for k, v in root.value if not (isinstance(k, yaml.ScalarNode) and k.value == "proxy")
    ]
    if len(kept) == len(root.value):
        return load_policy(path, agents)
    filtered = yaml.MappingNode(root.tag, kept, root.start_mark, root.end_mark)
    return policy_file._Reader(path, agents).read(filtered)


def _policies(args: argparse.Namespace, settings: Settings) -> tuple[Policies, object]:
    from bot.serve import load_agents

    agents = load_agents(args.agents or settings.sayso_agents)
    policies = Policies(settings.sayso_approvers, settings.sayso_approval_ttl)
    path = args.file or settings.sayso_policy
    if path:
        policies.policy_file = _load_agents_part(path, agents)
    return policies, agents


PROXY_COLUMNS = ("server", "tool", "action", "approvers", "quorum", "rules")


def proxy_table(policy: ProxyPolicy) -> str:
    """One line per proxied server's tool entry: what it does and what it asks."""
    rows_: list[tuple[str, ...]] = []
    for name, server in policy.servers.items():
        for entry in server.tools:
            action = entry.action or ("approve if a rule matches" if entry.rules else "approve")
            who = ",".join(entry.gate.approvers) or "anyone"
            rules = ", ".join(r.name for r in entry.rules) or "-"
            rows_.append((name, entry.pattern, action, who, str(entry.gate.min_approvals), rules))
        unnamed = server.default or (
            "no decision" if name == "claude-code" else "allow if readOnlyHint, else approve"
        )
        rows_.append((name, "(others)", unnamed, "anyone", "1", "-"))
    widths = [max(len(c), *(len(r[i]) for r in rows_)) for i, c in enumerate(PROXY_COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(PROXY_COLUMNS, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows_]
    return "\n".join(lines)


def _arguments(text: str) -> dict[str, Any] | None:
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        print(f"sayso: --args is not JSON: {exc}", file=sys.stderr)
        return None
    if not isinstance(arguments, dict):
        print("sayso: --args must be a JSON object", file=sys.stderr)
        return None
    return arguments


def explain_proxy(args: argparse.Namespace, settings: Settings) -> int:
    """`sayso policy explain --proxy SERVER TOOL --args JSON`: no agents are loaded."""
    tool = args.tool or args.agent
    if not tool:
        print("sayso: name the tool: sayso policy explain --proxy SERVER TOOL", file=sys.stderr)
        return 2
    try:
        policy = load_proxy_policy(args.file or settings.sayso_policy)
    except ProxyPolicyError as exc:
        print(f"sayso: policy file rejected: {exc}", file=sys.stderr)
        return 1
    arguments = _arguments(args.args)
    if arguments is None:
        return 2
    server = policy.server(args.proxy)
    read_only = {"yes": True, "no": False}.get(args.read_only or "")
    verdict = server.decide(tool, arguments, read_only=read_only)
    action: str = verdict.action
    if action == "none":
        action = (
            "passes if the upstream marks it readOnlyHint: true, else needs approval "
            "(the hook: no decision, Claude Code's own rules apply)"
        )
    print(f"{args.proxy} {tool}: {action}")
    print(f"why: {verdict.why}")
    if verdict.action == "approve":
        gate = verdict.gate
        print(f"approvers: {', '.join(gate.approvers) or 'the defaults (SAYSO_APPROVERS)'}")
        print(f"min_approvals: {gate.min_approvals}")
        if gate.expires_in:
            print(f"expires_in: {int(gate.expires_in)} s")
        if gate.require_reason:
            print("require_reason: yes")
        if gate.escalate_after:
            print(f"escalate_after: {int(gate.escalate_after)} s to {', '.join(gate.escalate_to)}")
    return 0


def run_policy_command(args: argparse.Namespace, settings: Settings) -> int:
    """Print the check's table or the explanation; 1 (with `path:line: reason`) on a bad
    file, 2 on bad input."""
    if args.policy_command == "explain" and args.proxy:
        return explain_proxy(args, settings)
    try:
        policies, agents = _policies(args, settings)
        proxy = load_proxy_policy(args.file or settings.sayso_policy)
    except (PolicyError, ProxyPolicyError) as exc:
        print(f"sayso: policy file rejected: {exc}", file=sys.stderr)
        return 1
    from bot.service.registry import AgentRegistry

    assert isinstance(agents, AgentRegistry)
    if args.policy_command == "check":
        where = policies.policy_file.path if policies.policy_file else "the code (no file)"
        print(f"policy OK: {where}")
        print(table(rows(policies, agents)))
        if proxy.servers:
            print()
            print(proxy_table(proxy))
        return 0
    if not args.agent or not args.tool:
        print("sayso: name the agent and the tool (or --proxy SERVER TOOL)", file=sys.stderr)
        return 2
    agent = agents.get(args.agent)
    if agent is None:
        print(f"sayso: unknown agent {args.agent!r}", file=sys.stderr)
        return 2
    tool = agent.tools.get(args.tool)
    if tool is None:
        print(f"sayso: agent {agent.id} has no tool {args.tool!r}", file=sys.stderr)
        return 2
    arguments = _arguments(args.args)
    if arguments is None:
        return 2
    print(explain(policies, agent, tool, arguments))
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    policy = sub.add_parser("policy", help="check or explain the approval policy")
    policy_sub = policy.add_subparsers(dest="policy_command", required=True)
    check = policy_sub.add_parser("check", help="validate a policy file, print each tool's policy")
    check.add_argument("file", nargs="?", help="the policy file (default: SAYSO_POLICY)")
    check.add_argument("--agents", help="module:attribute naming an Agent or a list of them")
    how = policy_sub.add_parser("explain", help="which rule applies to a call, and why")
    how.add_argument("agent", nargs="?", help="the agent (or, with --proxy, the tool)")
    how.add_argument("tool", nargs="?")
    how.add_argument("--proxy", metavar="SERVER", help="a proxied server (sayso proxy --name)")
    how.add_argument(
        "--read-only",
        choices=["yes", "no"],
        help="with --proxy: whether the upstream marks the tool readOnlyHint",
    )
    how.add_argument("--args", default="{}", help="the call's arguments as JSON: '{\"a\": 1}'")
    how.add_argument("--file", help="the policy file (default: SAYSO_POLICY)")
    how.add_argument("--agents", help="module:attribute naming an Agent or a list of them")
    check.set_defaults(file=None)

"""`sayso policy check [FILE]` and `sayso policy explain AGENT TOOL --args JSON`."""

from __future__ import annotations

import argparse
import json
import sys

from bot.config import Settings
from bot.service.policy.effective import Policies
from bot.service.policy.file import PolicyError, load_policy
from bot.service.policy.report import explain, rows, table


def _policies(args: argparse.Namespace, settings: Settings) -> tuple[Policies, object]:
    from bot.serve import load_agents

    agents = load_agents(args.agents or settings.sayso_agents)
    policies = Policies(settings.sayso_approvers, settings.sayso_approval_ttl)
    path = args.file or settings.sayso_policy
    if path:
        policies.policy_file = load_policy(path, agents)
    return policies, agents


def run_policy_command(args: argparse.Namespace, settings: Settings) -> int:
    """Print the check's table or the explanation; 1 (with `path:line: reason`) on a bad
    file, 2 on bad input."""
    try:
        policies, agents = _policies(args, settings)
    except PolicyError as exc:
        print(f"sayso: policy file rejected: {exc}", file=sys.stderr)
        return 1
    from bot.service.registry import AgentRegistry

    assert isinstance(agents, AgentRegistry)
    if args.policy_command == "check":
        where = policies.policy_file.path if policies.policy_file else "the code (no file)"
        print(f"policy OK: {where}")
        print(table(rows(policies, agents)))
        return 0
    agent = agents.get(args.agent)
    if agent is None:
        print(f"sayso: unknown agent {args.agent!r}", file=sys.stderr)
        return 2
    tool = agent.tools.get(args.tool)
    if tool is None:
        print(f"sayso: agent {agent.id} has no tool {args.tool!r}", file=sys.stderr)
        return 2
    try:
        arguments = json.loads(args.args)
    except ValueError as exc:
        print(f"sayso: --args is not JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print("sayso: --args must be a JSON object", file=sys.stderr)
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
    how.add_argument("agent")
    how.add_argument("tool")
    how.add_argument("--args", default="{}", help="the call's arguments as JSON: '{\"a\": 1}'")
    how.add_argument("--file", help="the policy file (default: SAYSO_POLICY)")
    how.add_argument("--agents", help="module:attribute naming an Agent or a list of them")
    check.set_defaults(file=None)

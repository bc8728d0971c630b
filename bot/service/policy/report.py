"""The effective policy, as people read it: a table per tool, and why a call gets its rule."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from bot.agent import Agent, Tool
from bot.service.policy.api import ApiOverride, operator_policy
from bot.service.policy.effective import Policies
from bot.service.policy.rules import EffectivePolicy, apply_rule, evaluate
from bot.service.registry import AgentRegistry
from store.api import KeyPolicy

COLUMNS = ("agent", "tool", "approval", "approvers", "quorum", "self", "reason", "escalation")


def _who(approvers: tuple[str, ...]) -> str:
    return ",".join(approvers) or "anyone"


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def needs_approval(policies: Policies, agent: Agent, tool: Tool) -> str:
    """`always`, `never`, `by rule`, `answer` (manual, hitl) or `callable`, for the table."""
    if tool.kind in ("manual", "hitl"):
        return "answer"
    book = policies.policy_file
    override = book.override(agent.id, tool.name) if book else None
    if override is not None and override.require_approval is not None:
        return "always" if override.require_approval else "never"
    if tool.kind == "approval" or tool.require_approval is True:
        return "always"
    rules = policies.tool_settings(agent, tool).rules
    if rules and (tool.require_approval is None or tool.asks_by_rules):
        return "by rule"
    if callable(tool.require_approval):
        return "callable"
    return "always" if agent.require_approval is True else "never"


def rows(policies: Policies, agents: AgentRegistry) -> list[dict[str, str]]:
    """One row per tool, and one more per rule (its overrides)."""
    out: list[dict[str, str]] = []
    for agent in agents:
        for tool in agent.tools.values():
            own = policies.tool_settings(agent, tool)
            base = without_rules(policies, agent, tool)
            out.append(_row(agent.id, tool.name, needs_approval(policies, agent, tool), base))
            for index, rule in enumerate(own.rules):
                label = rule.name or f"rule {index + 1}"
                out.append(_row(agent.id, f"  └ {label}", "", apply_rule(base, index, rule)))
    return out + api_rows(policies)


def api_rows(policies: Policies) -> list[dict[str, str]]:
    """The file's `api:` entries (as a key without a policy of its own would get them)."""
    book = policies.policy_file
    out: list[dict[str, str]] = []
    for (key_name, tool_name), override in (book.api if book else {}).items():
        plain = ApiOverride(override.changes)
        base, _ = operator_policy(
            KeyPolicy(),
            plain,
            {},
            default_approvers=policies.default_approvers,
            default_ttl=policies.approval_ttl,
        )
        out.append(_row(f"api:{key_name}", tool_name, "always", base))
        for index, rule in enumerate(override.rules):
            label = rule.name or f"rule {index + 1}"
            out.append(_row(f"api:{key_name}", f"  └ {label}", "", apply_rule(base, index, rule)))
    return out


def without_rules(policies: Policies, agent: Agent, tool: Tool) -> EffectivePolicy:
    own = replace(policies.tool_settings(agent, tool), rules=())
    return evaluate(
        agent,
        own,
        {},
        default_approvers=policies.default_approvers,
        default_ttl=policies.approval_ttl,
    )


def _row(agent_id: str, tool: str, approval: str, p: EffectivePolicy) -> dict[str, str]:
    escalation = ""
    if p.escalate_after:
        escalation = f"{_span(p.escalate_after.total_seconds())} → {_who(p.escalate_to)}"
    return {
        "agent": agent_id,
        "tool": tool,
        "approval": approval,
        "approvers": _who(p.approvers),
        "quorum": str(p.min_approvals),
        "self": "yes" if p.allow_self_approval else "no",
        "reason": "required" if p.require_reason else "",
        "escalation": escalation,
    }


def table(rows_: list[dict[str, str]]) -> str:
    widths = {c: max(len(c), *(len(r[c]) for r in rows_)) for c in COLUMNS} if rows_ else {}
    if not rows_:
        return "(no tools)"
    lines = ["  ".join(c.ljust(widths[c]) for c in COLUMNS).rstrip()]
    lines.append("  ".join("-" * widths[c] for c in COLUMNS))
    lines += ["  ".join(r[c].ljust(widths[c]) for c in COLUMNS).rstrip() for r in rows_]
    return "\n".join(lines)


def explain(policies: Policies, agent: Agent, tool: Tool, arguments: dict[str, Any]) -> str:
    """Which rule applies to a call with these arguments, and why, in a few lines."""
    p = policies.call_policy(agent, tool, arguments)
    lines = [
        f"{agent.id}.{tool.name} {json.dumps(arguments, ensure_ascii=False)}",
        f"rule: {p.rule or '(none: the tool settings)'}",
        f"why: {p.why}",
        f"needs approval: {needs_approval(policies, agent, tool)}",
        f"approvers: {_who(p.approvers)}",
        f"min_approvals: {p.min_approvals}",
        f"allow_self_approval: {'yes' if p.allow_self_approval else 'no'}",
        f"require_reason: {'yes' if p.require_reason else 'no'}",
        f"expires_in: {_span(p.expires_in.total_seconds())}",
    ]
    if p.escalate_after:
        lines.append(
            f"escalation: after {_span(p.escalate_after.total_seconds())} to {_who(p.escalate_to)}"
        )
    return "\n".join(lines)

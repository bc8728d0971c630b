"""Approval policy: who must approve a call, how many of them, until when, and with what.

Evaluated once, when a call is proposed (and again when an edit changes its arguments), and
stored with the approval request: a request keeps the policy it was created with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from bot.agent import Agent, Tool
from bot.agent.rules import Rule, rule_label
from bot.agent.util import parse_duration
from store import ApprovalRequestRecord, RequestPolicy


def seconds(value: float | str | timedelta | None) -> timedelta | None:
    """A duration as code or the policy file writes it (`"30m"`, seconds), or None."""
    return None if value is None else parse_duration(value)


@dataclass(frozen=True)
class EffectivePolicy:
    """The policy one call gets: the tool's settings, or those of the first matching rule."""

    approvers: tuple[str, ...]
    min_approvals: int
    expires_in: timedelta
    allow_self_approval: bool
    require_reason: bool
    escalate_after: timedelta | None = None
    escalate_to: tuple[str, ...] = ()
    standing_approval: timedelta | None = None
    rule: str | None = None
    """The label of the rule that applies (None: the tool's own settings)."""
    why: str = ""
    """Why this policy applies, in a sentence (for `sayso policy explain`)."""

    def request_policy(self, now: datetime) -> RequestPolicy:
        return RequestPolicy(
            approvers=list(self.approvers),
            expires_at=now + self.expires_in,
            allow_self_approval=self.allow_self_approval,
            min_approvals=self.min_approvals,
            require_reason=self.require_reason,
            rule=self.rule,
            escalate_at=now + self.escalate_after if self.escalate_after else None,
            escalate_to=list(self.escalate_to),
            standing_seconds=self.standing_seconds,
        )

    @property
    def standing_seconds(self) -> int | None:
        """A standing approval is offered only where one approval suffices."""
        if self.standing_approval is None or self.min_approvals > 1:
            return None
        return max(1, int(self.standing_approval.total_seconds()))


@dataclass(frozen=True)
class ToolSettings:
    """A tool's own approval settings, before any rule (code, or the policy file)."""

    approvers: tuple[str, ...] = ()
    min_approvals: int = 1
    expires_in: timedelta | None = None
    allow_self_approval: bool = True
    require_reason: bool = False
    escalate_after: timedelta | None = None
    escalate_to: tuple[str, ...] = ()
    standing_approval: timedelta | None = None
    rules: tuple[Rule, ...] = field(default_factory=tuple)


def tool_settings(tool: Tool) -> ToolSettings:
    return ToolSettings(
        approvers=tuple(tool.approvers),
        min_approvals=tool.min_approvals,
        expires_in=seconds(tool.expires_in),
        allow_self_approval=tool.allow_self_approval,
        require_reason=tool.require_reason,
        escalate_after=tool.escalate_after,
        escalate_to=tool.escalate_to,
        standing_approval=tool.standing_approval,
        rules=tuple(tool.rules),
    )


def evaluate(
    agent: Agent,
    own: ToolSettings,
    arguments: dict[str, Any],
    *,
    default_approvers: Sequence[str],
    default_ttl: timedelta,
    tool: Tool | None = None,
) -> EffectivePolicy:
    """The policy of one call with these arguments: the first matching rule, else the tool's."""
    approvers = own.approvers or tuple(agent.approvers) or tuple(default_approvers)
    base = EffectivePolicy(
        approvers=approvers,
        min_approvals=own.min_approvals,
        expires_in=own.expires_in or default_ttl,
        allow_self_approval=own.allow_self_approval,
        require_reason=own.require_reason,
        escalate_after=own.escalate_after,
        escalate_to=own.escalate_to,
        standing_approval=own.standing_approval,
        why="no rule matches: the tool's own settings apply",
    )
    checked = _validated(tool, arguments)
    for index, rule in enumerate(own.rules):
        if rule.matches(checked):
            return apply_rule(base, index, rule)
    if not own.rules:
        return replace(base, why="the tool has no rules")
    return base


def _validated(tool: Tool | None, arguments: dict[str, Any]) -> dict[str, Any]:
    if tool is None:
        return dict(arguments or {})
    try:
        return tool.validate(arguments)
    except ValueError:
        return dict(arguments or {})


def apply_rule(base: EffectivePolicy, index: int, rule: Rule) -> EffectivePolicy:
    """`base` with what `rule` (the `index`-th) sets."""
    label = rule_label(index, rule)
    return EffectivePolicy(
        approvers=tuple(rule.approvers) if rule.approvers is not None else base.approvers,
        min_approvals=rule.min_approvals or base.min_approvals,
        expires_in=seconds(rule.expires_in) or base.expires_in,
        allow_self_approval=(
            base.allow_self_approval
            if rule.allow_self_approval is None
            else rule.allow_self_approval
        ),
        require_reason=base.require_reason if rule.require_reason is None else rule.require_reason,
        escalate_after=seconds(rule.escalate_after) or base.escalate_after,
        escalate_to=tuple(rule.escalate_to) if rule.escalate_to is not None else base.escalate_to,
        standing_approval=base.standing_approval,
        rule=label,
        why=f"{label} (#{index + 1}) is the first rule whose condition holds",
    )


def stricter(new: EffectivePolicy, old: ApprovalRequestRecord) -> bool:
    """Does `new` ask more than the policy stored with `old`? (An edit then applies it.)"""
    if new.rule == old.policy.rule:
        return False
    return (
        new.min_approvals > old.policy.min_approvals
        or (new.require_reason and not old.policy.require_reason)
        or (old.policy.allow_self_approval and not new.allow_self_approval)
        or (bool(new.approvers) and set(new.approvers) != set(old.policy.approvers))
    )

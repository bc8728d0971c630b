"""Rules: who must approve a call, chosen by the call's validated arguments.

`@tool(rules=[Rule(when=lambda a: a["environment"] == "production", approvers=["S_SRE"],
min_approvals=2)])`: the first rule whose `when` holds sets the approval policy of that call;
a field left None keeps the tool's own setting. A tool that asks for no approval itself
asks for it exactly when a rule matches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

log = logging.getLogger("sayso.agent")

Predicate = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Rule:
    """One rule of a tool's approval policy (a field left None keeps the tool's setting).

    Args:
        when: a predicate over the call's validated arguments (a dict). One that raises
            counts as matching: an error never loosens the policy.
        approvers: Slack user or user group ids who may decide calls this rule matches.
        min_approvals: how many distinct allowed people must approve.
        expires_in: seconds (or a timedelta) before an undecided request expires.
        allow_self_approval: whether the person who started the run may approve.
        require_reason: approving needs a written reason.
        escalate_after: seconds (or a timedelta) after which `escalate_to` is called in.
        escalate_to: user or group ids who may decide too once the request escalates.
        name: how cards, logs and `sayso policy explain` name the rule (default: `rule N`).
    """

    when: Predicate
    approvers: Sequence[str] | None = None
    min_approvals: int | None = None
    expires_in: float | str | timedelta | None = None
    allow_self_approval: bool | None = None
    require_reason: bool | None = None
    escalate_after: float | str | timedelta | None = None
    escalate_to: Sequence[str] | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if not callable(self.when):
            raise TypeError("Rule(when=...) takes a predicate over the call's arguments")
        if self.min_approvals is not None and self.min_approvals < 1:
            raise ValueError("Rule min_approvals must be at least 1")

    def matches(self, arguments: dict[str, Any]) -> bool:
        try:
            return bool(self.when(arguments))
        except Exception as exc:  # fail closed: the rule applies
            log.warning("event=rule_failed rule=%s error=%r: treated as matching", self.name, exc)
            return True


def first_match(rules: Sequence[Rule], arguments: dict[str, Any]) -> tuple[int, Rule] | None:
    """The first rule matching `arguments` and its index, or None."""
    for index, rule in enumerate(rules):
        if rule.matches(arguments):
            return index, rule
    return None


def rule_label(index: int, rule: Rule) -> str:
    """`production` (its name), else `rule 1` (1-based)."""
    return rule.name or f"rule {index + 1}"

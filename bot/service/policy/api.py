"""The approval policy of a request made over the API: the operator's, which a caller may only
narrow (issue 21, finding 7).

The operator sets it twice over: on the key (`sayso keys create NAME --approvers ...
--min-approvals N --no-self-approval --expires-in 24h`) and, per key, tool and arguments, in
the policy file's `api:` section (its settings override the key's, the first matching rule
overrides both). A caller may then ask for less: a subset of the approvers, a higher quorum, no
self-approval, a shorter expiry. Asking for more is refused, naming the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from bot.service.policy.rules import EffectivePolicy, ToolSettings, apply_rule
from store.api import KeyPolicy


class PolicyRefusal(ValueError):
    """A caller asked for more than the key's policy allows: `field: why`."""


@dataclass(frozen=True)
class Asked:
    """What a caller asked for (None: nothing, the policy's value applies)."""

    approvers: tuple[str, ...] = ()
    min_approvals: int | None = None
    allow_self_approval: bool | None = None
    expires_in: float | None = None


@dataclass(frozen=True)
class ApiOverride:
    """The policy file's settings for a key and tool (`api:` section): the settings it names
    (`changes`, ToolSettings fields) and its rules."""

    changes: dict[str, Any]
    rules: tuple[Any, ...] = ()


def operator_policy(
    key: KeyPolicy,
    override: ApiOverride | None,
    arguments: dict[str, Any],
    *,
    default_approvers: Sequence[str],
    default_ttl: timedelta,
) -> tuple[EffectivePolicy, bool]:
    """The policy the operator set for this request: (policy, whether its expiry is a limit
    rather than only a default)."""
    own = ToolSettings(
        approvers=key.approvers or tuple(default_approvers),
        min_approvals=key.min_approvals or 1,
        expires_in=timedelta(seconds=key.expires_in) if key.expires_in else None,
        allow_self_approval=True if key.allow_self_approval is None else key.allow_self_approval,
    )
    if override is not None:
        own = replace(own, **override.changes, rules=override.rules)
    capped = own.expires_in is not None
    base = EffectivePolicy(
        approvers=own.approvers,
        min_approvals=own.min_approvals,
        expires_in=own.expires_in or default_ttl,
        allow_self_approval=own.allow_self_approval,
        require_reason=own.require_reason,
        why="the key's policy" if override is None else "the policy file's settings",
    )
    for index, rule in enumerate(own.rules):
        if rule.matches(arguments):
            ruled = apply_rule(base, index, rule)
            return replace(ruled, escalate_after=None, escalate_to=()), (
                capped or rule.expires_in is not None
            )
    return base, capped


def narrowed(policy: EffectivePolicy, capped: bool, asked: Asked, key_name: str) -> EffectivePolicy:
    """`policy` with what the caller asked for, when that narrows it; PolicyRefusal when the
    caller asked for more than it allows."""
    approvers = policy.approvers
    if asked.approvers:
        outside = [a for a in asked.approvers if policy.approvers and a not in policy.approvers]
        if outside:
            raise PolicyRefusal(
                f"approvers: {outside[0]} is not one of key {key_name!r}'s approvers "
                f"({', '.join(policy.approvers)}); name a subset of them, or none"
            )
        approvers = tuple(dict.fromkeys(asked.approvers))
    needed = policy.min_approvals
    if asked.min_approvals is not None:
        if asked.min_approvals < policy.min_approvals:
            raise PolicyRefusal(
                f"min_approvals: key {key_name!r} needs at least {policy.min_approvals}"
            )
        needed = asked.min_approvals
    if approvers and not any(a.startswith("S") for a in approvers) and needed > len(approvers):
        raise PolicyRefusal(
            f"min_approvals: {needed} approvals, but only {len(approvers)} approver(s) named"
        )
    self_ok = policy.allow_self_approval
    if asked.allow_self_approval is not None:
        if asked.allow_self_approval and not policy.allow_self_approval:
            raise PolicyRefusal(
                f"allow_self_approval: key {key_name!r} does not allow self-approval"
            )
        self_ok = asked.allow_self_approval
    expires_in = policy.expires_in
    if asked.expires_in is not None:
        wanted = timedelta(seconds=asked.expires_in)
        if capped and wanted > policy.expires_in:
            limit = int(policy.expires_in.total_seconds())
            raise PolicyRefusal(f"expires_in: key {key_name!r} allows at most {limit} seconds")
        expires_in = wanted
    return replace(
        policy,
        approvers=approvers,
        min_approvals=needed,
        allow_self_approval=self_ok,
        expires_in=expires_in,
    )

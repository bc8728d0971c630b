"""The policy in force: the code's settings, overridden by the policy file when one is loaded."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.agent import Agent, PendingToolCall, RunResult, Tool, ToolCall
from bot.service.policy.file import PolicyFile
from bot.service.policy.rules import EffectivePolicy, ToolSettings, evaluate, tool_settings
from store import RequestPolicy


class Policies:
    """Evaluates the policy of new calls (the file, once loaded, overrides the code)."""

    def __init__(
        self,
        default_approvers: Sequence[str] = (),
        approval_ttl: timedelta = timedelta(hours=24),
        policy_file: PolicyFile | None = None,
    ) -> None:
        self.default_approvers = tuple(default_approvers)
        self.approval_ttl = approval_ttl
        self.policy_file = policy_file
        """SAYSO_POLICY, once loaded: new requests use it; existing ones keep theirs."""

    def call_policy(self, agent: Agent, tool: Tool, arguments: dict[str, Any]) -> EffectivePolicy:
        """The approval policy of one call of `tool` with these arguments."""
        return evaluate(
            agent,
            self.tool_settings(agent, tool),
            arguments,
            default_approvers=self.default_approvers,
            default_ttl=self.approval_ttl,
            tool=tool,
        )

    def tool_settings(self, agent: Agent, tool: Tool) -> ToolSettings:
        """A tool's own approval settings (a policy file may override the code's)."""
        if self.policy_file is not None:
            return self.policy_file.settings(agent, tool)
        return tool_settings(tool)

    def needs_approval(
        self, agent: Agent
    ) -> Callable[[ToolCall, dict[str, Any]], Awaitable[bool]] | None:
        """Whether a new call needs approval, when the policy file says more than the code
        (its `require_approval`, or its rules); None: the tools decide, as written."""
        book = self.policy_file
        if book is None or not any(a == agent.id for a, _ in book.tools):
            return None

        async def needs(call: ToolCall, context: dict[str, Any]) -> bool:
            override = book.override(agent.id, call.name)
            tool = agent.tools.get(call.name)
            if override is not None and override.require_approval is not None:
                return override.require_approval
            if tool is not None and override is not None and override.has_rules:
                if self.call_policy(agent, tool, call.arguments).rule is not None:
                    return True
            return await agent.call_kind(call, context) == "approval"

        return needs

    def request_policy(
        self, agent: Agent
    ) -> Callable[[RunResult, PendingToolCall | None], RequestPolicy]:
        """The policy a new approval request of `agent` is stored with (the store asks, once
        per request, as a pause is saved)."""

        def policy(result: RunResult, pending: PendingToolCall | None) -> RequestPolicy:
            tool = agent.tools.get(pending.call.name) if pending else None
            now = datetime.now(UTC)
            if tool is None or pending is None or pending.kind != "approval":
                approvers = (tool.approvers if tool else ()) or agent.approvers
                ttl = self.approval_ttl
                if tool is not None and tool.expires_in is not None:
                    ttl = timedelta(seconds=tool.expires_in)
                return RequestPolicy(
                    approvers=list(approvers or self.default_approvers),
                    expires_at=now + ttl,
                    allow_self_approval=tool.allow_self_approval if tool else True,
                )
            return self.call_policy(agent, tool, pending.call.arguments).request_policy(now)

        return policy

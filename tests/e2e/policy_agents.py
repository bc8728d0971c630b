"""The `ops` agent of the approval-policy tests: its tools need quorums, rules, reasons."""

from __future__ import annotations

from typing import Literal

from bot.agent import Agent, Rule, ToolContext, tool
from bot.agent.models import ModelSettings, OpenAIChatModel
from tests.e2e.agents import SideEffects


def make_policy_agents(base_url: str, effects: SideEffects) -> list[Agent]:
    @tool(require_approval=True, min_approvals=2, allow_self_approval=False)
    async def deploy(
        environment: Literal["staging", "production"],
        version: str,
        replicas: int = 2,
        ctx: ToolContext | None = None,
    ) -> dict:
        """Deploy a version to an environment (two people, never the requester)."""
        effects.deploys.append(
            {
                "environment": environment,
                "version": version,
                "replicas": replicas,
                "key": ctx.idempotency_key if ctx else None,
            }
        )
        return {"status": "deployed", "environment": environment, "version": version}

    @tool(require_approval=True, require_reason=True)
    def restart(service: str, ctx: ToolContext | None = None) -> dict:
        """Restart a service (approving needs a reason)."""
        effects.restarts.append(service)
        effects.reasons.append(ctx.decision_reason if ctx else None)
        return {"restarted": service}

    def production(arguments: dict) -> bool:
        return arguments["environment"] == "production"

    @tool(rules=[Rule(when=production, approvers=["S_APPROVERS"], name="production")])
    def release(environment: Literal["staging", "production"], version: str) -> dict:
        """Release a version: production needs the approvers group, staging nobody."""
        effects.deploys.append({"environment": environment, "version": version})
        return {"released": version, "environment": environment}

    @tool(require_approval=True, rules=[Rule(when=production, min_approvals=2, name="prod")])
    def scale(environment: Literal["staging", "production"], replicas: int) -> dict:
        """Scale a service: anyone approves staging; production needs two people."""
        effects.deploys.append({"environment": environment, "replicas": replicas})
        return {"scaled": replicas, "environment": environment}

    @tool(
        require_approval=True,
        approvers=["U_APPROVER"],
        escalate_after=1,
        escalate_to=["U_MEMBER"],
    )
    def rollback(service: str) -> dict:
        """Roll a service back: Avery decides; after a second, Sam is called in too."""
        effects.restarts.append(f"rollback:{service}")
        return {"rolled_back": service}

    @tool(require_approval=True, standing_approval="1h")
    def get_logs(service: str) -> str:
        """Read a service's logs (approvers may allow it in a thread for an hour)."""
        effects.restarts.append(f"logs:{service}")
        return f"logs of {service}"

    @tool(require_approval=True, standing_approval="2s")
    def get_metrics(service: str) -> str:
        """Read a service's metrics (a standing approval lasts two seconds)."""
        effects.restarts.append(f"metrics:{service}")
        return f"metrics of {service}"

    def staging(arguments: dict) -> bool:
        return arguments["environment"] == "staging"

    @tool(
        require_approval=True,
        standing_approval="1h",
        allow_self_approval=False,
        rules=[
            Rule(when=production, approvers=["U_APPROVER2"], require_reason=True, name="prod"),
            Rule(when=staging, approvers=["U_APPROVER"], name="staging"),
        ],
    )
    def ship(environment: Literal["staging", "production"], version: str) -> dict:
        """Ship a version: Avery decides staging (and may allow it in a thread for an hour);
        production is Blake's, with a reason."""
        effects.deploys.append({"environment": environment, "version": version})
        return {"shipped": version, "environment": environment}

    @tool(require_approval=True, approvers=["S_APPROVERS"], standing_approval="1h")
    def get_traces(service: str) -> str:
        """Read a service's traces (the approvers group decides)."""
        effects.restarts.append(f"traces:{service}")
        return f"traces of {service}"

    model = OpenAIChatModel("fake", base_url=base_url, api_key="test-key")
    settings = ModelSettings(timeout=5, max_retries=1, backoff_base=0.01, backoff_max=0.05)
    ops = Agent(
        id="ops",
        model=model,
        instructions="You run operations.",
        tools=[deploy, restart, release, scale, rollback, get_logs, get_metrics, ship, get_traces],
        model_settings=settings,
    )
    return [ops]

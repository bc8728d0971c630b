"""Agents for end-to-end tests, speaking to the fake OpenAI-compatible model over HTTP."""

from __future__ import annotations

from typing import Annotated, Literal

from bot.agent import (
    Agent,
    AgentHumanReviewRequest,
    HumanReviewContext,
    Sensitive,
    ToolContext,
    tool,
)
from bot.agent.models import ModelSettings, OpenAIChatModel


class SideEffects:
    """What tool bodies did (the tests' view of the outside world)."""

    def __init__(self) -> None:
        self.deploys: list[dict] = []
        self.restarts: list[str] = []
        self.secrets: list[tuple[str, str]] = []
        self.reasons: list[str | None] = []  # ToolContext.decision_reason, per execution


def make_agents(base_url: str, effects: SideEffects) -> list[Agent]:
    @tool
    def get_status(service: str) -> dict:
        """Current health of a service."""
        return {"service": service, "healthy": True}

    @tool(require_approval=True)
    async def deploy(
        environment: Literal["staging", "production"],
        version: str,
        replicas: int = 2,
        ctx: ToolContext | None = None,
    ) -> dict:
        """Deploy a version to an environment."""
        effects.deploys.append(
            {
                "environment": environment,
                "version": version,
                "replicas": replicas,
                "key": ctx.idempotency_key if ctx else None,
            }
        )
        return {"status": "deployed", "environment": environment, "version": version}

    @tool(
        require_approval=True,
        approvers=["S_APPROVERS"],
        allow_self_approval=False,
        allowed_decisions=("approve", "reject"),
        confirm=True,
    )
    def restart(service: str) -> dict:
        """Restart a service (approvers group only, never the requester)."""
        effects.restarts.append(service)
        return {"restarted": service}

    @tool(require_approval=True)
    def set_secret(name: str, value: Annotated[str, Sensitive()]) -> dict:
        """Store a secret in the vault (its value is sensitive)."""
        if value == "reject-me-please":
            raise RuntimeError(f"the vault refused {value}")
        effects.secrets.append((name, value))
        return {"stored": name}

    @tool(kind="hitl")
    def ask_user(question: str) -> str:
        """Ask the person a question."""
        raise NotImplementedError

    @tool(kind="manual")
    def ticket_lookup(ticket_id: str) -> dict:
        """Look a ticket up (someone with access answers)."""
        raise NotImplementedError

    def review(ctx: HumanReviewContext) -> AgentHumanReviewRequest | None:
        content = ctx.response.message.content or ""
        if content.startswith("BOOM"):
            raise RuntimeError("the review hook crashed")
        if content.startswith("DRAFT"):
            return AgentHumanReviewRequest("Customer reply needs sign-off", {"draft": content})
        return None

    model = OpenAIChatModel("fake", base_url=base_url, api_key="test-key")
    settings = ModelSettings(timeout=5, max_retries=1, backoff_base=0.01, backoff_max=0.05)
    ops = Agent(
        id="ops",
        model=model,
        instructions="You run operations.",
        tools=[get_status, deploy, restart, ask_user, ticket_lookup, set_secret],
        human_review=review,
        model_settings=settings,
        channel="C_OPS",  # cards for others, when a run is in someone's side pane
    )
    return [ops]

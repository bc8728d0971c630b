"""The agent the saved runs of the corpus were made with, and continue with.

Frozen: the saved runs name these tools, their arguments and call ids. Add tools if a new
schema version needs them; never rename or change one (an older saved run would no longer fit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from bot import Agent, AgentHumanReviewRequest, HumanReviewContext, ModelSettings, tool
from bot.agent.models import Model
from tests.agent.ops import Ledger

CORPUS = Path(__file__).resolve().parent

STAGING = {"environment": "staging", "version": "v2"}
PRODUCTION = {"environment": "production", "version": "v2"}
EDITED = {"environment": "staging", "version": "v3"}  # what a reviewer changed PRODUCTION to

SETTINGS = ModelSettings(timeout=5.0, max_retries=1, backoff_base=0.001, backoff_max=0.01)


def review_first_response(ctx: HumanReviewContext) -> AgentHumanReviewRequest | None:
    """A person reviews the first model response of runs started with {"review": true}."""
    if ctx.context.get("review") and ctx.step == 1:
        return AgentHumanReviewRequest("Check before it goes out", payload={"draft": ctx.output})
    return None


def corpus_agent(model: Model, ledger: Ledger) -> Agent:
    """`ops`, with one tool of each kind; every body that runs is written in `ledger`."""

    @tool(require_approval=True)
    def deploy(environment: Literal["staging", "production"], version: str) -> dict:
        """Deploy a version of the service to an environment."""
        ledger.add("deploy", environment=environment, version=version)
        return {"deployed": version, "environment": environment}

    @tool
    def get_status(service: str) -> dict:
        """Current status of a service."""
        ledger.add("get_status", service=service)
        return {"service": service, "healthy": True}

    @tool(kind="hitl")
    def ask_user(question: str) -> str:
        """Ask the requester a question."""
        raise AssertionError("a hitl body never runs")

    @tool(kind="manual")
    def ticket_lookup(ticket_id: str) -> dict:
        """Look a ticket up (answered by the support team)."""
        raise AssertionError("a manual body never runs")

    return Agent(
        id="ops",
        model=model,
        instructions="You run operations.",
        tools=[deploy, get_status, ask_user, ticket_lookup],
        human_review=review_first_response,
        model_settings=SETTINGS,
    )

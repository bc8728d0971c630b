"""The bundled `ops` agent: one of each tool kind, and a review pause for customer replies.

With no model key it runs on the offline `scripted:ops` model below, so `sayso demo` works on
a fresh machine; with OPENAI_API_KEY or OPENAI_BASE_URL set it uses `openai:gpt-4o-mini`
at that endpoint (any OpenAI-compatible server).

Try: "deploy v2 to staging", "restart the api", "look up ticket 42",
"draft a reply to the refund request", "help me with something".
"""

from __future__ import annotations

import json
import re
from typing import Literal

from bot.agent import Agent, AgentHumanReviewRequest, HumanReviewContext, ToolContext, tool
from bot.agent.messages import Message
from bot.agent.models.base import ToolSpec
from bot.agent.models.config import ProviderSettings
from bot.agent.models.scripted import ScriptedModel, ScriptReply, call, register_script

DEPLOYS: list[dict] = []  # what "ran", so the demo and tests can see side effects


@tool
def get_status(service: str) -> dict:
    """Current health and version of a service."""
    return {"service": service, "healthy": True, "version": "v1", "replicas": 3}


@tool(require_approval=True)
async def deploy(
    environment: Literal["staging", "production"], version: str, ctx: ToolContext
) -> dict:
    """Deploy a version of the app to an environment."""
    DEPLOYS.append({"environment": environment, "version": version, "key": ctx.idempotency_key})
    return {"status": "deployed", "environment": environment, "version": version}


@tool(require_approval=True, allowed_decisions=("approve", "reject"), confirm=True)
def restart_service(service: str, reason: str = "requested in Slack") -> dict:
    """Restart every replica of a service (brief downtime)."""
    return {"service": service, "restarted": True, "reason": reason}


@tool(kind="hitl")
def ask_user(question: str) -> str:
    """Ask the person a question and wait for their answer."""
    raise NotImplementedError  # a person answers in place of the body


@tool(kind="manual")
def ticket_lookup(ticket_id: str) -> dict:
    """Look a support ticket up (someone with access to the ticket system answers)."""
    raise NotImplementedError  # another person or system supplies the output


def review_customer_replies(ctx: HumanReviewContext) -> AgentHumanReviewRequest | None:
    content = ctx.response.message.content or ""
    if content.startswith("Draft reply"):
        return AgentHumanReviewRequest("A customer-facing reply needs sign-off", {"draft": content})
    return None


# -- the offline script ------------------------------------------------------------------


def _since_request(messages: list[Message]) -> tuple[str, dict[str, str], bool]:
    """The latest request, tool results since then, and whether it was a review answer."""
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    before = messages[last_user - 1] if last_user > 0 else None
    reviewed = bool(
        before and before.role == "assistant" and (before.content or "").startswith("Draft reply")
    )
    results = {m.name or "": m.content or "" for m in messages[last_user + 1 :] if m.role == "tool"}
    return messages[last_user].content or "", results, reviewed


def _error(content: str) -> str | None:
    try:
        data = json.loads(content)
    except ValueError:
        return None
    return data.get("error") if isinstance(data, dict) else None


def _deploy_reply(request: str, results: dict[str, str]) -> ScriptReply:
    if "get_status" not in results:
        service = "api" if "api" in request else "web"
        return call("get_status", service=service)
    if "deploy" not in results:
        env = "production" if re.search(r"\bprod(uction)?\b", request) else "staging"
        named = re.search(r"\bv\d+(?:\.\d+)*\b", request)
        version = named.group(0) if named else "v2"
        return call("deploy", environment=env, version=version)
    error = _error(results["deploy"])
    if error:
        return f"I did not deploy: {error}"
    data = json.loads(results["deploy"])
    ran = data.get("arguments_used") or data
    note = " (a reviewer changed the arguments)" if "arguments_used" in data else ""
    version, env = ran["version"], ran["environment"]
    status = json.loads(results.get("get_status") or "{}")
    health = "healthy" if isinstance(status, dict) and status.get("healthy") else "checked"
    return (
        f"### Deployed {version} to {env}{note}. :rocket:\n\n"
        f"| step | result |\n|---|---|\n| status before | {health} |\n"
        f"| deploy | `{version}` on **{env}** |\n\n"
        f"**{env.capitalize()}** now runs `{version}`."
    )


@register_script("ops")
def ops_script(messages: list[Message], tools: list[ToolSpec]) -> ScriptReply:
    request, results, reviewed = _since_request(messages)
    text = request.lower()
    if reviewed:
        return f"Sent the reviewed reply. Reviewer's note: {request}"
    if "deploy" in text:
        return _deploy_reply(text, results)
    if "restart" in text:
        if "restart_service" not in results:
            return call("restart_service", service="api" if "api" in text else "web")
        error = _error(results["restart_service"])
        return (
            f"Restart not done: {error}"
            if error
            else "Restarted the service. All replicas are healthy."
        )
    if "ticket" in text:
        if "ticket_lookup" not in results:
            number = re.search(r"\d+", text)
            return call("ticket_lookup", ticket_id=number.group(0) if number else "1")
        return f"Here is the ticket: {results['ticket_lookup']}"
    if "refund" in text or "reply" in text:
        return "Draft reply: Hello! We have refunded your order; it will show within 5 days."
    if "ask_user" not in results:
        return call("ask_user", question="What would you like me to do: deploy, restart, a ticket?")
    return (
        f"Thanks, you said: {results['ask_user']}. Ask me to deploy, restart or look up a ticket."
    )


def _provider_configured() -> bool:
    """A real model when a key or a non-default OpenAI-compatible endpoint is configured."""
    settings = ProviderSettings()
    default_url = ProviderSettings.model_fields["openai_base_url"].default
    return bool(settings.openai_api_key) or settings.openai_base_url != default_url


ops = Agent(
    id="ops",
    model="openai:gpt-4o-mini"
    if _provider_configured()
    else ScriptedModel("ops", stream_delay=0.03),  # streams word by word, as a model does
    instructions=(
        "You are an operations assistant in Slack. Check status before deploying. "
        "Ask the user when a request is unclear."
    ),
    tools=[get_status, deploy, restart_service, ask_user, ticket_lookup],
    human_review=review_customer_replies,
    description="Deploys, restarts, tickets, and customer replies (a demo agent)",
)

agents = [ops]

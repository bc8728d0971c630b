"""The Pydantic AI adapter (bot.adapters.pydantic_ai) against the real bot: a tool that
requires approval runs once with the approver's edited arguments, a denial's reason reaches
the model, and a restarted driver finds the same card and the same decision."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, ToolApproved
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.adapters.pydantic_ai import resolve, run_with_approvals
from bot.client import AsyncSaysoClient
from tests.e2e.api_flows import make_key
from tests.e2e.harness import Harness, has_button
from tests.helpers.views import filled_views


def scaling_agent(ran: list[tuple[str, int]]) -> Agent[None, str | DeferredToolRequests]:
    """Asks to scale `api` to 2 replicas, then says what the tool returned."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        returns = (
            [p for p in getattr(last, "parts", []) if isinstance(p, ToolReturnPart)]
            if isinstance(last, ModelRequest)
            else []
        )
        if returns:
            return ModelResponse(parts=[TextPart(f"tool said: {returns[0].content}")])
        args = {"service": "api", "replicas": 2}
        return ModelResponse(parts=[ToolCallPart("scale", args, tool_call_id="call-1")])

    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(model), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def scale(service: str, replicas: int = 1) -> str:
        """Scale a service."""
        ran.append((service, replicas))
        return f"{service} x{replicas}"

    return agent


def cards(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.sandbox.messages("C_GENERAL") if has_button(m, "reject")]


async def one_card(h: Harness) -> dict[str, Any]:
    return (await h.sandbox.wait_for(lambda sb: cards(h) or None, timeout=10))[0]


async def test_approved_with_edited_arguments_runs_the_tool_once(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    ran: list[tuple[str, int]] = []
    running = asyncio.create_task(
        run_with_approvals(scaling_agent(ran), "scale api", client, channel="C_GENERAL")
    )
    card = await one_card(h)
    assert has_button(card, "edit")  # the tool's parameter schema enables Edit
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "5"})
    result = await asyncio.wait_for(running, 20)
    assert result.output == "tool said: api x5"
    assert ran == [("api", 5)]


async def test_denied_the_model_sees_the_reason(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    ran: list[tuple[str, int]] = []
    running = asyncio.create_task(
        run_with_approvals(scaling_agent(ran), "scale api", client, channel="C_GENERAL")
    )
    card = await one_card(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "freeze until Monday"})
    result = await asyncio.wait_for(running, 20)
    assert result.output == "tool said: freeze until Monday"
    assert ran == []


async def test_a_restarted_driver_finds_the_same_card_and_decision(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    ran: list[tuple[str, int]] = []
    agent = scaling_agent(ran)
    first = await agent.run("scale api")
    assert isinstance(first.output, DeferredToolRequests)

    resolving = asyncio.create_task(resolve(agent, first, client, channel="C_GENERAL"))
    card = await one_card(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "3"})
    before = await asyncio.wait_for(resolving, 20)

    # The driver restarts before continuing: resolving the same requests again neither posts
    # a second card nor waits for a second decision.
    again = await asyncio.wait_for(resolve(agent, first.output, client, channel="C_GENERAL"), 10)
    assert (
        again.approvals
        == before.approvals
        == {"call-1": ToolApproved(override_args={"service": "api", "replicas": 3})}
    )
    asked = [m for m in h.sandbox.messages("C_GENERAL") if "scale" in str(m.get("blocks"))]
    assert len(asked) == 1

    done = await agent.run(message_history=first.all_messages(), deferred_tool_results=again)
    assert done.output == "tool said: api x3"
    assert ran == [("api", 3)]


def docs_example() -> str:
    text = (Path(__file__).parents[2] / "docs" / "integrations.md").read_text()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


async def test_the_docs_example_runs(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    h = harness
    token, _ = await make_key(h)
    code = docs_example().replace("C0123DEPLOY", "C_GENERAL")
    for name, value in {"MODEL": "test", "SAYSO_URL": h.url, "SAYSO_KEY": token}.items():
        monkeypatch.setenv(name, value)
    running = asyncio.create_task(asyncio.to_thread(exec, code, {"__name__": "example"}))
    card = await one_card(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await asyncio.wait_for(running, 20)
    assert "now runs" in capsys.readouterr().out


def test_keys_can_be_scoped_to_a_conversation() -> None:
    """A test model may reuse call ids across runs: scoping the key keeps two conversations'
    calls on two requests, while the same call in one conversation keeps its one request."""
    from pydantic_ai.messages import ToolCallPart

    from bot.adapters.pydantic_ai import idempotency_key

    call = ToolCallPart(tool_name="deploy", args={"env": "prod"}, tool_call_id="call_1")
    assert idempotency_key(call) == "pydantic-ai:call_1"
    assert idempotency_key(call, "conv-a") == idempotency_key(call, "conv-a")
    assert idempotency_key(call, "conv-a") != idempotency_key(call, "conv-b")

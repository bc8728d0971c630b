"""An OpenAI Agents SDK agent run by `/sayso` (bot.adapters.openai_agents.agent) against the
fake model server: its tool approvals are the run's cards (no Edit: the SDK has none), a click
on a freshly started bot continues it from the RunState saved in the database, a rejection's
reason reaches the model, and a thread reply continues the conversation."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from bot.adapters import as_agent
from bot.adapters.openai_agents import OpenAIAgentsAgent
from bot.agent import Agent as SaysoAgent
from bot.testing import chat_completion
from tests.e2e.flows import wait_answer
from tests.e2e.harness import Harness, has_button
from tests.helpers.views import filled_views


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    set_tracing_disabled(True)  # traces would go to OpenAI's servers


class Scaler:
    """An SDK agent on the fake model that asks to scale `api`, then says what the tool
    returned; it keeps what it ran (a new instance stands for a new process)."""

    ids = itertools.count(1)  # call ids unique across the test's processes, as a provider's

    def __init__(self, model_url: str) -> None:
        self.ran: list[tuple[str, int]] = []

        @function_tool(needs_approval=True)
        def scale(service: str, replicas: int = 1) -> str:
            """Scale a service."""
            self.ran.append((service, replicas))
            return f"{service} x{replicas}"

        model = OpenAIChatCompletionsModel(
            "fake-model", AsyncOpenAI(base_url=model_url, api_key="test", max_retries=0)
        )
        self.agent = Agent(name="Scaler", instructions="Scale.", model=model, tools=[scale])

    def sayso_agent(self) -> OpenAIAgentsAgent:
        return OpenAIAgentsAgent(self.agent, "scaler", approvers=["U_APPROVER"])


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """The model: the tool's result said back; a request to scale, a call; else an echo."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return chat_completion(text=f"tool said: {last['content']}", request=body)
    if "scale" not in str(last.get("content")):
        return chat_completion(text=f"you said: {last.get('content')}", request=body)
    call = {
        "id": f"call_{next(Scaler.ids)}",
        "name": "scale",
        "arguments": {"service": "api", "replicas": 2},
    }
    return chat_completion(tool_calls=[call], request=body)


async def start(h: Harness, scaler: Scaler) -> dict[str, Any]:
    h.model.responder = respond
    await h.stop_bot()
    await h.start_bot([scaler.sayso_agent()])
    await h.sandbox.slash_command("U_REQUESTER", "scaler scale api to 2")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=20)
    return h.cards()[0]


async def restart(h: Harness) -> Scaler:
    """A fresh bot and a fresh agent object: what continues the run is in the database."""
    fresh = Scaler(h.model.base_url)
    await h.stop_bot()
    await h.start_bot([fresh.sayso_agent()])
    return fresh


async def test_approved_on_a_fresh_bot_the_tool_runs_once(harness: Harness) -> None:
    h = harness
    first = Scaler(h.model.base_url)
    card = await start(h, first)
    assert has_button(card, "approve") and has_button(card, "reject")
    assert not has_button(card, "edit")  # the SDK cannot run a call with other arguments
    assert "scale" in str(card["blocks"])
    fresh = await restart(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "tool said: api x2")
    await h.idle()
    assert first.ran == [] and fresh.ran == [("api", 2)]
    assert [r.status for r in await h.bot.store.runs.list()] == ["completed"]


async def test_rejected_on_a_fresh_bot_the_model_reads_the_reason(harness: Harness) -> None:
    h = harness
    first = Scaler(h.model.base_url)
    card = await start(h, first)
    fresh = await restart(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "freeze until Monday"})
    await wait_answer(h, "tool said: freeze until Monday")
    await h.idle()
    assert first.ran == [] and fresh.ran == []
    tool_messages = [m for m in h.model.last_request["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["freeze until Monday"]


async def test_a_thread_reply_continues_the_conversation(harness: Harness) -> None:
    h = harness
    scaler = Scaler(h.model.base_url)
    card = await start(h, scaler)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "tool said: api x2")
    await h.idle()
    await h.sandbox.post_message("U_REQUESTER", "and the workers?", thread_ts=h.root()["ts"])
    await wait_answer(h, "you said: and the workers?")
    seen = [m.get("content") for m in h.model.last_request["messages"]]
    assert "scale api to 2" in seen and "tool said: api x2" in seen  # earlier turns
    assert seen[-1] == "and the workers?"
    assert scaler.ran == [("api", 2)]


def test_sayso_agents_may_name_the_sdk_agent_itself() -> None:
    agent = as_agent(Scaler("http://127.0.0.1:1/v1").agent)
    assert isinstance(agent, SaysoAgent) and agent.id == "scaler"
    assert agent.tools["scale"].allowed_decisions == ("approve", "reject")

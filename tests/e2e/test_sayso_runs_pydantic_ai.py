"""A Pydantic AI agent run by `/sayso` (bot.adapters.pydantic_ai.agent): its deferred
approvals are the run's cards, a click on a freshly started bot continues it from the
database, a rejection's reason reaches the model, and a thread reply continues the
conversation."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.adapters import as_agent
from bot.adapters.pydantic_ai import PydanticAIAgent
from bot.agent import Agent as SaysoAgent
from tests.e2e.flows import wait_answer
from tests.e2e.harness import Harness, has_button
from tests.helpers.views import filled_views


class Scaler:
    """A Pydantic AI agent that asks to scale `api`, then says what the tool returned; it
    keeps what it ran and the prompts it saw (a new instance stands for a new process)."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, int]] = []
        self.prompts: list[list[str]] = []
        self.agent: Agent[None, str | DeferredToolRequests] = Agent(
            FunctionModel(self.model), output_type=[str, DeferredToolRequests], name="Scaler"
        )

        @self.agent.tool_plain(requires_approval=True)
        def scale(service: str, replicas: int = 1) -> str:
            """Scale a service."""
            self.ran.append((service, replicas))
            return f"{service} x{replicas}"

    def model(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.prompts.append(
            [
                str(p.content)
                for m in messages
                for p in m.parts
                if isinstance(p, UserPromptPart | TextPart)
            ]
        )
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if isinstance(last, ModelRequest) and returns:
            return ModelResponse(parts=[TextPart(f"tool said: {returns[0].content}")])
        asked = str(last.parts[-1].content) if isinstance(last, ModelRequest) else ""
        if "scale" not in asked:
            return ModelResponse(parts=[TextPart(f"you said: {asked}")])
        call_id = f"call-{len(self.prompts)}"
        args = {"service": "api", "replicas": 2}
        return ModelResponse(parts=[ToolCallPart("scale", args, tool_call_id=call_id)])

    def sayso_agent(self) -> PydanticAIAgent:
        return PydanticAIAgent(self.agent, "scaler", approvers=["U_APPROVER"])


async def start(h: Harness, scaler: Scaler) -> dict[str, Any]:
    await h.stop_bot()
    await h.start_bot([scaler.sayso_agent()])
    await h.sandbox.slash_command("U_REQUESTER", "scaler scale api to 2")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    return h.cards()[0]


async def restart(h: Harness) -> Scaler:
    """A fresh bot and a fresh agent object: what continues the run is in the database."""
    fresh = Scaler()
    await h.stop_bot()
    await h.start_bot([fresh.sayso_agent()])
    return fresh


async def test_edited_on_a_fresh_bot_the_tool_runs_once_with_the_edit(harness: Harness) -> None:
    h = harness
    first = Scaler()
    card = await start(h, first)
    assert has_button(card, "edit")  # the tool's parameter schema makes the Edit form
    assert "scale" in str(card["blocks"])
    fresh = await restart(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "5"})
    await wait_answer(h, "tool said: api x5")
    await h.idle()
    assert first.ran == [] and fresh.ran == [("api", 5)]
    runs = await h.bot.store.runs.list()
    assert [r.status for r in runs] == ["completed"]


async def test_an_edit_pydantic_ai_refuses_is_not_run(harness: Harness) -> None:
    h = harness
    card = await start(h, Scaler())
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    d = await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "many"})
    assert d.status == 200 and d.body["response_action"] == "errors"
    assert (await h.bot.store.runs.list())[0].status == "waiting_for_human"


async def test_rejected_the_model_reads_the_reason(harness: Harness) -> None:
    h = harness
    scaler = Scaler()
    card = await start(h, scaler)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "freeze until Monday"})
    await wait_answer(h, "tool said: freeze until Monday")
    assert scaler.ran == []


async def test_a_thread_reply_continues_the_conversation(harness: Harness) -> None:
    h = harness
    scaler = Scaler()
    card = await start(h, scaler)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "tool said: api x2")
    await h.idle()
    await h.sandbox.post_message("U_REQUESTER", "and the workers?", thread_ts=h.root()["ts"])
    await wait_answer(h, "you said: and the workers?")
    seen = scaler.prompts[-1]
    assert "scale api to 2" in seen and "tool said: api x2" in seen  # earlier turns
    assert seen[-1] == "and the workers?"
    assert scaler.ran == [("api", 2)]


def test_sayso_agents_may_name_the_pydantic_ai_agent_itself() -> None:
    agent = as_agent(Scaler().agent)
    assert isinstance(agent, SaysoAgent) and agent.id == "scaler"
    assert agent.tools["scale"].allowed_decisions == ("approve", "edit", "reject")


async def test_an_expired_card_denies_the_call(harness: Harness) -> None:
    h = harness
    h.settings_overrides = {"sayso_approval_ttl": "1s"}
    scaler = Scaler()
    card = await start(h, scaler)
    await wait_answer(h, "tool said: ")  # the model reads the denial
    assert scaler.ran == []
    assert "expired" in h.thread_text().lower()
    updated = h.sandbox.message("C_GENERAL", card["ts"])
    assert updated is not None and not has_button(updated, "approve")


async def test_the_requester_cancels_a_pending_framework_run(harness: Harness) -> None:
    h = harness
    scaler = Scaler()
    card = await start(h, scaler)
    d = await h.sandbox.click("U_REQUESTER", "C_GENERAL", h.root()["ts"], "cancel")
    assert d.status == 200
    await h.sandbox.wait_for(lambda sb: "Cancelled by <@U_REQUESTER>" in h.thread_text(), 10)
    await h.idle()
    (run,) = await h.bot.store.runs.list()
    assert run.status == "cancelled"
    updated = h.sandbox.message("C_GENERAL", card["ts"])
    assert updated is not None and not has_button(updated, "approve")
    assert "cancelled" in str(updated["blocks"]).lower()
    assert scaler.ran == []

"""Continuing with wrong or missing decisions is refused with a message naming what is wrong,
and reaches no model.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

import pytest

from bot import (
    Agent,
    AgentHumanReviewRequest,
    AgentToolDecision,
    InMemoryStateAccessor,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import PROD, STAGING, OpsTools


async def test_wrong_decisions_are_refused_with_a_message_naming_the_call(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools
) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    a, b = backend.reply(tool_calls=[("deploy", STAGING), ("deploy", PROD)])
    result = await agent.run("deploy", state=state)
    rid = result.run.id

    with pytest.raises(ValueError, match=f"^Missing approval decision for tool call {b}$"):
        await agent.continue_run(run=result, approvals=[AgentToolDecision(a)])
    with pytest.raises(ValueError, match=r"^Run nope not found$"):
        await agent.continue_run(run_id="nope", state=state, approvals=[AgentToolDecision(a)])
    with pytest.raises(ValueError, match="Unknown tool call call_999"):
        await agent.continue_run(
            run=result, approvals=[AgentToolDecision(a), AgentToolDecision("call_999")]
        )
    with pytest.raises(ValueError, match=f"{a} already has a decision"):
        await agent.continue_run(
            run=result,
            approvals=[AgentToolDecision(a), AgentToolDecision(b)],
            rejections=[AgentToolDecision(a)],
        )
    other = Agent(id="other", model=agent.model_client, tools=ops.all)
    with pytest.raises(ValueError, match="made by agent 'ops'"):
        await other.continue_run(run=result, approvals=[AgentToolDecision(a), AgentToolDecision(b)])
    assert len(backend.requests) == 1  # none of these reached the model

    backend.reply(text="done")
    done = await agent.continue_run(
        run_id=rid, state=state, approvals=[AgentToolDecision(a), AgentToolDecision(b)]
    )
    assert done.run.status == "completed"
    with pytest.raises(ValueError, match=f"Run {rid} is not waiting for human input"):
        await agent.continue_run(run=done, approvals=[AgentToolDecision(a)])


async def test_a_review_pause_needs_human_input_to_continue(
    backend: Backend, make_agent: MakeAgent
) -> None:
    agent = make_agent([], human_review=lambda ctx: AgentHumanReviewRequest("check it"))
    backend.reply(text="draft")
    result = await agent.run("write")
    with pytest.raises(ValueError, match=f"^Run {result.run.id} is waiting for human input$"):
        await agent.continue_run(run=result)

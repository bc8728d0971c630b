"""Human review: a model response pauses for a person, whose input joins the conversation.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

from bot import (
    AgentHumanReviewRequest,
    HumanReviewContext,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import Ledger, OpsTools


async def test_human_review_pauses_and_input_joins_the_conversation(
    backend: Backend, make_agent: MakeAgent
) -> None:
    contexts: list[HumanReviewContext] = []

    def review(ctx: HumanReviewContext) -> AgentHumanReviewRequest | None:
        contexts.append(ctx)
        if ctx.step == 1:
            return AgentHumanReviewRequest("Check the draft", payload={"draft": ctx.output})
        return None

    agent = make_agent([], human_review=review)
    backend.reply(text="Draft: all systems go")
    result = await agent.run("write the status update")
    assert result.run.status == "waiting_for_human"
    pause = result.run.pause
    assert pause is not None and pause.kind == "human_review" and pause.pending_tool_calls == []
    assert pause.review is not None and pause.review.reason == "Check the draft"
    assert pause.review.payload == {"draft": "Draft: all systems go"}
    ctx = contexts[0]
    assert (ctx.run_id, ctx.step, ctx.output) == (result.run.id, 1, "Draft: all systems go")
    assert ctx.response.message.content == "Draft: all systems go"
    assert [m.role for m in ctx.messages] == ["user", "assistant"]

    backend.reply(text="Final: all systems go, no incidents.")
    done = await agent.continue_run(run=result, human_input="Mention there were no incidents.")
    assert done.run.status == "completed"
    assert done.output == "Final: all systems go, no incidents."
    last = backend.messages[-1][-1]
    assert last == {"role": "user", "content": "Mention there were no incidents."}
    assert [c.step for c in contexts] == [1, 2]  # called on every model response


async def test_review_of_a_tool_call_turn(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    def review(ctx: HumanReviewContext) -> AgentHumanReviewRequest | None:
        if ctx.response.message.tool_calls and ctx.step == 1:
            return AgentHumanReviewRequest("Plan check")
        return None

    agent = make_agent(ops.all, human_review=review)
    (s,) = backend.reply(tool_calls=[("get_status", {"service": "api"})])
    result = await agent.run("status?")
    assert result.run.pause is not None and result.run.pause.kind == "human_review"
    assert ledger.calls == []  # nothing ran before the review
    backend.reply(text="api is healthy")
    done = await agent.continue_run(run=result, human_input="Also check the db next time.")
    assert done.run.status == "completed" and ledger.count("get_status") == 1
    roles = [(m["role"], m.get("tool_call_id")) for m in backend.messages[-1][1:]]
    assert roles == [("user", None), ("assistant", None), ("tool", s), ("user", None)]

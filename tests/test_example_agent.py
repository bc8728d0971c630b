"""The bundled `ops` agent shows every feature on its offline script."""

from __future__ import annotations

import pytest

from bot import AgentToolDecision, AgentToolEdit, AgentToolOutput, InMemoryStateAccessor
from bot.agent.models import ScriptedModel
from bot.examples import ops as example


@pytest.fixture
def agent(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(example.ops, "_model", ScriptedModel("ops"))
    example.DEPLOYS.clear()
    return example.ops


async def test_deploy_with_an_edit(agent) -> None:  # type: ignore[no-untyped-def]
    state = InMemoryStateAccessor()
    r = await agent.run("deploy v2 to staging", state=state)
    assert r.run.pause.kind == "tool_approval"
    call = r.run.pause.pending_tool_calls[0].call
    assert call.name == "deploy" and call.arguments == {"environment": "staging", "version": "v2"}
    edit = AgentToolEdit(call.id, {"environment": "staging", "version": "v3"})
    r = await agent.continue_run(run_id=r.run.id, state=state, edits=[edit])
    assert r.run.status == "completed" and "v3" in r.output and "reviewer" in r.output
    assert example.DEPLOYS[0]["version"] == "v3"


async def test_reject_restart_ticket_question_and_review(agent) -> None:  # type: ignore[no-untyped-def]
    r = await agent.run("restart the api")
    call = r.run.pause.pending_tool_calls[0].call
    assert call.name == "restart_service"
    r = await agent.continue_run(run=r, rejections=[AgentToolDecision(call.id, "not now")])
    assert "not now" in r.output

    r = await agent.run("look up ticket 42")
    assert r.run.pause.kind == "external_output"
    p = r.run.pause.pending_tool_calls[0]
    assert p.kind == "manual" and p.call.arguments == {"ticket_id": "42"}
    r = await agent.continue_run(
        run=r, tool_outputs=[AgentToolOutput(p.call.id, {"state": "open"})]
    )
    assert "open" in r.output

    r = await agent.run("help me with something")
    p = r.run.pause.pending_tool_calls[0]
    assert p.kind == "hitl"
    r = await agent.continue_run(run=r, tool_outputs=[AgentToolOutput(p.call.id, "deploy")])
    assert "deploy" in r.output

    r = await agent.run("draft a reply to the refund request")
    assert r.run.pause.kind == "human_review"
    assert "refunded" in r.run.pause.review.payload["draft"]
    r = await agent.continue_run(run=r, human_input="Add an apology.")
    assert r.run.status == "completed" and "Add an apology." in r.output

"""Decisions name call ids: approve, reject, edit, and outputs for manual and hitl calls.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

import pytest

from bot import (
    AgentToolDecision,
    AgentToolEdit,
    AgentToolOutput,
    InMemoryStateAccessor,
    ToolCallDecision,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import PROD, STAGING, Ledger, OpsTools, pending_ids


async def test_decisions_name_call_ids_not_tools(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    a, b = backend.reply(tool_calls=[("deploy", STAGING), ("deploy", PROD)])
    result = await agent.run("deploy v2 everywhere")
    assert pending_ids(result) == [a, b]

    backend.reply(text="Staging done; production was not authorized.")
    done = await agent.continue_run(
        run=result,
        approvals=[AgentToolDecision(a)],
        rejections=[AgentToolDecision(b, "Not authorized")],
    )
    assert done.run.status == "completed"
    assert ledger.args("deploy") == [STAGING]  # the approved call, with the model's arguments
    results = backend.tool_results()
    assert results[a] == {"deployed": "v2", "environment": "staging"}
    assert results[b] == {"error": "Not authorized"}
    system = backend.messages[-1][0]
    assert system["role"] == "system" and "do not retry" in system["content"]


async def test_a_rejection_without_a_reason_gets_the_default(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    (a,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy")
    backend.reply(text="ok, not deploying")
    done = await agent.continue_run(run=result, rejections=[AgentToolDecision(a)])
    assert done.run.status == "completed"
    assert backend.tool_results() == {a: {"error": "Tool call rejected"}}
    assert ledger.count("deploy") == 0


async def test_edit_runs_new_arguments_and_tells_the_model(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    (a,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy v2")
    backend.reply(text="Deployed to staging instead.")
    done = await agent.continue_run(run=result, edits=[AgentToolEdit(a, STAGING)])
    assert done.run.status == "completed"
    assert ledger.args("deploy") == [STAGING]  # what actually ran
    content = backend.tool_results()[a]
    assert "reviewer replaced the arguments" in content["note"]
    assert content["proposed_arguments"] == PROD
    assert content["arguments_used"] == STAGING
    assert content["result"] == {"deployed": "v2", "environment": "staging"}


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"environment": "moon", "version": "v2"}, "environment"),
        ({"environment": "staging"}, "version"),
        ({"environment": "staging", "version": "v2", "force": True}, "force"),
    ],
)
async def test_invalid_edit_names_the_field_and_changes_nothing(
    backend: Backend,
    make_agent: MakeAgent,
    ops: OpsTools,
    ledger: Ledger,
    arguments: dict,
    field: str,
) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    (a,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy v2", state=state)
    before = result.model_dump_json()
    stored_before = (await state.load(result.run.id)).model_dump_json()  # type: ignore[union-attr]

    with pytest.raises(ValueError, match=f"'{field}'"):
        await agent.continue_run(run=result, edits=[AgentToolEdit(a, arguments)])
    with pytest.raises(ValueError, match=f"'{field}'"):
        agent.record(result, ToolCallDecision.edit(a, arguments))

    assert result.model_dump_json() == before
    assert (await state.load(result.run.id)).model_dump_json() == stored_before  # type: ignore[union-attr]
    assert ledger.count("deploy") == 0
    assert len(backend.requests) == 1


async def test_edit_cannot_change_the_tool(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    (a,) = backend.reply(tool_calls=[("deploy", PROD)])
    result = await agent.run("deploy v2")
    with pytest.raises(ValueError, match="cannot change the tool"):
        await agent.continue_run(
            run=result, edits=[AgentToolEdit(a, {"service": "api"}, tool_name="get_status")]
        )
    assert ledger.calls == []


async def test_outputs_answer_manual_and_hitl_calls_and_a_message_is_no_substitute(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools
) -> None:
    agent = make_agent(ops.all)
    ask, ticket = backend.reply(
        tool_calls=[
            ("ask_user", {"question": "Which env?"}),
            ("ticket_lookup", {"ticket_id": "T-9"}),
        ]
    )
    result = await agent.run("help")
    assert result.run.pause is not None and result.run.pause.kind == "external_output"
    with pytest.raises(ValueError, match=f"Missing output for tool call {ask}"):
        await agent.continue_run(run=result, human_input="staging, and the ticket is closed")
    with pytest.raises(ValueError, match="is a hitl call: give its output"):
        await agent.continue_run(run=result, approvals=[AgentToolDecision(ask)])

    backend.reply(text="Thanks")
    done = await agent.continue_run(
        run=result,
        tool_outputs=[
            AgentToolOutput(ask, "staging"),
            AgentToolOutput(ticket, {"status": "shipped"}),
        ],
    )
    assert done.run.status == "completed"
    assert backend.tool_results() == {ask: "staging", ticket: {"status": "shipped"}}

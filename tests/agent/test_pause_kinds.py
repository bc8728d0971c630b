"""Several calls per turn: automatic tools run first, every call that needs a person is
pending, and the pause kind says what they need.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

import pytest

from bot import (
    AgentToolDecision,
    AgentToolOutput,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import PROD, STAGING, Ledger, OpsTools


async def test_auto_tools_run_first_and_every_person_call_is_pending(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    agent = make_agent(ops.all)
    status_id, deploy_id, ask_id = backend.reply(
        tool_calls=[
            ("get_status", {"service": "api"}),
            ("deploy", STAGING),
            ("ask_user", {"question": "Which version?"}),
        ]
    )
    result = await agent.run("deploy v2 to staging", context={"requested_by": "U123"})

    assert result.run.status == "waiting_for_human"
    assert result.run.pause is not None and result.run.pause.kind == "tool_input"
    assert [(p.call.id, p.call.name, p.kind) for p in result.pending_tool_calls] == [
        (deploy_id, "deploy", "approval"),
        (ask_id, "ask_user", "hitl"),
    ]
    assert result.pending_tool_calls[0].call.arguments == STAGING
    assert ledger.calls == [("get_status", {"service": "api"})]  # the automatic tool ran
    assert len(backend.requests) == 1  # no model call while calls are unanswered

    backend.reply(text="Deployed v2 to staging.")
    done = await agent.continue_run(
        run=result,
        approvals=[AgentToolDecision(deploy_id)],
        tool_outputs=[AgentToolOutput(ask_id, "v2 please")],
    )
    assert done.run.status == "completed"
    assert done.output == "Deployed v2 to staging."
    assert ledger.count("get_status") == 1 and ledger.count("deploy") == 1
    results = backend.tool_results()
    assert list(results) == [status_id, deploy_id, ask_id]  # in the order of the calls
    assert results[status_id] == {"service": "api", "healthy": True}
    assert results[deploy_id] == {"deployed": "v2", "environment": "staging"}
    assert results[ask_id] == "v2 please"


@pytest.mark.parametrize(
    ("calls", "kind"),
    [
        ([("deploy", STAGING), ("deploy", PROD)], "tool_approval"),
        (
            [("ask_user", {"question": "?"}), ("ticket_lookup", {"ticket_id": "T-1"})],
            "external_output",
        ),
        ([("deploy", STAGING), ("ticket_lookup", {"ticket_id": "T-1"})], "tool_input"),
    ],
)
async def test_the_pause_kind_follows_what_the_pending_calls_need(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, calls: list, kind: str
) -> None:
    backend.reply(tool_calls=calls)
    result = await make_agent(ops.all).run("go")
    assert result.run.pause is not None and result.run.pause.kind == kind
    assert len(result.pending_tool_calls) == len(calls)

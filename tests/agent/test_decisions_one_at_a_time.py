"""Decisions arrive one at a time (from different processes), the run saved in between.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

from bot import (
    AgentToolOutput,
    InMemoryStateAccessor,
    ToolCallDecision,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import PROD, STAGING, Ledger, OpsTools


async def test_decisions_accumulate_across_saves(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    a, b, t = backend.reply(
        tool_calls=[("deploy", STAGING), ("deploy", PROD), ("ticket_lookup", {"ticket_id": "T-1"})]
    )
    first = await agent.run("deploy", state=state)
    rid = first.run.id

    # Alice clicks approve on the first call (one process) ...
    loaded = await state.load(rid)
    assert loaded is not None
    loaded.record(ToolCallDecision.approve(a, decided_by="U_ALICE"))
    await state.save(loaded)
    # ... Bob edits the second (another process; agent.record validates the edit) ...
    loaded = await state.load(rid)
    assert loaded is not None and loaded.pending_tool_calls[0].decision is not None
    agent.record(loaded, ToolCallDecision.edit(b, {"environment": "staging", "version": "v3"}))
    await state.save(loaded)
    assert ledger.count("deploy") == 0  # recording never runs anything

    # ... and support answers the ticket, which completes the set and continues the run.
    backend.reply(text="done")
    done = await agent.continue_run(
        run_id=rid, state=state, tool_outputs=[AgentToolOutput(t, {"status": "closed"})]
    )
    assert done.run.status == "completed"
    assert ledger.args("deploy") == [STAGING, {"environment": "staging", "version": "v3"}]
    results = backend.tool_results()
    assert results[t] == {"status": "closed"}
    assert results[b]["arguments_used"]["version"] == "v3"
    stored = await state.load(rid)
    assert stored is not None and stored.run.status == "completed"

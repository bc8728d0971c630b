"""Cancelling a paused run: it ends, and nothing pending runs.

Every test runs twice (`backend` is parametrized): over real HTTP against `FakeModelServer`
with the OpenAI provider, and against the scripted model; neither accepts a dangling tool call.
"""

from __future__ import annotations

import pytest

from bot import (
    AgentToolDecision,
    InMemoryStateAccessor,
)
from tests.agent.backends import Backend, MakeAgent
from tests.agent.ops import STAGING, Ledger, OpsTools


async def test_cancel_ends_a_paused_run_and_nothing_pending_runs(
    backend: Backend, make_agent: MakeAgent, ops: OpsTools, ledger: Ledger
) -> None:
    state = InMemoryStateAccessor()
    agent = make_agent(ops.all)
    (d,) = backend.reply(tool_calls=[("deploy", STAGING)])
    result = await agent.run("deploy", state=state)
    cancelled = await agent.cancel(run_id=result.run.id, state=state, reason="Changed my mind")
    assert cancelled.run.status == "cancelled" and cancelled.run.error == "Changed my mind"
    assert cancelled.run.pause is None
    stored = await state.load(result.run.id)
    assert stored is not None and stored.run.status == "cancelled"
    with pytest.raises(ValueError, match="not waiting"):
        await agent.continue_run(
            run_id=result.run.id, state=state, approvals=[AgentToolDecision(d)]
        )
    with pytest.raises(ValueError, match="already ended"):
        await agent.cancel(run=cancelled)
    assert ledger.count("deploy") == 0 and len(backend.requests) == 1

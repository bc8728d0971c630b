"""A real agent run paused into the store, then continued by run id after a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent import Agent, AgentHumanReviewRequest, AgentToolDecision, tool
from bot.agent.models import ScriptedModel, call
from store import LeaseLostError, Store
from tests.storage.store_helpers import StoreFactory, policy

executed: list[dict] = []


@tool(require_approval=True)
def deploy(env: str) -> str:
    """Deploy the service to an environment."""
    executed.append({"env": env})
    return f"deployed to {env}"


def make_agent() -> Agent:
    return Agent(
        id="ops",
        model=ScriptedModel([call("deploy", env="staging"), "done"]),
        tools=[deploy],
    )


async def _start(s: Store, run_id: str = "run-1"):
    lease = await s.runs.create(
        run_id=run_id,
        agent_id="ops",
        requester="U_REQ",
        team_id="T1",
        channel_id="C1",
        thread_ts="1700000000.000100",
        request_text="deploy to staging",
    )
    result = await make_agent().run(
        "deploy to staging", run_id=run_id, state=s.runs.accessor(lease, policy(["U_OPS"]))
    )
    return lease, result


async def test_paused_run_continues_by_id_after_a_restart(make_store: StoreFactory) -> None:
    executed.clear()
    first = await make_store(replica_id="before-restart")
    await first.upgrade()
    lease, paused = await _start(first)
    assert paused.run.status == "waiting_for_human"
    (pending,) = paused.pending_tool_calls
    run = await first.runs.get("run-1")
    assert (run.status, run.pause_kind, run.lease_owner) == (
        "waiting_for_human",
        "tool_approval",
        None,
    )
    (request,) = await first.requests.for_run("run-1")
    assert (request.spec.call_id, request.spec.tool_name, request.spec.arguments) == (
        pending.call.id,
        "deploy",
        {"env": "staging"},
    )
    assert request.policy.approvers == ("U_OPS",) and request.spec.requester == "U_REQ"
    outcome = await first.requests.decide(request.id, actor="U_OPS", status="approved")
    assert outcome.won and outcome.run_ready
    await first.close()
    assert executed == []

    second = await make_store(replica_id="after-restart")
    await second.upgrade()
    assert await second.runs.ready() == ["run-1"]
    lease2 = await second.runs.claim("run-1")
    assert lease2 is not None
    decisions = [
        AgentToolDecision(r.spec.call_id, decided_by=r.state.decided_by)
        for r in await second.requests.current("run-1")
        if r.state.status == "approved"
    ]
    done = await make_agent().continue_run(
        run_id="run-1", state=second.runs.accessor(lease2, policy()), approvals=decisions
    )
    assert done.run.status == "completed" and done.output == "done"
    assert executed == [{"env": "staging"}]
    stored = await second.runs.load_result("run-1")
    assert stored is not None and stored.run.status == "completed"
    run = await second.runs.get("run-1")
    assert run.status == "completed" and run.lease_owner is None
    assert run.version > lease.version
    assert await second.runs.ready() == []


async def test_the_old_holder_cannot_continue_a_run_taken_over(make_store: StoreFactory) -> None:
    executed.clear()
    a = await make_store(replica_id="A")
    await a.upgrade()
    _, _ = await _start(a)
    (request,) = await a.requests.for_run("run-1")
    await a.requests.decide(request.id, actor="U_OPS", status="approved")
    lease_a = await a.runs.claim("run-1")
    b = await make_store(replica_id="B", lease_seconds=30)
    # A's lease lapses (simulated: A stalls), B takes the run over and finishes it.
    async with a.db.write() as conn:
        from sqlalchemy import text

        await conn.execute(text("UPDATE runs SET lease_expires_at = created_at"))
    lease_b = await b.runs.claim("run-1")
    assert lease_b is not None
    approvals = [AgentToolDecision(request.spec.call_id)]
    with pytest.raises(LeaseLostError):  # A's first save, before the tool body, is refused
        await make_agent().continue_run(
            run_id="run-1", state=a.runs.accessor(lease_a, policy()), approvals=approvals
        )
    assert executed == []
    done = await make_agent().continue_run(
        run_id="run-1", state=b.runs.accessor(lease_b, policy()), approvals=approvals
    )
    assert done.run.status == "completed" and executed == [{"env": "staging"}]


async def test_human_review_pause_round_trip(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'review.db'}"

    def review(ctx):
        if ctx.step == 1:
            return AgentHumanReviewRequest(reason="Is this answer right?", payload={"draft": 1})
        return None

    agent = Agent(
        id="ops", model=ScriptedModel(["draft answer", "final answer"]), human_review=review
    )
    s = Store(url)
    await s.upgrade()
    lease = await s.runs.create(
        run_id="rv",
        agent_id="ops",
        requester="U1",
        team_id=None,
        channel_id="C1",
        thread_ts=None,
        request_text="answer",
    )
    paused = await agent.run("answer", run_id="rv", state=s.runs.accessor(lease, policy()))
    assert paused.run.pause.kind == "human_review"
    (r,) = await s.requests.current("rv")
    assert r.spec.kind == "review" and r.spec.arguments == {
        "reason": "Is this answer right?",
        "payload": {"draft": 1},
    }
    out = await s.requests.decide(r.id, actor="U2", status="answered", output="make it shorter")
    assert out.run_ready
    await s.close()

    s = Store(url)
    lease = await s.runs.claim("rv")
    done = await agent.continue_run(
        run_id="rv", state=s.runs.accessor(lease, policy()), human_input=out.request.state.output
    )
    assert done.run.status == "completed" and done.output == "final answer"
    assert (await s.runs.get("rv")).status == "completed"
    await s.close()

"""The store speaks the runtime's vocabulary (kinds, statuses, outcomes), and an edit's reason
is kept: on the request, in the audit trail, and in the saved run the model continues from."""

from __future__ import annotations

from typing import get_args

import pytest

from bot.agent import Agent, AgentToolEdit, tool
from bot.agent.models import ScriptedModel, call
from bot.agent.vocabulary import (
    DECIDED_STATUSES,
    PauseKind,
    RequestKind,
    RequestStatus,
    RunStatus,
)
from store import Store
from tests.storage.store_helpers import paused_run, policy


async def test_records_hold_vocabulary_values(store: Store) -> None:
    await paused_run(store, "r1", calls=("call_1", "call_2"))
    run = await store.runs.get("r1")
    assert run is not None
    assert run.status in get_args(RunStatus) and run.pause_kind in get_args(PauseKind)
    first, second = await store.requests.for_run("r1")
    assert {first.spec.kind, second.spec.kind} <= set(get_args(RequestKind))
    await store.requests.decide(first.id, actor="U2", status="approved")
    first, second = await store.requests.for_run("r1")
    assert (first.state.status, second.state.status) == ("approved", "pending")
    assert {first.state.status, second.state.status} <= set(get_args(RequestStatus))


async def test_deciding_with_a_status_that_is_no_outcome_is_refused(store: Store) -> None:
    await paused_run(store, "r1")
    (r,) = await store.requests.for_run("r1")
    with pytest.raises(ValueError, match="Unknown decision 'pending'") as refused:
        await store.requests.decide(r.id, actor="U2", status="pending")  # type: ignore[arg-type]
    assert all(outcome in str(refused.value) for outcome in DECIDED_STATUSES)
    (r,) = await store.requests.for_run("r1")
    assert r.pending and await store.audit.trail("r1") == []


async def test_an_edit_reason_is_kept_on_the_request_and_in_the_audit(store: Store) -> None:
    await paused_run(store, "r1")
    (r,) = await store.requests.for_run("r1")
    await store.requests.decide(
        r.id,
        actor="U2",
        status="edited",
        edited_arguments={"env": "prod"},
        reason='prod is "ready"',
    )
    (decided,) = await store.requests.for_run("r1")
    assert (decided.state.status, decided.state.reason) == ("edited", 'prod is "ready"')
    (event,) = await store.audit.trail("r1")
    assert event.outcome == "won"
    assert event.detail == 'wanted=edited reason="prod is \\"ready\\""'


async def test_a_losing_attempt_is_audited_without_its_reason(store: Store) -> None:
    await paused_run(store, "r1")
    (r,) = await store.requests.for_run("r1")
    await store.requests.decide(r.id, actor="U2", status="approved")
    await store.requests.decide(r.id, actor="U3", status="rejected", reason="too late")
    won, lost = await store.audit.trail("r1")
    assert won.detail == "wanted=approved"
    assert lost.detail == "wanted=rejected status=approved decided_by=U2"


ran: list[str] = []


@tool(require_approval=True)
def deploy(env: str) -> str:
    """Deploy the service to an environment."""
    ran.append(env)
    return f"deployed to {env}"


async def test_an_edit_reason_is_saved_with_the_run_and_reaches_the_model(store: Store) -> None:
    ran.clear()
    seen: list[str] = []

    def script(messages: list, tools: list) -> object:
        if messages[-1].role == "tool":
            seen.append(messages[-1].content or "")
            return "done"
        return call("deploy", env="prod")

    agent = Agent(id="ops", model=ScriptedModel(script), tools=[deploy])
    lease = await store.runs.create(
        run_id="r1",
        agent_id="ops",
        requester="U_REQ",
        team_id="T1",
        channel_id="C1",
        thread_ts="1700000000.000100",
        request_text="deploy to prod",
    )
    paused = await agent.run(
        "deploy to prod", run_id="r1", state=store.runs.accessor(lease, policy())
    )
    (pending,) = paused.pending_tool_calls
    paused.record(AgentToolEdit(pending.call.id, {"env": "staging"}, reason="prod is frozen"))

    lease = await store.runs.claim("r1")
    assert lease is not None
    await store.runs.accessor(lease, policy()).save(paused)  # a waiting run's save frees the lease
    saved = await store.runs.load_result("r1")
    assert saved is not None
    decision = saved.pending_tool_calls[0].decision
    assert decision is not None and decision.reason == "prod is frozen"

    lease = await store.runs.claim("r1")  # later, perhaps in another replica
    assert lease is not None
    done = await agent.continue_run(run_id="r1", state=store.runs.accessor(lease, policy()))
    assert done.run.status == "completed" and ran == ["staging"]
    assert '"reason": "prod is frozen"' in seen[0]

"""Approval requests: created from pauses, decided once, expired, listed in inboxes."""

from __future__ import annotations

from datetime import timedelta

from bot.agent.messages import ToolCall
from bot.agent.state import HumanReview, Pause, PendingToolCall, Run, RunResult
from bot.agent.util import utcnow
from store import Store
from tests.storage.store_helpers import paused_run, policy


def make_pause(**fields: object) -> Pause:
    """A Pause; `seq` (the pause's number in its run) only where the runtime has it."""
    if "seq" not in Pause.model_fields:
        fields.pop("seq", None)
    return Pause(**fields)  # type: ignore[arg-type]


def _paused(run_id: str, pending: list[PendingToolCall], step: int = 1, **pause: object):
    kind = pause.pop("kind", "tool_approval")
    return RunResult(
        run=Run(
            id=run_id,
            agent_id="ops",
            model="scripted:list",
            status="waiting_for_human",
            step=step,
            pause=make_pause(kind=kind, step=step, pending_tool_calls=pending, **pause),
        )
    )


async def test_a_pause_makes_one_pending_request_per_call(store: Store) -> None:
    await paused_run(store, "r1", calls=("c1", "c2"), approvers=["U2", "S_OPS"])
    run = await store.runs.get("r1")
    assert run.status == "waiting_for_human" and run.pause_kind == "tool_approval"
    assert run.lease_owner is None  # a paused run is nobody's
    reqs = await store.requests.for_run("r1")
    assert [r.spec.call_id for r in reqs] == ["c1", "c2"]
    r = reqs[0]
    assert (r.state.status, r.spec.kind, r.spec.tool_name, r.spec.arguments) == (
        "pending",
        "approval",
        "deploy",
        {"env": "staging"},
    )
    assert r.policy.approvers == ("S_OPS", "U2") and not r.policy.anyone
    assert (r.spec.requester, r.state.channel_id, r.spec.step, r.state.interrupted) == (
        "U_REQ",
        "C1",
        1,
        False,
    )
    assert r.policy.expires_at > utcnow() and len(r.id) == 32
    assert await store.requests.get(r.id) == r
    assert await store.requests.current("r1") == reqs
    assert await store.requests.for_run("r1", step=2) == []
    await store.requests.set_message(r.id, "C1", "1700000000.000300")
    assert (await store.requests.get(r.id)).state.message_ts == "1700000000.000300"


async def test_saving_the_same_pause_again_adds_no_requests(store: Store) -> None:
    lease = await store.runs.create(
        run_id="r1",
        agent_id="ops",
        requester="U1",
        team_id=None,
        channel_id="C1",
        thread_ts=None,
        request_text="x",
    )
    pending = [PendingToolCall(call=ToolCall(id="c1", name="deploy"), kind="approval")]
    await store.runs.accessor(lease, policy()).save(_paused("r1", pending))
    again = await store.runs.claim("r1")
    await store.runs.accessor(again, policy()).save(_paused("r1", pending))
    reqs = await store.requests.for_run("r1")
    assert len(reqs) == 1 and reqs[0].policy.anyone and reqs[0].policy.approvers == ()


async def test_review_pause_and_manual_calls(store: Store) -> None:
    lease = await store.runs.create(
        run_id="r1",
        agent_id="ops",
        requester="U1",
        team_id=None,
        channel_id="C1",
        thread_ts=None,
        request_text="x",
    )
    review = _paused(
        "r1",
        [],
        step=3,
        kind="human_review",
        review=HumanReview(reason="check the plan", payload={"n": 1}),
    )
    seen: list[object] = []

    def pol(result: RunResult, pending: PendingToolCall | None):
        seen.append(pending)
        return policy(["U9"])(result, pending)

    await store.runs.accessor(lease, pol).save(review)
    assert seen == [None]
    (r,) = await store.requests.for_run("r1")
    assert (r.spec.kind, r.spec.call_id, r.spec.tool_name) == ("review", "review:3", "human_review")
    assert r.spec.arguments == {"reason": "check the plan", "payload": {"n": 1}}
    out = await store.requests.decide(r.id, actor="U9", status="answered", output="looks good")
    assert out.won and out.run_ready and out.request.state.output == "looks good"


async def test_interrupted_call_paused_again_gets_a_fresh_request(store: Store) -> None:
    await paused_run(store, "r1", calls=("c1",))
    (first,) = await store.requests.for_run("r1")
    await store.requests.decide(first.id, actor="U2", status="approved")
    lease = await store.runs.claim("r1")
    accessor = store.runs.accessor(lease, policy())
    running = _paused("r1", [])
    running.run.status, running.run.pause = "running", None
    running.run.turn = None
    await accessor.save(running)  # the call started; then the process died
    lease2 = await store.runs.claim("r1")
    assert lease2 is None  # still leased by the dead process until it lapses
    again = [
        PendingToolCall(call=ToolCall(id="c1", name="deploy"), kind="approval", interrupted=True)
    ]
    await accessor.save(_paused("r1", again, seq=2))  # (recovery, here by the same holder)
    reqs = await store.requests.for_run("r1")
    assert [(r.spec.call_id, r.state.status, r.state.interrupted) for r in reqs] == [
        ("c1", "approved", False),
        ("c1", "pending", True),
    ]
    assert reqs[1].spec.pause_seq == reqs[0].spec.pause_seq + 1
    assert [r.id for r in await store.requests.current("r1")] == [reqs[1].id]
    assert "r1" not in await store.runs.ready()


async def test_ending_a_run_cancels_its_pending_requests(store: Store) -> None:
    await paused_run(store, "r1", calls=("c1", "c2"))
    lease = await store.runs.claim("r1")
    result = await store.runs.load_result("r1")
    result.run.status, result.run.pause = "cancelled", None
    await store.runs.accessor(lease, policy()).save(result)
    assert {r.state.status for r in await store.requests.for_run("r1")} == {"cancelled"}
    assert (await store.runs.get("r1")).status == "cancelled"
    assert await store.requests.pending_for("U2") == ([], 0)


async def test_decide_records_the_decision_once(store: Store) -> None:
    await paused_run(store, "r1")
    (r,) = await store.requests.for_run("r1")
    won = await store.requests.decide(
        r.id, actor="U2", status="edited", edited_arguments={"env": "prod"}, reason="bigger"
    )
    assert won.won and won.run_ready and not won.expired
    assert (won.request.state.status, won.request.state.decided_by) == ("edited", "U2")
    assert (
        won.request.state.edited_arguments == {"env": "prod"}
        and won.request.state.reason == "bigger"
    )
    assert won.request.state.decided_at is not None
    lost = await store.requests.decide(r.id, actor="U3", status="rejected")
    assert not lost.won and not lost.expired and not lost.run_ready
    assert (lost.request.state.status, lost.request.state.decided_by) == ("edited", "U2")
    missing = await store.requests.decide("nope", actor="U3", status="approved")
    assert not missing.won and missing.request is None and not missing.found


async def test_decide_after_the_deadline_expires_the_request(store: Store) -> None:
    await paused_run(store, "r1", minutes=1)
    (r,) = await store.requests.for_run("r1")
    late = utcnow() + timedelta(minutes=2)
    out = await store.requests.decide(r.id, actor="U2", status="approved", now=late)
    assert not out.won and out.expired and out.run_ready
    assert (out.request.state.status, out.request.state.decided_by) == ("expired", "system")
    again = await store.requests.decide(r.id, actor="U3", status="approved")
    assert not again.won and again.expired


async def test_expire_due_returns_only_what_it_expired(store: Store) -> None:
    await paused_run(store, "soon", calls=("a", "b"), minutes=1)
    await paused_run(store, "later", minutes=90)
    assert await store.requests.expire_due() == []
    at = utcnow() + timedelta(minutes=2)
    expired = await store.requests.expire_due(now=at)
    assert sorted(r.spec.call_id for r in expired) == ["a", "b"]
    assert all(r.state.status == "expired" and r.state.decided_by == "system" for r in expired)
    assert await store.requests.expire_due(now=at) == []
    assert await store.runs.ready(now=at) == ["soon"]
    assert len(await store.requests.expire_due(now=utcnow() + timedelta(hours=2), limit=10)) == 1


async def test_pending_for_matches_people_groups_and_anyone(store: Store) -> None:
    await paused_run(store, "for_u2", approvers=["U2"])
    await paused_run(store, "for_group", approvers=["S_OPS"])
    await paused_run(store, "anyone", approvers=[])
    await paused_run(store, "no_self", approvers=["U_REQ", "U2"], allow_self_approval=False)
    await paused_run(store, "self_ok", approvers=["U_REQ"])
    await paused_run(store, "expired", approvers=["U2"], minutes=-1)

    def ids(page):
        return [r.spec.run_id for r in page[0]], page[1]

    assert ids(await store.requests.pending_for("U2")) == (["no_self", "anyone", "for_u2"], 3)
    assert ids(await store.requests.pending_for("U2", ["S_OPS"], include_anyone=False)) == (
        ["no_self", "for_group", "for_u2"],
        3,
    )
    # The requester never sees a request they may not decide themselves.
    assert ids(await store.requests.pending_for("U_REQ", include_anyone=False)) == (["self_ok"], 1)
    page, total = await store.requests.pending_for("U2", ["S_OPS"], limit=2)
    assert len(page) == 2 and total == 4
    (r,) = (await store.requests.pending_for("U2", include_anyone=False))[0][-1:]
    await store.requests.decide(r.id, actor="U2", status="approved")
    assert ids(await store.requests.pending_for("U2", include_anyone=False)) == (["no_self"], 1)


async def test_pending_for_keeps_each_request_once(store: Store) -> None:
    await paused_run(store, "r1", approvers=["U2", "S_A", "S_B", "*"])
    page, total = await store.requests.pending_for("U2", ["S_A", "S_B"])
    assert (
        total == 1
        and len(page) == 1
        and page[0].policy.anyone
        and page[0].policy.approvers == ("S_A", "S_B", "U2")
    )


async def test_inbox_total_is_counted_up_to_a_limit(store) -> None:  # type: ignore[no-untyped-def]
    for i in range(4):
        await paused_run(store, f"run{i}", calls=("call_1", "call_2"))
    page, total = await store.requests.pending_for("U_ANY", limit=3)
    assert (len(page), total) == (3, 8)
    page, total = await store.requests.pending_for("U_ANY", limit=3, count_limit=5)
    assert (len(page), total) == (3, 5)


async def test_a_continuation_reads_each_decision_with_the_arguments_hash_it_audited(
    store: Store,
) -> None:
    """`run_and_current` gives, with the pause's requests, the arguments' hash each winning
    decision recorded in the audit trail (what a continuation checks the arguments against),
    in the same read; a request not yet decided, and a losing attempt, have none."""
    from store.records import args_hash

    await paused_run(store, "r9", calls=("c1", "c2", "c3"), approvers=["U2", "S_OPS"])
    first, second, third = await store.requests.current("r9")
    edited = {"env": "production"}
    await store.requests.decide(first.id, actor="U2", status="edited", edited_arguments=edited)
    won = await store.requests.decide(second.id, actor="U2", status="approved")
    assert won.request == await store.requests.get(second.id)  # approvers and all
    lost = await store.requests.decide(second.id, actor="U3", status="rejected")
    assert not lost.won
    run, requests, approved = await store.requests.run_and_current("r9")
    assert run is not None and [r.id for r in requests] == [first.id, second.id, third.id]
    assert approved == {
        first.id: args_hash("deploy", edited),
        second.id: args_hash("deploy", {"env": "staging"}),
    }
    assert approved == {
        e.request_id: e.args_hash
        for e in await store.audit.trail("r9")
        if e.action == "decide" and e.outcome == "won" and e.request_id
    }
    assert await store.requests.run_and_current("nobody") == (None, [], {})


async def test_a_request_is_read_with_its_run_in_one_statement(store: Store) -> None:
    """`with_run` (what a click reads first) gives what `get` and `runs.get` give apart."""
    await paused_run(store, "r10", calls=("c1",), approvers=["U2", "S_OPS"])
    (request,) = await store.requests.current("r10")
    assert await store.requests.with_run(request.id) == (
        await store.requests.get(request.id),
        await store.runs.get("r10"),
    )
    assert await store.requests.with_run("nothing") == (None, None)
